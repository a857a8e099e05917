//! `--metrics-addr` scraped by a real Prometheus server (Debian's `prometheus`, installed by
//! `.ci/deps --tests`) every second during a paced run against a real etcd, and read back
//! through Prometheus' HTTP API: the requests it saw by operation and code agree with the
//! run's report, the latency histogram is there, the target rate is the one asked for, and
//! the client's memory is shown; every series carries the run's name. Prometheus scrapes
//! etcd's `/metrics` too, and every panel of the Grafana dashboard in `examples/` has data
//! while the run goes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use etcdlat_testkit::{Etcd, skip};
use serde_json::Value;

use crate::{count, only_run, read_report};

/// The server, from Debian's `prometheus` package.
const PROMETHEUS: &str = "prometheus";

/// Prometheus on PATH; fails (never skips) when it is missing, saying how to install it.
fn prometheus() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths).map(|dir| dir.join(PROMETHEUS)).find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "`{PROMETHEUS}` is not on PATH: this test has a real Prometheus scrape \
                 --metrics-addr. Install the Debian package `prometheus` (apt-get install \
                 prometheus), or run .ci/deps --tests"
            )
        })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The body of a plain HTTP GET on loopback, and its status code.
fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
    Ok((status, body))
}

/// Percent-encodes a query parameter's value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One instant query through Prometheus' HTTP API: each result's labels and value.
fn query(port: u16, promql: &str) -> Vec<(Value, f64)> {
    let (status, body) = get(port, &format!("/api/v1/query?query={}", encode(promql)))
        .unwrap_or_else(|e| panic!("querying Prometheus: {e}"));
    assert_eq!(status, 200, "{promql}: {body}");
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    answer["data"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{promql}: {body}"))
        .iter()
        .map(|r| {
            let value = r["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap();
            (r["metric"].clone(), value)
        })
        .collect()
}

/// The only result of `promql`.
fn one(port: u16, promql: &str) -> (Value, f64) {
    let results = query(port, promql);
    assert_eq!(results.len(), 1, "{promql}: {results:?}");
    results.into_iter().next().unwrap()
}

/// Prometheus scraping etcdlat's endpoint (job `etcdlat`) and etcd's `/metrics` (job
/// `etcd`, at `etcd`'s host:port) every second.
fn start_prometheus(dir: &Path, target_port: u16, etcd: &str) -> (Killed, u16) {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
             - job_name: etcdlat\n    static_configs:\n      \
             - targets: ['127.0.0.1:{target_port}']\n  \
             - job_name: etcd\n    static_configs:\n      - targets: ['{etcd}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new(prometheus())
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    let server = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    // Ready, and the target applied: Prometheus applies discovered targets a few seconds
    // after it starts, and a run started before would be scraped only at its end.
    let has_target = || {
        let Ok((200, body)) = get(port, "/api/v1/targets") else { return false };
        let targets: Value = serde_json::from_str(&body).unwrap_or_default();
        targets["data"]["activeTargets"].as_array().is_some_and(|t| t.len() == 2)
    };
    while !has_target() {
        assert!(Instant::now() < deadline, "Prometheus had not its targets within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, port)
}

#[tokio::test]
async fn a_real_prometheus_scrapes_the_run_while_it_goes() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let endpoint = etcd.endpoint();
    let etcd_host = endpoint.trim_start_matches("http://");
    let (_prometheus, port) = start_prometheus(dir.path(), metrics_port, etcd_host);
    let report_path = dir.path().join("r.json");
    let before = etcd.revision().await;
    let mut run = Killed(
        Command::cargo_bin("etcdlat")
            .expect("the etcdlat binary is built")
            .args(["--endpoints", &endpoint, "--quiet"])
            .arg(format!("--metrics-addr=127.0.0.1:{metrics_port}"))
            .arg(format!("--json={}", report_path.display()))
            .args(["put", "--rate=400", "--total=2400", "--clients=20", "--key-space-size=500"])
            .env_remove("ETCDLAT_LOG")
            .spawn()
            .expect("etcdlat runs"),
    );
    // While the run goes: every panel of the Grafana dashboard shows something.
    let deadline = Instant::now() + Duration::from_secs(20);
    while query(port, "count_over_time(etcdlat_requests_total{op=\"put\"}[5m]) >= 3").is_empty() {
        assert!(Instant::now() < deadline, "Prometheus scraped no three samples of the run");
        std::thread::sleep(Duration::from_millis(200));
    }
    dashboard_shows_every_panel(port);
    let status = run.0.wait().expect("etcdlat ends");
    assert!(status.success(), "{status:?}");
    assert_eq!(etcd.revision().await - before, 2400, "every put reached the server");
    let report = read_report(&report_path);
    let ok = count(only_run(&report), "/ops/put/ok");
    assert_eq!(ok, 2400);

    // What Prometheus kept of the six seconds, once a second: the last scrape is at most a
    // scrape interval (and a publish, 100 ms) before the run's end.
    let (labels, seen) =
        one(port, "max_over_time(etcdlat_requests_total{op=\"put\",code=\"OK\"}[5m])");
    assert_eq!(labels["run"], "put", "{labels}");
    assert!(seen > 0.0 && seen <= ok as f64, "Prometheus saw {seen} of {ok} puts");
    assert!(seen >= ok as f64 - 400.0 * 1.5, "the last scrape saw {seen} of {ok} puts");
    assert!(query(port, "etcdlat_requests_total{code!=\"OK\"}").is_empty(), "no failures");
    let (_, histogram) =
        one(port, "max_over_time(etcdlat_request_duration_seconds_count{op=\"put\"}[5m])");
    assert_eq!(histogram, seen, "the histogram counts the successes");
    let (_, p99_s) = one(
        port,
        "histogram_quantile(0.99, max_over_time(etcdlat_request_duration_seconds_bucket{op=\"put\"}[5m]))",
    );
    let report_p99_s = count(only_run(&report), "/ops/put/latency_us/p99") as f64 / 1e6;
    // Buckets double: the quantile Prometheus interpolates is within a factor of two.
    assert!(
        p99_s <= report_p99_s * 2.0 + 1e-4 && p99_s >= report_p99_s / 2.0,
        "p99 {p99_s} s from Prometheus, {report_p99_s} s in the report"
    );
    let (_, target) = one(port, "max_over_time(etcdlat_target_rate[5m])");
    assert_eq!(target, 400.0);
    let (_, achieved) = one(port, "max_over_time(etcdlat_achieved_rate[5m])");
    assert!(achieved > 100.0 && achieved < 1000.0, "achieved {achieved}/s at 400/s asked");
    let (_, rss) = one(port, "max_over_time(etcdlat_client_resident_memory_bytes[5m])");
    assert!(rss > 1e6, "{rss}");
}

/// Every panel of `examples/grafana-dashboard.json` has data: at least one of its queries
/// (`$__rate_interval` as 5 s) answers with a series, etcdlat's and etcd's alike.
fn dashboard_shows_every_panel(port: u16) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grafana-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    let mut shown = 0;
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        let targets = panel["targets"].as_array().unwrap();
        let answered = targets.iter().any(|t| {
            let expr = t["expr"].as_str().unwrap().replace("$__rate_interval", "5s");
            !query(port, &expr).is_empty()
        });
        assert!(answered, "the panel {} shows nothing: {targets:#?}", panel["title"]);
        shown += 1;
    }
    assert!(shown >= 10, "{shown} panels");
}
