//! `etcdlat check disk` on the machine's disk and on a tmpfs (figures present and ordered,
//! the verdict line as the JSON's p99 says, the tmpfs passing, no test file left, also after
//! Ctrl-C), bad directories refused in one line; `etcdlat check perf` shortened on a
//! throwaway etcd and against a testkit etcd: every rule reported with its figure, as the
//! JSON report's figures say, the prefix checked before and its keys deleted after.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdlat_testkit::Etcd;
use serde_json::Value;

use crate::{count, etcdlat, only_run, read_report};

/// Small sizes, so that a slow disk takes seconds, not minutes: 456 fdatasyncs.
const SMALL: [&str; 4] = ["--size=1MiB", "--bandwidth-size=8MiB", "--bs", "2300"];

/// The files etcdlat's check leaves in `dir`.
fn test_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".etcdlat-check-disk-"))
        .collect()
}

/// Runs `check disk` on `dir` and checks what it says; returns whether the disk passed.
fn check_disk(dir: &Path) -> (bool, Value) {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("disk.json");
    let run = etcdlat()
        .args(["check", "disk"])
        .arg(dir)
        .args(SMALL)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report = read_report(&json);
    let passed = report["verdict"]["passed"].as_bool().unwrap();
    assert_eq!(run.status.code(), Some(if passed { 0 } else { 1 }), "{stdout}");

    assert_eq!(count(&report, "/write_bytes"), 2300);
    assert_eq!(count(&report, "/writes"), (1u64 << 20).div_ceil(2300), "{report:#}");
    assert_eq!(count(&report, "/fdatasync_us/count"), count(&report, "/writes"));
    let q = |p: &str| count(&report, &format!("/fdatasync_us/{p}"));
    assert!(q("p50") <= q("p99") && q("p99") <= q("p99_9") && q("p99_9") <= q("max"), "{report:#}");
    assert!(q("max") < 10_000_000, "no fdatasync takes 10 s: {report:#}");
    assert_eq!(count(&report, "/verdict/p99_us"), q("p99"));
    assert_eq!(count(&report, "/verdict/limit_us"), 10_000);
    assert_eq!(passed, q("p99") <= 10_000, "the verdict is the p99 against 10 ms");
    assert_eq!(count(&report, "/bandwidth_bytes"), 8 << 20);
    let mbps = report["bandwidth_mb_per_s"].as_f64().unwrap();
    assert!(mbps > 0.0 && mbps.is_finite(), "{report:#}");

    let last = stdout.lines().last().unwrap_or_default();
    let word = if passed { "passes: fdatasync p99 " } else { "fails: fdatasync p99 " };
    let limit = if passed { " ms <= 10 ms" } else { " ms > 10 ms" };
    assert!(last.starts_with(word) && last.ends_with(limit), "verdict line: {last:?}\n{stdout}");
    assert!(stdout.contains("fdatasync p99.9:") && stdout.contains("MB/s"), "{stdout}");
    assert_eq!(test_files(dir), Vec::<String>::new(), "the test files are removed");
    (passed, report)
}

#[test]
fn check_disk_on_the_machines_disk_and_on_a_tmpfs() {
    // The machine's disk: the target dir is on it (a CI's /tmp may be a tmpfs).
    let disk = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (passed, report) = check_disk(disk.path());
    eprintln!("the machine's disk passes: {passed} (p99 {} us)", count(&report, "/verdict/p99_us"));

    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        mounts.lines().any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.contains(" tmpfs ")),
        "this test needs a tmpfs at /dev/shm (findmnt /dev/shm):\n{mounts}"
    );
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let (passed, report) = check_disk(shm.path());
    assert!(passed, "fdatasync on memory is within 10 ms: {report:#}");
    assert!(count(&report, "/verdict/p99_us") < 1_000, "{report:#}");
}

#[test]
fn check_disk_refuses_bad_directories_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let missing = dir.path().join("missing");
    for (path, says) in [
        (missing.as_path(), "No such file or directory"),
        (file.as_path(), "not a directory"),
        // Not even root creates files in sysfs.
        (Path::new("/sys"), "cannot create a test file in it"),
    ] {
        let out = etcdlat().args(["check", "disk"]).arg(path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", path.display());
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.starts_with(&format!("etcdlat: {}: ", path.display())), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = etcdlat().args(["check", "disk", "--bs=0"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = etcdlat().args(["check", "disk", "--size=lots"]).arg(dir.path()).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("etcdlat: --size: "));
    assert_eq!(test_files(dir.path()), Vec::<String>::new());
}

#[test]
fn ctrl_c_stops_check_disk_and_removes_its_file() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // 512 MiB of 2300-byte writes (preallocated, not written): more than the test waits for.
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
        .args(["check", "disk", "--size=512MiB"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while test_files(dir.path()).is_empty() {
        assert!(Instant::now() < deadline, "no test file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Past the check's own probe file, into the measurement.
    std::thread::sleep(Duration::from_millis(300));
    let sent = Command::new("kill").arg("-INT").arg(child.id().to_string()).status().unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "check disk did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(test_files(dir.path()), Vec::<String>::new(), "the test file is removed");
}

/// The rule lines of `check perf`'s output, each checked against the JSON report's figures.
fn check_rules(stdout: &str, run: &Value, exit: Option<i32>) {
    let put = &run["ops"]["put"];
    let us = |p: &str| put["latency_us"][p].as_f64().unwrap();
    let throughput = put["throughput"].as_f64().unwrap();
    let expected = [
        ("put.errors == 0 ", put["errors_total"].as_u64() == Some(0)),
        ("put.throughput > 135 ", throughput > 135.0),
        ("put.max <= 500ms ", us("max") <= 500_000.0),
        ("put.stddev <= 100ms ", us("stddev") <= 100_000.0),
    ];
    let mut all = true;
    for (rule, passed) in expected {
        let line = stdout
            .lines()
            .find(|l| l.contains(rule))
            .unwrap_or_else(|| panic!("no line for {rule}:\n{stdout}"));
        let word = if passed { "PASS: " } else { "FAIL: " };
        assert!(line.starts_with(word) && line.contains("(was "), "{line} ({run:#})");
        all &= passed;
    }
    let verdict = if all { "PASS" } else { "FAIL" };
    assert!(stdout.lines().any(|l| l == verdict), "{stdout}");
    assert_eq!(exit, Some(if all { 0 } else { 1 }), "{stdout}");
    let thresholds: Vec<&str> = run["scenario"]["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        thresholds,
        ["put.errors == 0", "put.throughput > 135", "put.max <= 500ms", "put.stddev <= 100ms"]
    );
    assert_eq!(count(run, "/params/clients"), 50);
    assert_eq!(count(run, "/params/conns"), 50);
    assert!(count(run, "/ops/put/ok") > 0);
}

/// Runs `etcdlat ARGS check perf CHECK --json FILE`, checks its rules against its report,
/// and returns its output and its one run.
fn check_perf(args: &[String], check: &[&str]) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("perf.json");
    let out = etcdlat()
        .args(args)
        .args(["check", "perf"])
        .args(check)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let run = only_run(&read_report(&json)).clone();
    check_rules(&stdout, &run, out.status.code());
    (stdout, run)
}

#[test]
fn check_perf_small_on_a_throwaway_etcd_reports_every_rule() {
    if etcdlat_testkit::skip() {
        return;
    }
    let (stdout, run) = check_perf(&["--local".into()], &["--load=s", "--duration=3s"]);
    let run = &run;
    assert!(stdout.contains("etcdctl check perf --load=s:"), "{stdout}");
    // Three seconds at 150 a second, capped: never more than the rate allows.
    assert!(count(run, "/ops/put/ok") <= 3 * 150 + 50, "{run:#}");
}

#[tokio::test]
async fn check_perf_refuses_a_prefix_with_keys_and_deletes_its_own() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let mut client = etcd.client().await;
    client.put("/checked/x", "v", None).await.unwrap();
    let out = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["check", "perf", "--prefix=/checked/", "--duration=1s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "etcdlat: prefix \"/checked/\" has keys. Delete with 'etcdctl del --prefix /checked/' first"
    );
    assert_eq!(etcd.key_count().await, 1, "nothing written, nothing deleted");

    let before = etcd.revision().await;
    let endpoints = [format!("--endpoints={}", etcd.endpoint())];
    let (stdout, run) =
        check_perf(&endpoints, &["--duration=2s", "--auto-compact", "--auto-defrag"]);
    let ok = count(&run, "/ops/put/ok") as i64;
    // Every put a revision, then one for the delete of all of them.
    assert_eq!(etcd.revision().await - before, ok + 1, "{stdout}");
    assert_eq!(etcd.key_count().await, 1, "the check's keys are deleted, the others kept");
    let prefix = etcd_client::GetOptions::new().with_prefix().with_count_only();
    let left = client.get("/etcdctl-check-perf/", Some(prefix)).await.unwrap().count();
    assert_eq!(left, 0);
    // --auto-compact compacted at the delete: the revision before it is gone.
    let old = etcd_client::GetOptions::new().with_revision(before + 1);
    let e = client.get("/checked/x", Some(old)).await.unwrap_err().to_string();
    assert!(e.contains("compacted"), "{e}");
}
