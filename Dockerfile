# syntax=docker/dockerfile:1
#
# The etcdlat binary in a small image: built with the Rust toolchain (and protoc, which
# etcd-client needs at build time), run on distroless (glibc and libgcc only, no shell,
# a non-root user). Used by examples/kubernetes.
#
#   docker build -t etcdlat .
#   docker run --rm etcdlat --endpoints=10.0.0.1:2379 put --total=1000
#
# The image has no etcd binary: point it at a cluster with --endpoints (or a scenario's
# cluster.endpoints); a throwaway local etcd is not available inside it.

ARG RUST_VERSION=1

FROM rust:${RUST_VERSION}-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends protobuf-compiler libprotobuf-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The registry and target caches survive between builds; the binary is copied out of the
# target cache before the step ends.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p etcdlat-cli \
 && cp target/release/etcdlat /usr/local/bin/etcdlat

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /usr/local/bin/etcdlat /usr/local/bin/etcdlat
USER nonroot
ENTRYPOINT ["/usr/local/bin/etcdlat"]
CMD ["--help"]
