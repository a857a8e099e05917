//! `--repeat`: a matrix of two cells run three times each on throwaway one-member clusters:
//! the runs interleaved (A B A B A B) and the JSON report's `repeats` giving every figure
//! of each cell its repeats' values, mean, median and interval; `compare` of that report
//! judges each figure by Welch's t-test on the repeats.

use serde_json::Value;

use crate::{etcdlat, read_report};

const SCENARIO: &str = "name = \"rp\"\n[load]\ntotal = 300\nconns = 1\n[op.put]\nkey-space-size = 100\n\
     [matrix]\n\"load.clients\" = [1, 4]\n";

#[test]
fn repeats_run_interleaved_and_each_figure_has_its_interval() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rp.toml"), SCENARIO).unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .env("ETCD_BIN", etcdlat_testkit::etcd_bin())
        .args(["--local", "--members=1", "run", "rp.toml", "--repeat", "3", "--json", "r.json"])
        .timeout(std::time::Duration::from_secs(180))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let report = read_report(&dir.path().join("r.json"));
    let runs = report["runs"].as_array().unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "rp [clients=1] #1",
            "rp [clients=4] #1",
            "rp [clients=1] #2",
            "rp [clients=4] #2",
            "rp [clients=1] #3",
            "rp [clients=4] #3",
        ]
    );
    // Each run on its own throwaway member: 300 puts from a fresh store each time.
    for run in runs {
        assert_eq!(run["ops"]["put"]["ok"], 300, "{}", run["name"]);
        assert_eq!(run["target"]["local"], true);
    }
    let repeats = &report["repeats"];
    assert_eq!(repeats["order"], "interleaved", "{repeats:#}");
    assert_eq!(repeats["sequence"], serde_json::json!([0, 1, 0, 1, 0, 1]));
    assert_eq!(repeats["confidence"], 0.95);
    let cells = repeats["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (c, cell) in cells.iter().enumerate() {
        assert_eq!(cell["name"], ["rp [clients=1]", "rp [clients=4]"][c]);
        let indexes: Vec<usize> =
            cell["runs"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as usize).collect();
        assert_eq!(indexes, [c, c + 2, c + 4]);
        let figures = cell["figures"].as_object().unwrap();
        assert_eq!(figures.len(), etcdlat_core::Row::ALL.len());
        let mut known = 0;
        for row in etcdlat_core::Row::ALL {
            let values: Vec<Option<f64>> =
                indexes.iter().map(|&i| runs[i]["study"][row.key()].as_f64()).collect();
            let estimate = &figures[row.key()];
            if values.iter().all(Option::is_none) {
                assert!(estimate.is_null(), "{}: {estimate}", row.key());
                continue;
            }
            let known_values: Vec<f64> = values.iter().flatten().copied().collect();
            assert_interval(row.key(), estimate, &known_values);
            known += 1;
        }
        // Throughput, latency, server CPU and memory, disk: most figures are known here.
        for key in ["throughput_avg_per_s", "latency_p99_us", "server_cpu_max_percent"] {
            assert!(figures[key].is_object(), "{key} unknown: {cell:#}");
        }
        assert!(known >= 20, "{known} figures known");
        for figure in ["throughput", "p50", "p99", "p99_9", "errors"] {
            let values: Vec<f64> = indexes
                .iter()
                .map(|&i| {
                    let op = &runs[i]["ops"]["put"];
                    match figure {
                        "throughput" => op["throughput"].as_f64().unwrap(),
                        "errors" => op["errors_total"].as_f64().unwrap(),
                        "p99_9" => op["latency_us"]["p99_9"].as_f64().unwrap(),
                        p => op["latency_us"][p].as_f64().unwrap(),
                    }
                })
                .collect();
            assert_interval(figure, &cell["ops"]["put"][figure], &values);
        }
    }
    // The text says the order, and ends comparing the cells.
    assert!(stdout.contains("order: interleaved (1 2 1 2 1 2)"), "{stdout}");
    assert!(stdout.contains("Cells compared with the first"), "{stdout}");
    assert!(stdout.contains("Welch's t-test"), "{stdout}");

    // compare of the one report: the second cell against the first, each figure judged.
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["compare", "r.json", "--json", "-"])
        .assert()
        .success();
    let comparisons: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let pair = &comparisons[0];
    assert_eq!(
        (pair["base"].as_str(), pair["new"].as_str()),
        (Some("rp [clients=1]"), Some("rp [clients=4]"))
    );
    assert_eq!((pair["base_repeats"].as_u64(), pair["new_repeats"].as_u64()), (Some(3), Some(3)));
    assert_eq!(pair["level"], 0.05);
    let changes = pair["changes"].as_array().unwrap();
    let change = |op: Option<&str>, figure: &str| {
        changes
            .iter()
            .find(|c| c["op"].as_str() == op && c["figure"] == figure)
            .unwrap_or_else(|| panic!("no {figure} in {pair:#}"))
    };
    // The same 300 requests in every run: no change, p = 1.
    let total = change(None, "total_requests");
    assert_eq!(total["verdict"], "no_change", "{total:#}");
    assert_eq!(total["welch"]["p"], 1.0);
    for c in changes {
        let verdict = c["verdict"].as_str().unwrap();
        match c["welch"]["p"].as_f64() {
            Some(p) => assert_eq!(verdict == "changed", p < 0.05, "{c:#}"),
            None => assert!(verdict == "unknown" || verdict == "not_enough_repeats", "{c:#}"),
        }
    }
    assert!(change(Some("put"), "throughput")["welch"]["p"].is_f64());

    // The same runs read twice: each cell of the copy against the first file's, no change.
    std::fs::copy(dir.path().join("r.json"), dir.path().join("again.json")).unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["compare", "r.json", "again.json", "--level", "0.2", "--json", "-"])
        .assert()
        .success();
    let comparisons: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let news: Vec<&str> =
        comparisons.as_array().unwrap().iter().map(|c| c["new"].as_str().unwrap()).collect();
    assert_eq!(
        news,
        ["r.json: rp [clients=4]", "again.json: rp [clients=1]", "again.json: rp [clients=4]"]
    );
    let same = &comparisons[1];
    assert_eq!(
        (same["base"].as_str(), same["level"].as_f64()),
        (Some("r.json: rp [clients=1]"), Some(0.2))
    );
    for c in same["changes"].as_array().unwrap() {
        assert!(c["verdict"] == "no_change" || c["verdict"] == "unknown", "{c:#}");
    }
    // A level is a probability.
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["compare", "r.json", "--level", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("etcdlat: --level"));
}

/// `estimate` is the figure `key` over `values`: the values in order, their mean and median,
/// and a Student's t interval around the mean that holds it (none for one value).
fn assert_interval(key: &str, estimate: &Value, values: &[f64]) {
    let got: Vec<f64> = estimate["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{key}: {estimate}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got, values, "{key}");
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    assert!(
        (estimate["mean"].as_f64().unwrap() - mean).abs() <= 1e-9 * mean.abs().max(1.0),
        "{key}: {estimate}"
    );
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    assert_eq!(estimate["median"].as_f64().unwrap(), median, "{key}");
    if values.len() == 1 {
        // A figure only one repeat knew (a whole second of throughput): no interval.
        for field in ["sd", "half_width", "low", "high"] {
            assert!(estimate[field].is_null(), "{key}: {estimate}");
        }
        return;
    }
    let half = estimate["half_width"].as_f64().unwrap_or_else(|| panic!("{key}: {estimate}"));
    let (low, high) = (estimate["low"].as_f64().unwrap(), estimate["high"].as_f64().unwrap());
    assert!(half >= 0.0 && low <= mean + 1e-9 && high >= mean - 1e-9, "{key}: {estimate}");
    assert!(((high - low) / 2.0 - half).abs() <= 1e-6 * half.max(1.0), "{key}: {estimate}");
}
