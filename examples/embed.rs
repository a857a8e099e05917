//! Embedding etcdlat in a test suite: start a throwaway etcd, put it under load, assert on
//! the report, and show the effect on the server.
//!
//! ```text
//! cargo run --release --example embed            # etcd from PATH, or ETCD_BIN
//! cargo run --release --example embed -- 127.0.0.1:2379   # or against your own cluster
//! ```

use std::time::Duration;

use etcdlat::core::{OpKind, Scenario};
use etcdlat::driver::{Driver, LocalCluster};
use etcdlat::render::{self, TextOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A test suite would use its own cluster; without one, start a throwaway etcd.
    let endpoint = std::env::args().nth(1);
    let mut local = None;
    let builder = match endpoint {
        Some(ep) => Driver::builder().endpoints([ep]),
        None => {
            let bin = std::env::var_os("ETCD_BIN").unwrap_or_else(|| "etcd".into());
            let cluster = LocalCluster::options().etcd_bin(bin).start().await?;
            let b = Driver::builder().local_cluster(&cluster);
            local = Some(cluster);
            b
        }
    };
    let driver = builder.conns(8).connect().await?;

    let scenario = Scenario::from_toml_str(
        r#"
        name = "embedded-put"
        [load]
        clients = 64
        total = 5000
        [op.put]
        val-size = 256
        key-space-size = 5000
        sequential-keys = true
        "#,
    )?;
    let report = driver.run(&scenario).await?;
    let put = report.op(OpKind::Put);

    // What a test would assert: every request succeeded, and the tail is bounded.
    assert_eq!(put.ok, 5000);
    assert_eq!(put.errors_total, 0);
    assert!(
        put.latency.quantile(0.99) < Duration::from_secs(1),
        "p99 {:?}",
        put.latency.quantile(0.99)
    );

    print!("{}", render::text(&report, &TextOptions::default()));
    println!("{}", render::markdown(std::slice::from_ref(&report)));
    drop(driver);
    drop(local);
    Ok(())
}
