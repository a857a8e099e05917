//! `run --find-max` against real etcd: a cluster that meets Kubernetes' SLOs at every node
//! count tried has the count doubled each run, every probe's report written with its own
//! model; counts whose preload does not fit the cluster's quota are missed without a run,
//! and the search bisects down to the largest that ran. Every step of the search (halving
//! on a miss, bisecting to within a tenth, the bound on runs) is its unit test's.

use serde_json::Value;

use crate::{etcdlat, read_report};

/// Runs `--find-max` on a one-member model of `nodes` nodes (one pod each; small objects
/// unless `model` says otherwise) with `model`'s lines in `[kubernetes]` and `cluster`'s in
/// `[cluster]`, at most `runs` runs; returns the exit code, the output and the JSON
/// report's runs.
fn search(nodes: u64, runs: u32, model: &str, cluster: &str) -> (Option<i32>, String, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let sizes =
        if model.contains("size") { "" } else { "pod-size = \"1KiB\"\nnode-size = \"1KiB\"\n" };
    let scenario = format!(
        "name = \"fm\"\n[cluster]\nmembers = 1\n{cluster}[load]\nclients = 8\nduration = \"3s\"\n\
         [kubernetes]\nnodes = {nodes}\npods-per-node = 1\n{sizes}{model}"
    );
    std::fs::write(dir.path().join("fm.toml"), scenario).unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["run", "fm.toml", "--find-max", "--find-max-runs", &runs.to_string()])
        .args(["--json", "r.json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json = dir.path().join("r.json");
    assert!(json.exists(), "no report: exit {:?}\n{stdout}\n{stderr}", out.status.code());
    let runs = read_report(&json)["runs"].as_array().unwrap().clone();
    (out.status.code(), format!("{stdout}\n{stderr}"), runs)
}

#[test]
fn a_cluster_that_meets_the_slos_is_probed_at_twice_the_nodes_each_run() {
    if etcdlat_testkit::skip() {
        return;
    }
    let (code, out, runs) = search(50, 3, "", "");
    assert_eq!(code, Some(0), "{out}");
    for (i, nodes) in [50, 100, 200].into_iter().enumerate() {
        let head = format!("find-max probe {}: nodes = {nodes}: met", i + 1);
        let line = out.lines().find(|l| l.starts_with(&head)).unwrap_or_else(|| panic!("{out}"));
        // What etcd's CPU did over the run, on its busiest member and on all.
        assert!(line.contains("% of a core on ") && line.ends_with(" cores on all 1)"), "{line}");
        let run = &runs[i];
        assert_eq!(run["name"], format!("fm nodes={nodes}"));
        assert_eq!(run["scenario"]["kubernetes"]["nodes"], nodes, "each probe its own model");
        let k8s_updates = run.pointer("/ops/k8s-update/ok").and_then(Value::as_u64).unwrap_or(0);
        assert!(k8s_updates > 0, "{nodes} nodes: {:#}", run["ops"]);
    }
    assert_eq!(runs.len(), 3);
    // The derived rate grows with the node count (lease renewals every 10 s per node).
    let target = |run: &Value| run["pacing"]["target_rate"].as_f64().unwrap();
    assert!(
        target(&runs[2]) > 3.0 * target(&runs[0]),
        "{} vs {}",
        target(&runs[2]),
        target(&runs[0])
    );
    assert!(out.contains("sustained nodes = 200 within SLO (no larger count was tried"), "{out}");
}

/// A cluster whose quota holds the preload of 4 nodes of 1 MiB objects and not of 5: counts
/// above 4 are missed without a run, naming the quota, and only counts that ran have a
/// report. When 4 nodes meet the SLOs (as they do unless the store's own growth meets the
/// quota first), the search runs 4, finds 8, 6 and 5 too large to run, and answers 4.
#[test]
fn counts_too_large_to_run_are_missed_and_bisected_down_to_the_largest_that_ran() {
    if etcdlat_testkit::skip() {
        return;
    }
    // Nothing but lease renewals writes during the run (no pod churn, node status an hour
    // apart, no history preloaded, no ReplicaSets or apiservers' leases), so the store stays
    // near its preload.
    let model = "pod-size = \"1MiB\"\nnode-size = \"1MiB\"\npod-churn = 0.0\nnode-status-interval = \"1h\"\n\
                 history = \"0s\"\npods-per-controller = 0\napiserver-lease-interval = \"0s\"\n";
    let text =
        format!("[load]\nduration = \"3s\"\n[kubernetes]\nnodes = 4\npods-per-node = 1\n{model}");
    let k = etcdlat_core::Scenario::from_toml_str(&text).unwrap().kubernetes.unwrap();
    let preload = |nodes| etcdlat_core::scenario::Kubernetes { nodes, ..k.clone() }.preload_bytes();
    // Most of a fifth node's 2 MiB above 4 nodes' preload: etcd refuses a write that would
    // take its store over the quota, so the run needs the room.
    let quota = preload(4) + (preload(5) - preload(4)) * 15 / 16;
    let (code, out, runs) = search(4, 6, model, &format!("quota-backend-bytes = {quota}\n"));
    let probes: Vec<&str> = out.lines().filter(|l| l.starts_with("find-max probe")).collect();
    let mut ran = 0;
    for line in &probes {
        let nodes: u64 = line
            .split("nodes = ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .unwrap()
            .parse()
            .unwrap();
        let cannot = line.contains("missed: cannot run");
        assert_eq!(cannot, nodes > 4, "only counts over the quota are not run: {line}\n{out}");
        assert!(!cannot || line.contains("quota"), "the reason names the quota: {line}");
        ran += usize::from(!cannot);
    }
    assert_eq!(runs.len(), ran, "a report for each count that ran, none for the others");
    assert_eq!(code, Some(if out.contains("sustained nodes = ") { 0 } else { 1 }), "{out}");
    if probes[0].contains("nodes = 4: met") {
        for (i, nodes) in [8, 6, 5].into_iter().enumerate() {
            let line = format!("find-max probe {}: nodes = {nodes}: missed: cannot run", i + 2);
            assert!(out.contains(&line), "{line}\n{out}");
        }
        assert!(out.contains("sustained nodes = 4 within SLO (5 missed them)"), "{out}");
    }
}
