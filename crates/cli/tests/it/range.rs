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

#[tokio::test]
async fn keys_are_any_bytes_from_flags_and_scenarios() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let mut client = etcd.client().await;
    // Three keys in [0x01, 0xff), and one on either side of it.
    let inside: [&[u8]; 3] = [b"\x01a", b"\x7f", b"\xfe\x80"];
    for key in inside.iter().chain(&[&b"\x00z"[..], b"\xff"]) {
        client.put(key.to_vec(), "v", None).await.unwrap();
    }

    // etcd's capacity test reads "all keys" with `range $'\001' $'\377'`.
    let out = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .arg("range")
        .arg(OsString::from_vec(vec![0x01]))
        .arg(OsString::from_vec(vec![0xff]))
        .args(["--total=10", "--json", "-"])
        .assert()
        .success();
    let report = parse_report(&out.get_output().stdout);
    let run = only_run(&report);
    assert_eq!(count(run, "/ops/range/ok"), 10);
    assert_eq!(count(run, "/ops/range/keys"), 10 * inside.len() as u64);
    // The report prints the bytes escaped, as a scenario would write them.
    assert_eq!(text(run, "/scenario/op/range/key"), "\\x01");
    assert_eq!(text(run, "/scenario/op/range/range-end"), "\\xff");

    // A scenario names the same bytes with \xNN.
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("all.toml");
    std::fs::write(
        &scenario,
        format!(
            "[cluster]\nendpoints = [\"{}\"]\n[load]\ntotal = 10\n[op.range]\nkey = '\\x01'\nrange-end = '\\xff'\n",
            etcd.endpoint()
        ),
    )
    .unwrap();
    let out = etcdlat().arg("run").arg(&scenario).args(["--json", "-"]).assert().success();
    let report = parse_report(&out.get_output().stdout);
    assert_eq!(count(only_run(&report), "/ops/range/keys"), 10 * inside.len() as u64);

    // put's --prefix too: the keys written start with the byte given.
    let before = client
        .get(vec![0xfe, 0x01], Some(etcd_client::GetOptions::new().with_prefix().with_count_only()))
        .await
        .unwrap()
        .count();
    etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .arg("put")
        .arg("--prefix")
        .arg(OsString::from_vec(vec![0xfe, 0x01]))
        .args(["--total=5", "--key-space-size=5", "--sequential-keys"])
        .assert()
        .success();
    let after = client
        .get(vec![0xfe, 0x01], Some(etcd_client::GetOptions::new().with_prefix().with_count_only()))
        .await
        .unwrap()
        .count();
    assert_eq!((before, after), (0, 5));
}
