//! `etcdlat range` against a real etcd holding known keys: the report counts exactly the
//! keys and value bytes the server returns, and reads write nothing.

use etcdlat_testkit::Etcd;
use serde_json::Value;

use crate::{count, etcdlat, only_run, parse_report, text};

/// Keys written under [`PREFIX`].
const KEYS: u64 = 10;
/// Bytes of each value.
const VALUE_BYTES: u64 = 32;
const PREFIX: &str = "pfx/";

/// A server holding [`KEYS`] keys under [`PREFIX`], and two keys just outside it on either
/// side, so that a range that leaks past its bounds reads too many keys.
async fn etcd_with_keys() -> Etcd {
    let etcd = Etcd::start().await;
    let mut client = etcd.client().await;
    let value = "v".repeat(VALUE_BYTES as usize);
    for i in 0..KEYS {
        client.put(format!("{PREFIX}{i}"), value.as_str(), None).await.unwrap();
    }
    // '.' sorts just before '/', '0' just after.
    client.put("pfx.", "outside", None).await.unwrap();
    client.put("pfx0", "outside", None).await.unwrap();
    etcd
}

/// Runs `etcdlat --endpoints=<etcd> range <args> --json -`, checks that the server's
/// revision did not move, and returns the one run of the report.
async fn range(etcd: &Etcd, args: &[&str]) -> Value {
    let before = etcd.revision().await;
    let assert = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .arg("range")
        .args(args)
        .args(["--json", "-"])
        .assert();
    let assert = assert.success();
    // With --json - standard output holds the report and nothing else.
    let report = parse_report(&assert.get_output().stdout);
    assert_eq!(etcd.revision().await, before, "a range run writes nothing");
    only_run(&report).clone()
}

#[tokio::test]
async fn prefix_reads_every_key_under_it() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = etcd_with_keys().await;
    let run = range(&etcd, &[PREFIX, "--prefix", "--total=100", "--consistency=s"]).await;
    assert_eq!(text(&run, "/params/op"), "range");
    assert_eq!(text(&run, "/params/consistency"), "s");
    assert_eq!(count(&run, "/ops/range/ok"), 100);
    assert_eq!(count(&run, "/ops/range/errors_total"), 0);
    assert_eq!(count(&run, "/ops/range/keys"), 100 * KEYS);
    assert_eq!(count(&run, "/ops/range/value_bytes"), 100 * KEYS * VALUE_BYTES);
}

#[tokio::test]
async fn key_and_end_read_the_half_open_range() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = etcd_with_keys().await;
    // [pfx/, pfx0): every key under the prefix, not pfx0 itself.
    let run = range(&etcd, &[PREFIX, "pfx0", "--total=50"]).await;
    assert_eq!(count(&run, "/ops/range/ok"), 50);
    assert_eq!(count(&run, "/ops/range/errors_total"), 0);
    assert_eq!(count(&run, "/ops/range/keys"), 50 * KEYS);
    assert_eq!(count(&run, "/ops/range/value_bytes"), 50 * KEYS * VALUE_BYTES);
}

#[tokio::test]
async fn count_only_counts_keys_without_values() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = etcd_with_keys().await;
    let run = range(&etcd, &[PREFIX, "--prefix", "--count-only", "--total=50"]).await;
    assert_eq!(count(&run, "/ops/range/ok"), 50);
    assert_eq!(count(&run, "/ops/range/errors_total"), 0);
    assert_eq!(count(&run, "/ops/range/keys"), 50 * KEYS);
    assert_eq!(count(&run, "/ops/range/value_bytes"), 0);
}

#[tokio::test]
async fn sequential_keys_read_the_keys_put_wrote_one_per_request() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    // put writes keys 100..150 under "seq/" (the fork's put, then its range).
    let keys = ["--sequential-keys", "--key-starts=100", "--key-space-size=50", "--key-size=8"];
    etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["put", "--prefix=seq/", "--total=50", "--val-size=16"])
        .args(keys)
        .assert()
        .success();
    assert_eq!(etcd.key_count().await, 50);

    // Every request reads one of those keys.
    let run = range(&etcd, &[&["seq/", "--total=50"][..], &keys].concat()).await;
    assert_eq!(count(&run, "/ops/range/ok"), 50);
    assert_eq!(count(&run, "/ops/range/keys"), 50);
    assert_eq!(count(&run, "/ops/range/value_bytes"), 50 * 16);

    // From --key-starts=125, in order: 125..150 were written, 150..175 were not. The key
    // space defaults to --total with --sequential-keys.
    let run = range(&etcd, &["seq/", "--total=50", "--sequential-keys", "--key-starts=125"]).await;
    assert_eq!(count(&run, "/ops/range/ok"), 50);
    assert_eq!(count(&run, "/ops/range/keys"), 25);
}
