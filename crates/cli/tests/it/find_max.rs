//! `run --find-max` against real etcd: a cluster that meets Kubernetes' SLOs at every node
//! count tried has the count doubled each run, every probe's report written with its own
//! model; counts whose preload does not fit the cluster's quota are missed without a run,
//! and the search bisects down to the largest that ran. Every step of the search (halving
//! on a miss, bisecting to within a tenth, the bound on runs) is its unit test's.

use serde_json::Value;

use crate::{etcdlat, read_report};

/// Runs `--find-max` on a one-member model of `nodes` nodes (one pod each; small objects
/// unless `model` says otherwise) with `model`'s lines in `[kubernetes]` and `cluster`'s in
/// `[cluster]`, at most `runs` runs, `repeats` of the counts either side of the boundary;
/// returns the exit code, the output and the JSON report's runs.
fn search(
    nodes: u64,
    runs: u32,
    repeats: u32,
    model: &str,
    cluster: &str,
) -> (Option<i32>, String, Vec<Value>) {
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
        .args(["--find-max-repeats", &repeats.to_string()])
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
    let (code, out, runs) = search(50, 3, 3, "", "");
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
    // One run a count: what is held here is the quota's bound, not the repeats (a repeat
    // of 4 nodes' 3 s may miss on a loaded machine and move the bracket below it).
    let (code, out, runs) = search(4, 6, 1, model, &format!("quota-backend-bytes = {quota}\n"));
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
        // A count that ran may still fail in its preload: etcd's quota counts its file,
        // which bbolt grows past the pages in use when 1 MiB values are written by eight
        // clients at once (10.5 to 12.6 MB for these 8.4 MB of 4 nodes, run to run), and
        // such a run has no report.
        ran += usize::from(!cannot && !line.contains("missed: could not run"));
    }
    assert_eq!(runs.len(), ran, "a report for each count that ran, none for the others: {out}");
    assert_eq!(code, Some(if out.contains("sustained nodes = ") { 0 } else { 1 }), "{out}");
    if probes[0].contains("nodes = 4: met") {
        for (i, nodes) in [8, 6, 5].into_iter().enumerate() {
            let line = format!("find-max probe {}: nodes = {nodes}: missed: cannot run", i + 2);
            assert!(out.contains(&line), "{line}\n{out}");
        }
        assert!(out.contains("sustained nodes = 4 within SLO (5 missed them)"), "{out}");
    }
}

/// A shipped scenario scaled down (`--scale`): k8s-node-heartbeat at 5 nodes, on one
/// member whose quota (`--quota-backend-bytes`, which holds the scaled model) takes the
/// preload of 5 nodes of 400 KiB and not of 6 (400 KiB, so that the unscaled 5,000 fit
/// etcd's default quota, as the file is checked before it is scaled). The search
/// writes its bracket into the JSON beside the probes' reports: the count met in every one
/// of its runs, the count missed in some, what bound the missed one, each count's runs and
/// the spread of their worst p99s, and what the verdicts judged. When 5 nodes meet the
/// SLOs (as they do unless the machine stalls the run), the doubling and bisection run
/// each count once (10, 7 and 6 cannot run: one run settles them) and the repeats go to 5.
#[test]
fn the_search_answers_with_a_bracket_and_its_repeats_in_the_json() {
    if etcdlat_testkit::skip() {
        return;
    }
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/scenarios/k8s-node-heartbeat.toml");
    let shipped = etcdlat_core::Scenario::from_toml_str(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .scaled(0.001);
    let k = shipped.kubernetes.clone().unwrap();
    assert_eq!(k.nodes, 5, "the shipped 5,000 nodes scaled");
    let dir = tempfile::tempdir().unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["run", "k8s-node-heartbeat", "--scale", "0.001", "--duration", "3s"])
        // One member, and no apiservers' leases: at 5 nodes the run sends about a request a
        // second, and with them a run's few may hold no lease renewal. (A count too large to
        // run is the other tests'.)
        .args(["--set", "cluster.members=1"])
        .args(["--set", "kubernetes.apiserver-lease-interval=\"0s\""])
        .args(["--find-max", "--find-max-runs", "6", "--find-max-repeats", "2"])
        .args(["--json", "r.json"])
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let json = read_report(&dir.path().join("r.json"));
    let fm = &json["find_max"];
    assert_eq!(fm["repeats"], 2, "{text}");
    let counts = fm["counts"].as_array().expect("every count tried");
    let n = |c: &Value, field: &str| c[field].as_u64().unwrap_or_else(|| panic!("{field}: {c}"));
    let nodes: Vec<u64> = counts.iter().map(|c| n(c, "nodes")).collect();
    assert!(nodes.windows(2).all(|w| w[0] < w[1]), "by node count: {nodes:?}");
    let mut reports = 0;
    for c in counts {
        let (runs, met) = (n(c, "runs"), n(c, "met"));
        assert!((1..=2).contains(&runs) && met <= runs, "{c}");
        // What bound the runs that missed, every one of them, most first.
        let bound = c["bound_by"].as_array().unwrap();
        let bound_runs: Vec<u64> = bound.iter().map(|b| n(b, "runs")).collect();
        assert_eq!(bound_runs.iter().sum::<u64>(), runs - met, "{c}");
        assert!(bound_runs.windows(2).all(|w| w[0] >= w[1]), "{c}");
        let cannot = bound.iter().any(|b| b["what"] == "cannot run");
        match c["worst_p99_of_limit"].as_array() {
            Some(spread) => {
                let (lo, hi) = (spread[0].as_f64().unwrap(), spread[1].as_f64().unwrap());
                assert!(0.0 < lo && lo <= hi, "{c}");
                reports += runs;
            }
            None => {
                assert!(cannot && runs == 1, "only a count that never ran has none: {c}\n{text}")
            }
        }
    }
    assert_eq!(json["runs"].as_array().unwrap().len() as u64, reports, "a report per run");
    let scope = &fm["scope"];
    assert_eq!(scope["side"], "etcd");
    assert!(scope["apiserver"].as_str().unwrap().contains("as etcdlat models it"));
    assert_eq!(scope["etcd_share"], 0.5);
    let (met, missed) = (&fm["met"], &fm["missed"]);
    assert_eq!(out.status.code(), Some(if met.is_null() { 1 } else { 0 }), "{text}");
    if !met.is_null() {
        assert_eq!(n(met, "met"), n(met, "runs"), "met in every run: {met}");
    }
    if !missed.is_null() {
        assert!(n(missed, "met") < n(missed, "runs"), "missed in some run: {missed}");
        assert_eq!(fm["bound_by"], missed["bound_by"][0]["what"], "what missed most");
    }
    if !met.is_null() && !missed.is_null() {
        let (lo, hi) = (n(met, "nodes"), n(missed, "nodes"));
        assert!(lo < hi, "{fm}");
        assert_eq!(fm["gap"].as_f64(), Some((hi - lo) as f64 / lo as f64));
    }
    if counts[nodes.iter().position(|&c| c == 5).unwrap()]["met"].as_u64() == Some(2) {
        assert_eq!((n(met, "nodes"), n(met, "runs")), (5, 2), "the repeats went to 5: {fm}");
        assert_eq!((n(missed, "nodes"), n(missed, "runs")), (6, 1), "{fm}");
        assert_eq!(fm["bound_by"], "cannot run");
        assert_eq!(nodes, [5, 6, 7, 10], "doubled to 10, bisected to 6: {fm}");
        // The text says the bracket too.
        assert!(
            text.contains("bracket: 5 nodes met 2 of 2; 6 missed 1 of 1; bound by: cannot run"),
            "{text}"
        );
    }
}
