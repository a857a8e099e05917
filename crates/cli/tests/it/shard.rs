//! Distributed runs: `etcdlat run --shard I/N` processes against one real etcd. Three
//! shards started more than a second apart meet at a `--barrier`, start measuring
//! together, and together do exactly what the scenario describes (the server's revision
//! and keys say so); `etcdlat merge` of their reports is the whole, and its percentiles are
//! those of the shards' histograms added together. `--start-at` starts shards at a time; a
//! barrier that not every shard reaches fails, naming who was there, and leaves no key.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use base64::Engine;
use etcdlat_testkit::Etcd;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use serde_json::Value;

use crate::{count, etcdlat, only_run, read_report, text};

/// 3,000 puts from 6 clients on 3 connections over 1,500 keys, each key written twice.
const SCENARIO: &str = r#"
name = "sharded-put"
[load]
conns = 3
clients = 6
total = 3000
[op.put]
val-size = 64
key-space-size = 1500
sequential-keys = true
prefix = "sharded/"
"#;

/// The quantiles of a JSON distribution, by name.
const QUANTILES: [(&str, f64); 11] = [
    ("p10", 0.10),
    ("p25", 0.25),
    ("p50", 0.50),
    ("p75", 0.75),
    ("p90", 0.90),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p99_9", 0.999),
    ("p99_99", 0.9999),
    ("p99_999", 0.99999),
    ("p100", 1.0),
];

/// `etcdlat run SCENARIO ARGS... --quiet` as a child process, killed if the test ends first.
fn spawn(scenario: &Path, args: &[String]) -> tokio::process::Child {
    tokio::process::Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
        .arg("run")
        .arg(scenario)
        .args(args)
        .arg("--quiet")
        .env_remove("ETCDLAT_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starting etcdlat")
}

async fn finish(child: tokio::process::Child) -> Output {
    tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("a shard finishes within 90 s")
        .expect("waiting for a shard")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A histogram written into a report's `hdr`, decoded without etcdlat's own code.
fn decode(hdr: &str) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(hdr).expect("hdr is base64");
    Deserializer::new().deserialize(&mut bytes.as_slice()).expect("hdr is an HdrHistogram V2")
}

/// The recorded (value, count) pairs of a histogram, to compare two bucket for bucket.
fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
}

/// Checks that `merged` (a JSON distribution) is exactly `sum`.
fn assert_is_sum(merged: &Value, sum: &Histogram<u64>, what: &str) {
    assert_eq!(buckets(&decode(text(merged, "/hdr"))), buckets(sum), "{what}: hdr");
    assert_eq!(count(merged, "/count"), sum.len(), "{what}: count");
    assert_eq!(count(merged, "/min"), sum.min(), "{what}: min");
    assert_eq!(count(merged, "/max"), sum.max(), "{what}: max");
    for (name, q) in QUANTILES {
        assert_eq!(
            count(merged, &format!("/{name}")),
            sum.value_at_quantile(q),
            "{what}: {name} of the merged report is that of the shards' histograms added"
        );
    }
}

/// When a run's measurement started, from its report.
fn started_at(run: &Value) -> SystemTime {
    humantime::parse_rfc3339(text(run, "/started_at")).expect("started_at is RFC 3339")
}

fn spread(times: &[SystemTime]) -> Duration {
    let (min, max) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    max.duration_since(*min).unwrap()
}

fn write_scenario(dir: &Path) -> PathBuf {
    let path = dir.join("scenario.toml");
    std::fs::write(&path, SCENARIO).unwrap();
    path
}

#[tokio::test]
async fn three_shards_meet_at_a_barrier_and_merge_into_the_whole() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = write_scenario(dir.path());
    let before = etcd.revision().await;

    // Started 1.5 s apart: without the barrier the last would start measuring 3 s after the
    // first.
    let mut children = Vec::new();
    let mut reports = Vec::new();
    for i in 0..3 {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
        let json = dir.path().join(format!("shard-{i}.json"));
        let args = [
            format!("--endpoints={}", etcd.endpoint()),
            format!("--shard={i}/3"),
            "--barrier=etcdlat-test/barrier".to_owned(),
            "--barrier-timeout=60s".to_owned(),
            format!("--json={}", json.display()),
        ];
        children.push(spawn(&scenario, &args));
        reports.push(json);
    }
    for (i, child) in children.into_iter().enumerate() {
        let out = finish(child).await;
        assert!(out.status.success(), "shard {i} failed: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "shard {i} said: {}", stderr(&out));
    }

    // Each shard ran its third, and its report says so beside the whole scenario.
    let shards: Vec<Value> = reports.iter().map(|p| read_report(p)).collect();
    let runs: Vec<&Value> = shards.iter().map(only_run).collect();
    for run in &runs {
        assert_eq!(count(run, "/ops/put/ok"), 1000);
        assert_eq!(count(run, "/ops/put/errors_total"), 0);
        assert_eq!(count(run, "/params/total"), 1000);
        assert_eq!(count(run, "/params/clients"), 2);
        assert_eq!(count(run, "/params/conns"), 1);
        assert_eq!(count(run, "/scenario/load/total"), 3000, "the report carries the whole");
    }
    let starts: Vec<SystemTime> = runs.iter().map(|r| started_at(r)).collect();
    assert!(
        spread(&starts) < Duration::from_secs(1),
        "the barrier lines the starts up: {:?} apart",
        spread(&starts)
    );

    // Together they did exactly the scenario: 3,000 puts (the revision moved by them, and
    // by each shard's barrier key, put and removed), on 1,500 keys, each written twice: the
    // shards' keys are disjoint and cover the key space.
    let mut client = etcd.client().await;
    let barrier = client
        .get("etcdlat-test/barrier", Some(etcd_client::GetOptions::new().with_prefix()))
        .await
        .unwrap();
    assert_eq!(barrier.count(), 0, "the barrier's keys are removed");
    assert_eq!(etcd.revision().await - before, 3000 + 2 * 3);
    assert_eq!(etcd.key_count().await, 1500);
    let keys = client
        .get("sharded/", Some(etcd_client::GetOptions::new().with_prefix().with_keys_only()))
        .await
        .unwrap();
    assert_eq!(keys.kvs().len(), 1500);
    assert!(
        keys.kvs().iter().all(|kv| kv.version() == 2),
        "every key was written twice, by one shard"
    );

    // The merge is the whole scenario.
    let merged_path = dir.path().join("merged.json");
    let out = etcdlat()
        .arg("merge")
        .args(&reports)
        .arg("--json")
        .arg(&merged_path)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(out.status.success(), "merge failed: {}", stderr(&out));
    let merged_report = read_report(&merged_path);
    let merged = only_run(&merged_report);
    assert_eq!(text(merged, "/name"), "sharded-put");
    assert_eq!(count(merged, "/ops/put/ok"), 3000);
    assert_eq!(count(merged, "/ops/put/errors_total"), 0);
    assert_eq!(count(merged, "/ops/put/keys"), 3000);
    assert_eq!(count(merged, "/params/total"), 3000);
    assert_eq!(count(merged, "/params/clients"), 6);
    assert_eq!(count(merged, "/params/conns"), 3);
    assert_eq!(count(merged, "/scenario/load/clients"), 6);
    let listed = merged["shards"].as_array().expect("the shards are listed");
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|s| count(s, "/ok") == 1000 && count(s, "/clients") == 2));

    // Its percentiles are those of the shards' histograms added together.
    for dist in ["latency_us", "service_time_us"] {
        let mut sum = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for run in &runs {
            sum.add(decode(text(run, &format!("/ops/put/{dist}/hdr")))).unwrap();
        }
        assert_eq!(sum.len(), 3000);
        assert_is_sum(&merged["ops"]["put"][dist], &sum, dist);
    }
}

#[tokio::test]
async fn shards_start_at_a_time() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = write_scenario(dir.path());
    let at = SystemTime::now() + Duration::from_secs(3);
    let at_text = humantime::format_rfc3339_millis(at).to_string();
    let mut children = Vec::new();
    for i in 0..2 {
        let args = [
            format!("--endpoints={}", etcd.endpoint()),
            format!("--shard={i}/2"),
            format!("--start-at={at_text}"),
            "--total=200".to_owned(),
            format!("--json={}", dir.path().join(format!("{i}.json")).display()),
        ];
        children.push(spawn(&scenario, &args));
    }
    let mut starts = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = finish(child).await;
        assert!(out.status.success(), "shard {i} failed: {}", stderr(&out));
        let report = read_report(&dir.path().join(format!("{i}.json")));
        let run = only_run(&report);
        assert_eq!(count(run, "/ops/put/ok"), 100);
        starts.push(started_at(run));
    }
    // Reports carry milliseconds; both started at the time, not before.
    let at_ms = humantime::parse_rfc3339(&at_text).unwrap();
    for s in &starts {
        let after = s.duration_since(at_ms).expect("not before --start-at");
        assert!(after < Duration::from_secs(1), "started {after:?} after --start-at");
    }
}

#[tokio::test]
async fn a_barrier_not_every_shard_reaches_fails_and_leaves_no_key() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = write_scenario(dir.path());
    let args = [
        format!("--endpoints={}", etcd.endpoint()),
        "--shard=1/2".to_owned(),
        "--barrier=lonely/".to_owned(),
        "--barrier-timeout=2s".to_owned(),
    ];
    let out = finish(spawn(&scenario, &args)).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("1 of 2 shards arrived") && err.contains("lonely/0/1"), "{err}");
    assert_eq!(etcd.key_count().await, 0, "its key is removed, and nothing was put");

    // Bad combinations are refused before anything starts.
    let refuse = |args: &[&str], says: &str| {
        let out = etcdlat().arg("run").arg(&scenario).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    };
    let endpoints = format!("--endpoints={}", etcd.endpoint());
    refuse(&["--shard=3/3", &endpoints], "--shard");
    refuse(&["--shard=0/4", &endpoints], "load.conns = 3 cannot be split into 4 shards");
    refuse(&["--shard=0/3"], "--endpoints");
    refuse(&["--barrier=b", &endpoints], "--shard");
    refuse(&["--shard=0/3", "--start-at=soon", &endpoints], "--start-at");
}
