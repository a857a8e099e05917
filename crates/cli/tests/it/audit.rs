//! `--audit`: a run against real etcd passes and its counts match the server; a server that
//! is wrong on purpose (the testkit's keeping null server, told to drop a write or to answer
//! linearizable reads late) fails the run with exit 1, naming the offending request.

use etcdlat_testkit::{Etcd, Misbehave, NullServer};
use serde_json::Value;

use crate::{count, etcdlat, only_run, parse_report};

/// A mix of puts and linearizable reads of the same ten keys from one client, so that every
/// read is sent after the put before it was acknowledged.
const PUT_THEN_READ: &str = r#"
[load]
clients = 1
total = 200

[[mix]]
weight = 1
[mix.op.put]
key-space-size = 10
sequential-keys = true
# The mix's choices follow it: the same order of puts and reads every run.
seed = 1

[[mix]]
weight = 1
[mix.op.range]
key = ""
key-space-size = 10
sequential-keys = true
consistency = "l"
"#;

/// Runs `etcdlat` with `args` and `--json=-`; its exit code, report and stderr.
fn audited(args: &[&str]) -> (i32, Value, String) {
    let out = etcdlat().arg("--json=-").args(args).output().expect("etcdlat runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = parse_report(&out.stdout);
    (out.status.code().unwrap_or(-1), report, stderr)
}

#[tokio::test]
async fn an_audited_put_run_on_etcd_passes_and_matches_the_server() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let endpoints = format!("--endpoints={}", etcd.endpoint());
    let (code, report, stderr) = audited(&[
        &endpoints,
        "--conns=2",
        "--clients=8",
        "--audit",
        "put",
        "--total=400",
        "--key-space-size=50",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let run = only_run(&report);
    let audit = &run["audit"];
    assert_eq!(count(audit, "/writes"), 400, "{audit:#}");
    assert_eq!((count(audit, "/audited"), count(audit, "/issued")), (400, 400));
    assert_eq!(count(audit, "/lost") + count(audit, "/order_violations"), 0, "{audit:#}");
    assert_eq!(count(audit, "/puts_read_at_revision"), 400);
    assert_eq!(count(audit, "/keys_read_back") as i64, etcd.key_count().await);
    let after = etcd.revision().await;
    assert_eq!(after - before, 400, "one revision per put");
    assert_eq!(audit["first_revision"].as_i64(), Some(before + 1));
    assert_eq!(audit["last_revision"].as_i64(), Some(after));
}

#[test]
fn a_dropped_write_exits_1_naming_it() {
    let server = NullServer::keeping(Misbehave::DropPut(30));
    let endpoints = format!("--endpoints={}", server.endpoint());
    let (code, report, stderr) = audited(&[
        &endpoints,
        "--audit",
        "put",
        "--total=100",
        "--key-space-size=100",
        "--sequential-keys",
    ]);
    assert_eq!(code, 1, "{stderr}");
    let audit = &only_run(&report)["audit"];
    assert_eq!(count(audit, "/lost"), 1, "{audit:#}");
    let v = &audit["violations"][0];
    assert_eq!(v["check"], "lost-write");
    // The 30th put: key 29, revision 31 (the store starts at revision 1).
    assert_eq!((v["key"].as_u64(), v["revision"].as_i64()), (Some(29), Some(31)), "{v:#}");
    assert!(
        stderr.contains("lost-write: put of key #29 answered at revision 31 by null"),
        "{stderr}"
    );
}

#[test]
fn a_stale_linearizable_read_exits_1_and_a_faithful_server_passes() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("mix.toml");
    std::fs::write(&scenario, PUT_THEN_READ).unwrap();
    let scenario = scenario.to_str().unwrap();

    let server = NullServer::keeping(Misbehave::StaleReads);
    let endpoints = format!("--endpoints={}", server.endpoint());
    let (code, report, stderr) = audited(&[&endpoints, "--audit", "run", scenario]);
    assert_eq!(code, 1, "{stderr}");
    let audit = &only_run(&report)["audit"];
    // Every read came after a put; the one before the first put, if any, saw nothing newer.
    assert!(count(audit, "/stale_reads") >= count(audit, "/linearizable_reads") - 1, "{audit:#}");
    assert_eq!(audit["violations"][0]["check"], "stale-read");
    assert!(stderr.contains("stale-read: range of key #"), "{stderr}");

    // The same run against a server that keeps its word.
    let server = NullServer::keeping(Misbehave::Never);
    let endpoints = format!("--endpoints={}", server.endpoint());
    let (code, report, stderr) = audited(&[&endpoints, "--audit", "run", scenario]);
    assert_eq!(code, 0, "{stderr}");
    let audit = &only_run(&report)["audit"];
    assert_eq!(count(audit, "/stale_reads"), 0, "{audit:#}");
    assert!(count(audit, "/linearizable_reads") > 50, "{audit:#}");
}
