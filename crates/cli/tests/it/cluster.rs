//! Cluster-aware commands: `[matrix]` scenarios (one run per combination, one markdown row
//! each, and the runs side by side after them in text and markdown), `--target`, and
//! `etcdlat cluster`.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use etcdlat_core::ReportSet;
use etcdlat_core::report::Row;
use etcdlat_render::columns::Columns;
use etcdlat_testkit::{Etcd, eventually};

use crate::{count, etcdlat, parse_report, read_report, text};

#[tokio::test]
async fn a_two_by_two_matrix_is_four_runs_and_four_rows() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.toml"),
        "name = \"m\"\n[load]\ntotal = 50\n[op.put]\nkey-space-size = 50\n\
         [matrix]\n\"load.clients\" = [1, 4]\nop.put.val-size = [16, 1024]\n",
    )
    .unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["run", "m.toml", "--markdown", "t.md", "--json", "-"])
        .assert()
        .success();
    let report = parse_report(&out.get_output().stdout);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let names: Vec<&str> = runs.iter().map(|r| text(r, "/name")).collect();
    assert_eq!(
        names,
        [
            "m [clients=1, val-size=16]",
            "m [clients=1, val-size=1024]",
            "m [clients=4, val-size=16]",
            "m [clients=4, val-size=1024]"
        ]
    );
    assert_eq!(count(&runs[3], "/params/clients"), 4);
    assert_eq!(count(&runs[3], "/params/val_size"), 1024);
    assert_eq!(count(&runs[3], "/ops/put/value_bytes"), 50 * 1024);
    let table = std::fs::read_to_string(dir.path().join("t.md")).unwrap();
    // The guide's table first (the runs side by side follow it).
    let rows: Vec<&str> = table.lines().skip(2).take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 4, "{table}");
    assert!(rows[1].starts_with("| m [clients=1, val-size=1024] |"), "{table}");
}

/// The body of the one box table in `text`: each line's cells between its `│`s, trimmed.
fn box_table(text: &str) -> Vec<Vec<&str>> {
    let tops = text.lines().filter(|l| l.starts_with('┌')).count();
    assert_eq!(tops, 1, "one box table in:\n{text}");
    text.lines()
        .skip_while(|l| !l.starts_with('┌'))
        .take_while(|l| !l.starts_with('└'))
        .filter(|l| l.starts_with('│'))
        .map(|l| l.trim_matches('│').split('│').map(str::trim).collect())
        .collect()
}

#[test]
fn a_matrix_ends_with_its_runs_side_by_side_in_text_and_markdown() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.toml"),
        "name = \"m\"\n[load]\ntotal = 200\n[op.put]\nkey-space-size = 100\n\
         [matrix]\n\"load.clients\" = [1, 4]\n",
    )
    .unwrap();
    // No endpoints: each run on a throwaway etcd of its own.
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["run", "m.toml", "--json", "r.json", "--markdown", "t.md"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let set: ReportSet = serde_json::from_value(read_report(&dir.path().join("r.json"))).unwrap();
    assert_eq!(set.runs.len(), 2);

    // After both runs' reports, one table: the matrix's name, then a column per run.
    let side_by_side = stdout.find("2 runs side by side:").expect("the runs side by side");
    assert!(stdout.find("Run 2 of 2: m [clients=4]").unwrap() < side_by_side, "{stdout}");
    let rows = box_table(&stdout);
    assert_eq!(rows[0], ["m", "clients=1", "clients=4"], "{stdout}");
    assert_eq!(rows.len(), 1 + Row::ALL.len(), "{stdout}");
    for (cells, row) in rows[1..].iter().zip(Row::ALL) {
        assert_eq!(cells.len(), 3, "{stdout}");
        assert_eq!(cells[0], row.label());
        for (cell, run) in cells[1..].iter().zip(&set.runs) {
            assert_eq!(*cell, run.study().cell(row), "{}", row.label());
        }
    }
    for (i, clients) in [1, 4].into_iter().enumerate() {
        let run = &set.runs[i];
        assert_eq!(run.params.clients, clients);
        assert_eq!(rows[2][1 + i], "200", "TOTAL-REQUEST-NUMBER of {}", run.name);
    }

    // The markdown file: the guide's table, then the same table in markdown.
    let table = std::fs::read_to_string(dir.path().join("t.md")).unwrap();
    let (guide, columns) = table.split_once("\n\n").expect("two tables");
    assert_eq!(guide.lines().count(), 2 + 2, "a row per run:\n{table}");
    assert_eq!(columns, Columns::new(&set.runs).markdown());
    assert!(columns.starts_with("| m | clients=1 | clients=4 |\n"), "{table}");
}

#[tokio::test]
async fn target_flag_sends_the_load_to_the_leader() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let leader = etcd.leader_name().await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoints().join(",")))
        .args(["--target=leader", "--clients=4", "put", "--total=100", "--json"])
        .arg(&json)
        .assert()
        .success();
    let report = read_report(&json);
    let members = report["runs"][0]["members"].as_array().unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(text(&members[0], "/name"), leader);
    assert_eq!(count(&members[0], "/ok"), 100);
    // The report names the leader the load went to, and where it was.
    let target = &report["runs"][0]["target"];
    assert_eq!(text(target, "/targeting"), "leader");
    assert_eq!(target["targeted"], serde_json::json!([leader]));
    let url = text(target, "/endpoints/0");
    let stdout = String::from_utf8_lossy(&out.get_output().stdout);
    let line = format!("Target:\tleader (member {leader} at {url})");
    assert!(stdout.contains(&line), "no {line:?} in the text report:\n{stdout}");
    assert_eq!(
        report["runs"][0]["server"].as_array().map(Vec::len),
        Some(3),
        "every member's metrics"
    );
}

#[tokio::test]
async fn cluster_command_serves_until_interrupted() {
    if etcdlat_testkit::skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
        .args(["cluster", "--members", "3"])
        .env("TMPDIR", tmp.path())
        .env_remove("ETCDLAT_LOG")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut endpoints = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(eps) = line.strip_prefix("ETCDCTL_ENDPOINTS=") {
            endpoints = eps.split(',').map(str::to_owned).collect();
            break;
        }
    }
    assert_eq!(endpoints.len(), 3, "three endpoints printed");
    // The cluster works: a put run against it.
    etcdlat()
        .arg(format!("--endpoints={}", endpoints.join(",")))
        .args(["put", "--total=20", "--quiet"])
        .assert()
        .success();
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let exited =
        eventually(Duration::from_secs(10), async || child.try_wait().unwrap(), Option::is_some);
    let status = exited.await.expect("etcdlat cluster did not stop");
    assert!(status.success(), "{status}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the cluster's directory is removed");
    let ports: Vec<&str> = endpoints.iter().filter_map(|e| e.rsplit(':').next()).collect();
    for port in ports {
        let addr = format!("127.0.0.1:{port}");
        assert!(std::net::TcpStream::connect(&addr).is_err(), "nothing listens on {addr} any more");
    }
}
