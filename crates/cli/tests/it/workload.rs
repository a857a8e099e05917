//! The workload commands beyond put and range (`txn-put`, `txn-mixed`, `lease-keepalive`,
//! `stm`, `put --compact-interval --check-hashkv`, `watch`) with etcd benchmark's flags,
//! against real etcd: each report is checked against what the server holds.

use etcdlat_testkit::Etcd;
use serde_json::Value;

use crate::{count, etcdlat, flag, only_run, parse_report};

/// Runs `etcdlat --endpoints=<etcd> args... --json -` and returns its single run.
fn run_json(etcd: &Etcd, args: &[&str]) -> Value {
    let out = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoints().join(",")))
        .args(args)
        .args(["--json", "-"])
        .assert()
        .success();
    let report = parse_report(&out.get_output().stdout);
    only_run(&report).clone()
}

#[tokio::test]
async fn txn_put_writes_txn_ops_keys_per_transaction() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let run = run_json(
        &etcd,
        &["--clients=4", "txn-put", "--txn-ops=5", "--key-space-size=1000", "--total=100"],
    );
    assert_eq!(count(&run, "/ops/txn-put/ok"), 100);
    assert_eq!(count(&run, "/ops/txn-put/keys"), 500);
    assert_eq!(etcd.revision().await - before, 100, "one revision per transaction");
    assert_eq!(etcd.key_count().await, 500);
}

#[tokio::test]
async fn txn_mixed_reports_reads_and_writes_apart() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let run = run_json(
        &etcd,
        &["--clients=4", "txn-mixed", "--rw-ratio=3", "--key-space-size=100", "--total=800"],
    );
    let reads = count(&run, "/ops/txn-read/ok");
    let writes = count(&run, "/ops/txn-write/ok");
    assert_eq!(reads + writes, 800);
    let share = reads as f64 / 800.0;
    assert!((0.69..=0.81).contains(&share), "reads are {share} of the mix, 0.75 asked");
    assert_eq!(count(&run, "/all/ok"), 800);
    assert_eq!(etcd.revision().await - before, writes as i64);
}

#[tokio::test]
async fn lease_keepalive_round_trips() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let run = run_json(&etcd, &["--clients=4", "lease-keepalive", "--total=400"]);
    assert_eq!(count(&run, "/ops/lease-keepalive/ok"), 400);
    let mut client = etcd.client().await;
    let leases = client.leases().await.unwrap();
    assert_eq!(leases.leases().len(), 4, "one lease per client");
}

#[tokio::test]
async fn stm_counts_retries_and_keeps_counters_consistent() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let run = run_json(
        &etcd,
        &[
            "--clients=8",
            "stm",
            "--keys=2",
            "--keys-per-txn=2",
            "--txn-wr-percent=100",
            "--total=150",
            "--isolation=s",
        ],
    );
    assert_eq!(count(&run, "/ops/stm/ok"), 150);
    assert!(count(&run, "/ops/stm/retries") > 0, "8 clients on 2 keys conflict");
    let mut client = etcd.client().await;
    let kvs = client.get("stm/", Some(etcd_client::GetOptions::new().with_prefix())).await.unwrap();
    let sum: u64 =
        kvs.kvs().iter().map(|kv| u64::from_le_bytes(kv.value()[..8].try_into().unwrap())).sum();
    assert_eq!(sum, 300, "every committed transaction added one to both keys");
}

#[tokio::test]
async fn put_with_compaction_and_hashkv_on_three_members() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let run = run_json(
        &etcd,
        &[
            "--clients=8",
            "--conns=3",
            "put",
            "--key-space-size=100",
            "--duration=2s",
            "--compact-interval=500ms",
            "--compact-index-delta=50",
            "--check-hashkv",
        ],
    );
    assert!(count(&run, "/ops/compact/ok") >= 2, "{:#}", run["ops"]);
    assert!(flag(&run, "/hashkv/consistent"));
    assert_eq!(run["hashkv"]["members"].as_object().map(serde_json::Map::len), Some(3));
    assert!(count(&run, "/hashkv/compact_revision") > 0);
}

#[tokio::test]
async fn watch_commands_account_for_every_event() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let run = run_json(
        &etcd,
        &[
            "--conns=2",
            "watch",
            "--streams=4",
            "--watch-per-stream=10",
            "--watched-key-total=4",
            "--key-space-size=4",
            "--sequential-keys",
            "--put-total=40",
        ],
    );
    assert_eq!(count(&run, "/watch/watchers"), 40);
    assert_eq!(count(&run, "/watch/expected"), 400, "each put reaches the 10 watchers of its key");
    assert_eq!(count(&run, "/watch/received"), 400);
    assert_eq!(count(&run, "/watch/missing"), 0);
    assert_eq!(count(&run, "/ops/watch-create/ok"), 40);
    assert_eq!(count(&run, "/ops/watch-event/ok"), 400);
    assert_eq!(etcd.revision().await - before, 40);

    let run = run_json(
        &etcd,
        &[
            "watch-latency",
            "--streams=2",
            "--watchers-per-stream=5",
            "--put-rate=200",
            "--put-total=40",
        ],
    );
    assert_eq!(count(&run, "/watch/received"), 400);
    let acked = run["ops"]["watch-event-acked"]["ok"].as_u64().unwrap_or(0);
    assert_eq!(
        acked + count(&run, "/watch/before_ack"),
        400,
        "every event is either measured from the ack or counted as early"
    );

    let run = run_json(&etcd, &["watch-get", "--watchers=50", "--events=4"]);
    assert_eq!(count(&run, "/watch/received"), 200);
    assert!(count(&run, "/ops/range/ok") > 0);
}
