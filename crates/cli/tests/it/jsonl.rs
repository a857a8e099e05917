//! `--jsonl`: a run streamed as JSON lines, one per interval as it ends and the summary last,
//! to a file or to standard output while the run is still going.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdlat_testkit::Etcd;
use serde_json::Value;

use crate::{count, etcdlat, only_run, read_report};

/// The lines of a `--jsonl` stream, each parsed.
fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn intervals_add_up_to_the_summary_and_the_report() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (lines, json) = (dir.path().join("live/run.jsonl"), dir.path().join("r.json"));
    etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["put", "--duration=3s", "--rate=200", "--clients=4", "--key-space-size=1000"])
        .arg("--jsonl")
        .arg(&lines)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();

    let lines = parse_lines(&std::fs::read_to_string(&lines).unwrap());
    let (summary, intervals) = lines.split_last().expect("lines");
    assert_eq!(summary["type"], "summary", "the summary is last: {summary}");
    assert!(intervals.len() >= 3, "{} interval lines", intervals.len());
    assert!(intervals.iter().all(|l| l["type"] == "interval" && l["run"] == "put"), "{lines:?}");
    // Contiguous, in order, from the start of measurement.
    assert_eq!(intervals[0]["start_s"].as_f64(), Some(0.0));
    for pair in intervals.windows(2) {
        assert_eq!(pair[0]["end_s"], pair[1]["start_s"], "{pair:?}");
    }
    let in_intervals: u64 = intervals.iter().map(|l| count(l, "/ops/put/count")).sum();
    let ok = count(summary, "/ops/put/count");
    assert_eq!(in_intervals, ok, "the intervals add up to the summary");
    let report = read_report(&json);
    let run = only_run(&report);
    assert_eq!(ok, count(run, "/ops/put/ok"), "and to the JSON report");
    assert!(ok > 0);
    assert_eq!(count(summary, "/ops/put/errors"), count(run, "/ops/put/errors_total"));
    for l in intervals.iter().filter(|l| count(l, "/ops/put/count") > 0) {
        let put = &l["ops"]["put"];
        assert!(count(put, "/p50_us") <= count(put, "/p99_us"), "{l}");
        assert!(count(put, "/p99_us") <= count(put, "/max_us"), "{l}");
        assert!(put["throughput"].as_f64().is_some_and(|t| t > 0.0), "{l}");
    }
    let last_end = intervals.last().unwrap()["end_s"].as_f64().unwrap();
    assert_eq!(Some(last_end), summary["end_s"].as_f64(), "the last interval ends with the run");
}

#[tokio::test]
async fn lines_reach_standard_output_while_the_run_goes() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let started = Instant::now();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["put", "--duration=4s", "--rate=100", "--jsonl", "-"])
        .env_remove("ETCDLAT_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let after = started.elapsed();
    assert!(after < Duration::from_millis(2_500), "the first line came {after:?} after the start");
    assert!(child.try_wait().unwrap().is_none(), "the run is still going");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["type"], "interval", "{first}");

    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    // Nothing but the lines on standard output: no text report.
    let lines = parse_lines(&rest);
    let summary = lines.last().expect("a summary");
    assert_eq!(summary["type"], "summary", "{summary}");
    let streamed: u64 = std::iter::once(&first)
        .chain(&lines[..lines.len() - 1])
        .map(|l| count(l, "/ops/put/count"))
        .sum();
    assert_eq!(streamed, count(summary, "/ops/put/count"));
}
