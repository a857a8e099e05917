//! The shipped Kubernetes scenarios (`k8s-*`), scaled down with `--scale` (their node
//! counts with them), each run on the throwaway 3-member etcd it asks for: every request of
//! every flow succeeds and the flows the scenario is about were sent (pods' creates,
//! updates and deletes among them); a threshold may fail only for a flow too rare to come
//! up in a scaled-down run (a list a minute), or for a p99 over its SLO. With one
//! writer per pod no update conflicts, and with 8 they do; the text report holds each
//! run's SLO verdict, as its p99 in the JSON report says, and its conflicts per update.

use serde_json::Value;

use crate::{count, etcdlat, read_report};

/// Runs shipped scenario `name` at `scale` and returns its runs. Exit 0, or 1 for
/// thresholds on a kind of request the scaled run made none of, or on a p99.
fn run(name: &str, scale: &str) -> Vec<Value> {
    run_with_text(name, scale).0
}

/// As [`run`], with the text report.
fn run_with_text(name: &str, scale: &str) -> (Vec<Value>, String) {
    run_with_flags(name, scale, &[])
}

/// As [`run_with_text`], with more flags for `run`.
fn run_with_flags(name: &str, scale: &str, flags: &[&str]) -> (Vec<Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["run", name, "--scale", scale, "--json", "r.json"])
        .args(flags)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(1) => {
            // A flow too rare to come up, or an SLO's p99 a request over it missed on a
            // shared machine (the SLO verdicts are checked against the JSON's p99 apart).
            for line in stderr.lines().filter(|l| l.contains("threshold")) {
                let rare = line.contains("requests in the run)");
                assert!(rare || line.contains(" p99 < "), "{name}: {line}");
            }
        }
        code => panic!("{name}: exit {code:?}, stderr:\n{stderr}"),
    }
    let report = read_report(&dir.path().join("r.json"));
    let runs = report["runs"].as_array().unwrap().clone();
    for run in &runs {
        for (kind, op) in run["ops"].as_object().unwrap() {
            assert_eq!(count(op, "/errors_total"), 0, "{name}: {kind}: {op:#}");
        }
    }
    (runs, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Successful requests of `kind` in `run`, 0 when it made none.
fn ok(run: &Value, kind: &str) -> u64 {
    run.pointer(&format!("/ops/{kind}/ok")).and_then(Value::as_u64).unwrap_or(0)
}

#[test]
fn node_heartbeats_pod_churn_and_events_send_their_flows() {
    if etcdlat_testkit::skip() {
        return;
    }
    let runs = run("k8s-node-heartbeat", "0.05");
    assert!(ok(&runs[0], "k8s-update") > 20, "{:#}", runs[0]["ops"]);
    assert_eq!(ok(&runs[0], "k8s-event"), 0);
    // 6 s of pods' lives (a create, 6 updates and a delete each, 8 requests a second) and 5
    // events a second, beside 7,500 preloaded pods: every verb of a life comes up. On 2
    // clients, each of which lives a life after another, two dozen requests each (in the
    // scaled 3 s, neither client finished a life one run in 2,600); the scenario's 64 would
    // each send a request or two of their first life.
    let flags = ["--clients", "2", "--duration", "6s"];
    let (runs, _) = run_with_flags("k8s-pod-churn", "0.05", &flags);
    let (updates, events) = (ok(&runs[0], "k8s-update"), ok(&runs[0], "k8s-event"));
    assert!(updates > 2 && events > 2, "{:#}", runs[0]["ops"]);
    let (creates, deletes) = (ok(&runs[0], "k8s-create"), ok(&runs[0], "k8s-delete"));
    assert!(creates > 0 && deletes > 0 && creates >= deletes, "{:#}", runs[0]["ops"]);
    assert!(updates >= 6 * deletes, "each deleted pod was updated 6 times first");
    let runs = run("k8s-events", "0.05");
    assert!(ok(&runs[0], "k8s-event") > 0, "{:#}", runs[0]["ops"]);
    assert_eq!(ok(&runs[0], "k8s-update"), 0);
}

#[test]
fn lists_and_the_whole_cluster_run_scaled_down() {
    if etcdlat_testkit::skip() {
        return;
    }
    let runs = run("k8s-list-watch", "0.1");
    assert!(ok(&runs[0], "k8s-count") > 0, "{:#}", runs[0]["ops"]);
    // At 0.01 (50 nodes) the cluster sends 1 event a second among 8 requests, each picked
    // at random by rate: its 3 s would hold no event one run in 25, (7/8)^24. 10 s hold
    // one or more but one run in 40,000.
    let (runs, text) = run_with_flags("k8s-cluster", "0.01", &["--duration", "10s"]);
    for kind in ["k8s-update", "k8s-event"] {
        assert!(ok(&runs[0], kind) > 0, "{kind}: {:#}", runs[0]["ops"]);
    }
    // Its Kubernetes section ends with whether it sustained its nodes, as the JSON's
    // verdict says: every (resource, verb) met its SLO and no node lease went past 40 s.
    let k = &runs[0]["kubernetes"];
    let nodes = k["nodes"].as_u64().expect("the cluster's nodes");
    assert_eq!(Some(nodes), runs[0].pointer("/scenario/kubernetes/nodes").and_then(Value::as_u64));
    let requests = k["requests"].as_array().expect("requests by resource and verb");
    let leases = requests.iter().find(|r| r["resource"] == "leases" && r["verb"] == "update");
    assert!(leases.is_some_and(|r| r["ok"].as_u64() > Some(0)), "{requests:#?}");
    // Watches are held to no SLO (null): their rows have no say in the verdict.
    let held: Vec<&Value> = requests.iter().filter(|r| !r["slo"].is_null()).collect();
    let met = held.iter().all(|r| r["slo"]["verdict"] == "met");
    let watch = requests.iter().find(|r| r["resource"] == "leases" && r["verb"] == "watch");
    assert!(watch.is_some_and(|r| r["ok"].as_u64() > Some(0)), "{requests:#?}");
    let not_ready = k.pointer("/node_leases/not_ready").and_then(Value::as_u64).unwrap_or(0);
    assert_eq!(k["sustained"].as_bool(), Some(met && not_ready == 0), "{k:#}");
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Kubernetes SLOs"))
        .take_while(|l| !l.is_empty())
        .collect();
    let last = section.last().copied().unwrap_or_default();
    let said = if met && not_ready == 0 {
        format!("  Sustained nodes = {nodes} within SLO.")
    } else {
        format!("  Not sustained at nodes = {nodes}:")
    };
    assert!(last.starts_with(&said), "{section:#?}");
    assert!(section.iter().any(|l| l.starts_with("    leases update:\t")), "{section:#?}");
    assert!(section.iter().any(|l| l.starts_with("    leases watch:\t")), "{section:#?}");
}

#[test]
fn optimistic_contention_conflicts_only_with_more_than_one_writer_per_pod() {
    if etcdlat_testkit::skip() {
        return;
    }
    let (runs, text) = run_with_text("k8s-optimistic-contention", "0.1");
    assert_eq!(runs.len(), 4, "one run per writers-per-pod");
    let conflicts: Vec<u64> = runs.iter().map(|r| count(r, "/ops/k8s-update/conflicts")).collect();
    assert_eq!(conflicts[0], 0, "one writer per pod: {conflicts:?}");
    assert!(conflicts[3] > 0, "eight writers per pod: {conflicts:?}");

    let slo_lines: Vec<&str> =
        text.lines().filter(|l| l.starts_with("  k8s-update:\tp99")).collect();
    assert_eq!(slo_lines.len(), 4, "{text}");
    for ((line, run), conflicts) in slo_lines.iter().zip(&runs).zip(&conflicts) {
        let p99_us = count(run, "/ops/k8s-update/latency_us/p99");
        let verdict = if p99_us <= 1_000_000 { "(mutating): met" } else { "(mutating): missed" };
        assert!(line.contains(verdict), "{line} at p99 {p99_us} us");
        let per_update = *conflicts as f64 / count(run, "/ops/k8s-update/ok") as f64;
        assert!(line.ends_with(&format!("{per_update:.3} conflicts per update")), "{line}");
    }
}
