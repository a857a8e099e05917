//! Puts: the report's counts match what the server stored.

use etcdlat_core::{ErrorCode, OpKind};
use etcdlat_testkit::{Etcd, etcd_version, skip};

use crate::{run_on, scenario};

#[tokio::test]
async fn thousand_puts_move_the_revision_by_a_thousand() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        4,
        "[load]\nclients = 16\ntotal = 1000\n[op.put]\nval-size = 256\nkey-space-size = 1000\nsequential-keys = true\n",
    )
    .await;
    let put = report.op(OpKind::Put);
    assert_eq!(put.ok, 1000);
    assert_eq!(put.errors_total, 0);
    assert_eq!(etcd.revision().await - before, 1000);
    // Sequential keys over a key space of 1000: every key written once.
    assert_eq!(etcd.key_count().await, 1000);
    assert_eq!(put.keys, 1000);
    assert_eq!(put.value_bytes, 256_000);
    assert_eq!(put.latency.count(), 1000);
    assert!(put.throughput > 0.0);
    assert_eq!(put.intervals.iter().map(|i| i.count).sum::<u64>(), 1000);
    assert_eq!(report.target.members, 1);
    // The report names the version of the server it ran against, whichever (.ci/run runs
    // this against every version of .ci/etcd-versions).
    let named = &report.target.etcd_version;
    assert!(
        etcd_version().starts_with(&format!("etcd {named} (")),
        "{named} vs {}",
        etcd_version()
    );
    assert!(report.target.local);
}

#[tokio::test]
async fn default_key_space_writes_one_key_like_etcds_tool() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(1).await;
    let report = driver
        .run(&scenario("[load]\ntotal = 50\n[op.put]\nsequential-keys = true\n"))
        .await
        .unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 50);
    assert_eq!(etcd.key_count().await, 1);
}

#[tokio::test]
async fn one_megabyte_values_round_trip_and_two_megabytes_are_counted_as_invalid() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s = scenario(
        "[load]\nclients = 2\ntotal = 20\n[op.put]\nval-size = \"1MB\"\nkey-space-size = 20\nsequential-keys = true\nprefix = \"big/\"\n",
    );
    let report = driver.run(&s).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 20);
    let mut kv = etcd.client().await.kv_client().max_decoding_message_size(64 << 20);
    let got = kv.get("big/", Some(etcd_client::GetOptions::new().with_prefix())).await.unwrap();
    assert_eq!(got.kvs().len(), 20);
    assert!(got.kvs().iter().all(|kv| kv.value().len() == 1_000_000));

    let before = etcd.revision().await;
    let s = scenario("[load]\nclients = 2\ntotal = 5\n[op.put]\nval-size = \"2MB\"\n");
    let report = driver.run(&s).await.unwrap();
    let put = report.op(OpKind::Put);
    assert_eq!(put.ok, 0);
    assert_eq!(put.errors_of(ErrorCode::InvalidArgument), 5, "{:?}", put.errors);
    assert_eq!(put.errors_total, 5);
    assert_eq!(etcd.revision().await, before);
}
