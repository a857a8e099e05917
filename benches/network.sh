#!/usr/bin/env bash
# What the emulated network costs: runs the same put load on a fresh local etcd without
# emulation and with `--client-latency 1ms`, alternately, ROUNDS times each, and prints the
# medians. With emulation every request crosses two delay lines (to the member and back), so
#   added per hop = (p50 with - p50 without - 2 x 1 ms) / 2,
# which includes the extra loopback hop through the proxy. The proxy runs in the etcdlat
# process, so its CPU is the difference of the client's CPU per request.
# Usage: benches/network.sh [ROUNDS] [MEMBERS]   (after cargo build --release -p etcdlat-cli)
set -euo pipefail
rounds=${1:-3}
members=${2:-1}
bin=${ETCDLAT:-target/release/etcdlat}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # name, then etcdlat arguments
  local name=$1
  shift
  "$bin" --local --members "$members" --quiet --json "$out/$name-$i.json" "$@"
}
for i in $(seq 1 "$rounds"); do
  for clients in 1 1000; do
    conns=$((clients == 1 ? 1 : 100))
    total=$((clients == 1 ? 3000 : 50000))
    load=(--conns "$conns" --clients "$clients" put --total "$total" --val-size 256 --key-space-size 10000)
    run "plain-$clients" "${load[@]}"
    run "emulated-$clients" --client-latency 1ms "${load[@]}"
  done
done

python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def runs(name):
    for i in range(1, rounds + 1):
        with open(f"{out}/{name}-{i}.json") as f:
            yield json.load(f)["runs"][0]
def med(name, f):
    return statistics.median(f(r) for r in runs(name))
def lat(q):
    return lambda r: r["ops"]["put"]["latency_us"][q]
def cpu_us(r):
    c = r["client"]
    n = r["ops"]["put"]["ok"] + r["ops"]["put"]["errors_total"]
    return (c["user_cpu_s"] + c["system_cpu_s"]) * 1e6 / n
def qps(r):
    return r["ops"]["put"]["throughput"]
print(f"medians of {rounds} alternating runs each")
print("| clients | p50 plain | p50 emulated | added per hop (p50) | p99 plain | p99 emulated | added per hop (p99) | throughput plain | throughput emulated | client CPU/request plain | emulated |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for c in (1, 1000):
    p, e = f"plain-{c}", f"emulated-{c}"
    p50p, p50e, p99p, p99e = med(p, lat("p50")), med(e, lat("p50")), med(p, lat("p99")), med(e, lat("p99"))
    print(f"| {c} | {p50p} µs | {p50e} µs | {(p50e - p50p - 2000) / 2:.0f} µs | {p99p} µs | {p99e} µs | "
          f"{(p99e - p99p - 2000) / 2:.0f} µs | {med(p, qps):.0f}/s | {med(e, qps):.0f}/s | "
          f"{med(p, cpu_us):.1f} µs | {med(e, cpu_us):.1f} µs |")
EOF
