//! Does nothing at build time. It exists for its build-dependencies, which are feature pins:
//! the tests build x509-parser, whose derive macros turn on syn's `visit`, and a proc-macro
//! crate built with other syn features is another build of everything that uses it (serde,
//! tokio, clap, ...). A build-dependency is the one place a library can name a feature of
//! the crates proc-macros are built with, so that `cargo run -p etcdlat-cli`, `cargo run
//! --example embed` and `cargo test --workspace` share one build of the tree.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
