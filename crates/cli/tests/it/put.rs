//! `etcdlat put` against a real etcd: what the report counts is what the server holds.

use etcdlat_testkit::Etcd;

use crate::{count, etcdlat, flag, only_run, read_report};

#[tokio::test]
async fn every_put_lands_on_the_server_and_in_the_report() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let perfdash = dir.path().join("perf.json");
    let before = etcd.revision().await;

    let assert = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["--conns=4", "--clients=16", "put", "--total=500", "--val-size=256"])
        .args(["--key-space-size=500", "--sequential-keys", "--json"])
        .arg(&json)
        .arg("--perfdash")
        .arg(&perfdash)
        .assert()
        .success();

    let out = assert.get_output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Summary:") && stdout.contains("Requests/sec:"),
        "text report on stdout:\n{stdout}"
    );
    assert!(
        out.stderr.is_empty(),
        "a clean run prints nothing on stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let report = read_report(&json);
    let run = only_run(&report);
    assert!(!flag(run, "/interrupted"));
    assert_eq!(count(run, "/params/conns"), 4);
    assert_eq!(count(run, "/params/clients"), 16);
    assert!(!flag(run, "/target/local"));
    assert_eq!(run["target"]["endpoints"], serde_json::json!([etcd.endpoint()]));
    let version = run["target"]["etcd_version"].as_str().unwrap_or_default();
    let server = etcdlat_testkit::etcd_version();
    assert!(server.starts_with(&format!("etcd {version} (")), "JSON names {version:?}: {server}");
    assert_eq!(count(run, "/ops/put/ok"), 500);
    assert_eq!(count(run, "/ops/put/errors_total"), 0);
    assert_eq!(count(run, "/ops/put/keys"), 500);
    assert_eq!(count(run, "/ops/put/value_bytes"), 500 * 256);

    assert_eq!(etcd.revision().await - before, 500, "one revision per put");
    assert_eq!(etcd.key_count().await, 500, "500 sequential keys in a key space of 500");

    // etcd's perfdash layout, with the run's percentiles in milliseconds.
    let perf = read_report(&perfdash);
    assert_eq!(perf["version"], "v1");
    let items = perf["dataItems"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{perf:#}");
    assert_eq!(
        (&items[0]["unit"], &items[0]["labels"]["Operation"]),
        (&"ms".into(), &"PUT".into())
    );
    for (field, p) in [("Perc50", "p50"), ("Perc90", "p90"), ("Perc99", "p99")] {
        let ms = items[0]["data"][field].as_f64().unwrap();
        let us = count(run, &format!("/ops/put/latency_us/{p}"));
        assert!(us > 0 && ms == us as f64 / 1e3, "{field} {ms} ms, {p} {us} us");
    }
}

#[tokio::test]
async fn etcd_benchmark_argument_order_works() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;

    // etcd's benchmark tool takes its global flags after the command too.
    let assert = etcdlat()
        .arg("put")
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args([
            "--conns=2",
            "--clients=4",
            "--total=100",
            "--key-space-size=100",
            "--sequential-keys=true",
        ])
        .args(["--json", "-"])
        .assert()
        .success();

    let report = crate::parse_report(&assert.get_output().stdout);
    let run = only_run(&report);
    assert_eq!(count(run, "/params/conns"), 2);
    assert_eq!(count(run, "/params/clients"), 4);
    assert_eq!(count(run, "/ops/put/ok"), 100);
    assert_eq!(count(run, "/ops/put/errors_total"), 0);
    assert_eq!(etcd.revision().await - before, 100);
    assert_eq!(etcd.key_count().await, 100);
}

#[tokio::test]
async fn client_steps_from_the_command_line_are_reported_each_on_its_own() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (json, plots, markdown) =
        (dir.path().join("r.json"), dir.path().join("plots"), dir.path().join("r.md"));
    let before = etcd.revision().await;

    // etcd's tool's flags, and --client-steps: --total split over the steps.
    let assert = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["--conns=4", "put", "--client-steps=1,4,16", "--total=1200"])
        .args(["--key-space-size=100000", "--sequential-keys", "--json"])
        .arg(&json)
        .arg("--plots")
        .arg(&plots)
        .arg("--markdown")
        .arg(&markdown)
        .assert()
        .success();

    let report = read_report(&json);
    let run = only_run(&report);
    assert_eq!(count(run, "/params/clients"), 16, "the largest step's clients");
    let steps = run["steps"].as_array().expect("a step list");
    let figures: Vec<[u64; 4]> = steps
        .iter()
        .map(|s| ["/clients", "/active_clients", "/total", "/ok"].map(|field| count(s, field)))
        .collect();
    assert_eq!(figures, [[1, 1, 400, 400], [4, 4, 400, 400], [16, 16, 400, 400]]);
    assert!(steps.iter().all(|s| count(s, "/errors_total") == 0));
    assert_eq!(count(run, "/ops/put/ok"), 1200);
    assert_eq!(etcd.revision().await - before, 1200, "one revision per put of every step");
    assert_eq!(etcd.key_count().await, 1200, "keys continue from step to step");

    // The text has the steps' table: its header, then a line per step.
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "Client steps (latency in secs.):")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(table.len(), 4, "a header and three steps:\n{stdout}");
    assert!(table[0].split_whitespace().eq([
        "Clients",
        "Requests",
        "Errors",
        "Requests/sec",
        "p50",
        "p90",
        "p99",
        "p99.9"
    ]));
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert_eq!(markdown.lines().filter(|l| l.starts_with("| put | ")).count(), 4, "{markdown}");
    let svg = std::fs::read_to_string(plots.join("1-steps.svg")).expect("the steps' plot");
    assert!(svg.contains("throughput and p99 latency by clients"));
}
