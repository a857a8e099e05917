//! `etcdlat merge`, `etcdlat compare` and thresholds (`--threshold`, a scenario's
//! `thresholds`), on reports of real runs against a real etcd: merged counts and histograms
//! are the sums of the shards', a comparison of two is a table per operation, of any number
//! the runs side by side with each one's figures from its JSON, a threshold not met exits 1
//! naming it, and bad input exits 2 with one line naming the file.

use std::path::{Path, PathBuf};
use std::process::Output;

use etcdlat_core::report::Row;
use etcdlat_core::{OpKind, ReportSet};
use etcdlat_testkit::Etcd;

use crate::{count, etcdlat, only_run, read_report};

/// A `put` run of `total` requests from `clients` clients, its JSON report written to
/// `dir/name`.
fn put_report(etcd: &Etcd, dir: &Path, name: &str, clients: u32, total: u64) -> PathBuf {
    let json = dir.join(name);
    etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .arg(format!("--clients={clients}"))
        .args(["--conns=2", "--quiet", "put", "--key-space-size=1000"])
        .arg(format!("--total={total}"))
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    json
}

fn read_set(path: &Path) -> ReportSet {
    serde_json::from_value(read_report(path)).expect("an etcdlat report")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn merge_adds_shards_and_compare_tabulates_them() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let a = put_report(&etcd, dir.path(), "a.json", 4, 300);
    let b = put_report(&etcd, dir.path(), "b.json", 2, 200);
    let merged = dir.path().join("merged.json");
    let table = dir.path().join("merged.md");

    let out = etcdlat()
        .arg("merge")
        .args([&a, &b])
        .arg("--json")
        .arg(&merged)
        .arg("--markdown")
        .arg(&table)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("Summary:") && stdout.contains("Shards:"), "{stdout}");
    assert!(out.get_output().stderr.is_empty(), "{}", stderr(out.get_output()));

    let report = read_report(&merged);
    let run = only_run(&report);
    assert_eq!(count(run, "/ops/put/ok"), 500);
    assert_eq!(count(run, "/ops/put/errors_total"), 0);
    assert_eq!(count(run, "/ops/put/latency_us/count"), 500);
    assert_eq!(count(run, "/ops/put/keys"), 500);
    assert_eq!(count(run, "/params/clients"), 6);
    assert_eq!(count(run, "/params/conns"), 4);
    let shards = run["shards"].as_array().expect("the shards are listed");
    assert_eq!(shards.len(), 2);
    assert_eq!(count(&shards[0], "/ok"), 300);
    assert_eq!(shards[1]["name"], b.display().to_string());
    assert!(std::fs::read_to_string(&table).unwrap().contains("| put |"));

    // The merged histogram is the sum of the shards' histograms, bucket for bucket.
    let (a_set, b_set, m_set) = (read_set(&a), read_set(&b), read_set(&merged));
    let mut sum = a_set.runs[0].op(OpKind::Put).latency.histogram().clone();
    sum.add(b_set.runs[0].op(OpKind::Put).latency.histogram()).unwrap();
    assert_eq!(m_set.runs[0].op(OpKind::Put).latency.histogram(), &sum);
    let mut service = a_set.runs[0].op(OpKind::Put).service_time.histogram().clone();
    service.add(b_set.runs[0].op(OpKind::Put).service_time.histogram()).unwrap();
    assert_eq!(m_set.runs[0].op(OpKind::Put).service_time.histogram(), &service);

    // `--json -` writes the merged report alone on stdout.
    let out = etcdlat().arg("merge").args([&a, &b]).args(["--json", "-"]).assert().success();
    let set: ReportSet = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(set, m_set);

    // compare: a markdown table per operation, on stdout and in --markdown.
    let md = dir.path().join("cmp.md");
    let out = etcdlat().arg("compare").args([&a, &b]).arg("--markdown").arg(&md).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("### put") && stdout.contains("| Metric | Base | New |"), "{stdout}");
    assert!(stdout.contains("| p99 |") && stdout.contains("| Throughput (ops/s) |"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&md).unwrap(), stdout);
}

/// The rows of the markdown table that follows `heading` in `text`, each as its cells.
fn table_after<'a>(text: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .skip_while(|l| *l != heading)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("| ---"))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

#[tokio::test]
async fn compare_puts_the_runs_of_any_number_of_reports_side_by_side() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let inputs = [
        put_report(&etcd, dir.path(), "a.json", 1, 100),
        put_report(&etcd, dir.path(), "b.json", 2, 200),
        put_report(&etcd, dir.path(), "c.json", 4, 300),
    ];
    let out = etcdlat().arg("compare").args(&inputs).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    // Three reports: no base and new, only the runs side by side.
    assert!(!stdout.contains("| Metric | Base | New |"), "{stdout}");
    let table = table_after(&stdout, "## Runs side by side");
    // The scenario every run is heads the figures; each file heads its run's column.
    assert_eq!(table[0], ["put", "a.json", "b.json", "c.json"], "{stdout}");
    assert_eq!(table.len(), 1 + Row::ALL.len(), "{stdout}");
    let row = |label: &str| -> &Vec<&str> {
        table.iter().find(|r| r[0] == label).unwrap_or_else(|| panic!("no {label} in {stdout}"))
    };
    for (i, input) in inputs.iter().enumerate() {
        let report = read_report(input);
        let run = only_run(&report);
        let issued = count(run, "/ops/put/ok") + count(run, "/ops/put/errors_total");
        assert_eq!(issued, [100, 200, 300][i]);
        let cell = |label: &str| row(label)[1 + i];
        assert_eq!(cell("TOTAL-REQUEST-NUMBER"), Row::TotalRequests.format(issued as f64));
        assert_eq!(cell("CLIENT-ERROR-COUNT"), "0");
        let study = |key: &str| {
            run["study"][key].as_f64().unwrap_or_else(|| panic!("no study.{key} in {run:#}"))
        };
        assert_eq!(
            cell("AVG-THROUGHPUT"),
            Row::AvgThroughput.format(study("throughput_avg_per_s"))
        );
        assert_eq!(cell("Latency p99"), Row::LatencyP99.format(study("latency_p99_us")));
        assert_eq!(cell("TOTAL-SECONDS"), Row::TotalSeconds.format(study("total_s")));
    }

    // Two: the base and new tables, then the runs side by side.
    let out = etcdlat().arg("compare").args(&inputs[..2]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("| Metric | Base | New |"), "{stdout}");
    assert_eq!(table_after(&stdout, "## Runs side by side")[0], ["put", "a.json", "b.json"]);

    // The JSON comparison is of two reports.
    let out = etcdlat().arg("compare").args(&inputs).args(["--json", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("etcdlat: --json writes the comparison of two reports"));
}

#[tokio::test]
async fn thresholds_fail_a_run_by_name_and_pass_when_met() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");

    let out = etcdlat()
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["put", "--total=100", "--quiet", "--threshold", r#"p99 < "1us""#])
        .args(["--threshold", "errors == 0", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line per threshold not met:\n{err}");
    assert!(lines[0].starts_with("etcdlat: threshold failed: put p99 < 1us (was "), "{err}");
    // The report is written, and records the thresholds it was held to.
    let report = read_report(&json);
    let thresholds = &only_run(&report)["scenario"]["thresholds"];
    assert_eq!(thresholds, &serde_json::json!([r#"p99 < "1us""#, "errors == 0"]));

    // Thresholds in a scenario file, all met: exit 0.
    let scenario = dir.path().join("met.toml");
    let text = format!(
        "name = \"met\"\nthresholds = ['p99 < \"1h\"', \"errors == 0\", \"put.ok == 50\"]\n\n[cluster]\nendpoints = [\"{}\"]\n\n[load]\ntotal = 50\n\n[op.put]\n",
        etcd.endpoint()
    );
    std::fs::write(&scenario, text).unwrap();
    let out = etcdlat().args(["run", "--quiet"]).arg(&scenario).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));

    // A threshold on a merge is checked on the merged report: 2 x 100 puts.
    let out = etcdlat()
        .args(["merge", "--quiet", "--threshold", "ok == 100"])
        .args([&json, &json])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("threshold failed: put ok == 100 (was 200)"), "{}", stderr(&out));
}

#[tokio::test]
async fn bad_input_exits_2_naming_the_file() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let good = put_report(&etcd, dir.path(), "good.json", 1, 20);
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let mut value = read_report(&good);
    value["schema_version"] = 99.into();
    let newer = file("newer.json", &value.to_string());
    let mut value = read_report(&good);
    value["runs"][0]["name"] = "other".into();
    let renamed = file("renamed.json", &value.to_string());
    let not_json = file("notes.json", "hello\n");
    let not_report = file("object.json", "{\"runs\": []}\n");
    let bad_scenario = file("bad.toml", "thresholds = ['p99 < 20']\n[load]\ntotal = 1\n[op.put]\n");
    let missing = dir.path().join("missing.json").display().to_string();
    let good = good.display().to_string();

    let cases: &[(Vec<&str>, &[&str])] = &[
        (vec!["merge", &good, &missing], &["missing.json", "No such file"]),
        (vec!["compare", &missing, &good], &["missing.json"]),
        (vec!["merge", &good, &not_json], &["notes.json", "not an etcdlat JSON report"]),
        (vec!["compare", &good, &not_report], &["object.json", "no schema_version"]),
        (vec!["merge", &good, &newer], &["newer.json", "schema_version 99"]),
        (vec!["compare", &newer, &good], &["newer.json", "schema_version 99"]),
        (vec!["merge", &good, &renamed], &["renamed.json", "run 1 is \"other\"", "good.json"]),
        (vec!["put", "--threshold", "p99 < 20"], &["--threshold", "p99 is a latency"]),
        (vec!["run", &bad_scenario], &["bad.toml", "thresholds", "p99 < 20"]),
        (vec!["compare", &good, &good, "--threshold", "errors == 0"], &["--threshold"]),
        (vec!["compare", &good], &["REPORT"]),
    ];
    for (args, needles) in cases {
        let out = etcdlat().args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines.len() == 1 && lines[0].starts_with("etcdlat: "), "{args:?}: {err}");
        for needle in *needles {
            assert!(lines[0].contains(needle), "{args:?}: {needle:?} not in {err}");
        }
    }
}

/// The `<svg>` element of `page` whose title is `title`.
fn svg_titled<'a>(page: &'a str, title: &str) -> &'a str {
    page.split("<svg")
        .skip(1)
        .map(|rest| rest.split("</svg>").next().unwrap_or(rest))
        .find(|svg| svg.contains(title))
        .unwrap_or_else(|| panic!("no plot titled {title:?}"))
}

/// Exit code 2 and one line on stderr naming `flag`.
fn refused_naming(out: &Output, flag: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(flag), "{err}");
}

#[tokio::test]
async fn compare_and_merge_overlay_saved_reports_in_html_and_plots() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let a = put_report(&etcd, dir.path(), "a.json", 4, 300);
    let b = put_report(&etcd, dir.path(), "b.json", 2, 200);
    let page = dir.path().join("out.html");
    let plots = dir.path().join("plots");
    etcdlat()
        .args(["--quiet", "compare"])
        .args([&a, &b])
        .arg("--html")
        .arg(&page)
        .arg("--plots")
        .arg(&plots)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("2 runs"), "both reports' runs are on the page");
    // Both runs on one set of axes, each line named by its report.
    for title in ["p99 latency per interval", "throughput per interval"] {
        let svg = svg_titled(&html, title);
        assert!(svg.contains("a.json") && svg.contains("b.json"), "{title}: {svg}");
    }
    for file in ["1-put-latency.svg", "2-put-latency.svg", "2-throughput.svg"] {
        assert!(plots.join(file).is_file(), "{file}");
    }
    // etcd's own figures, a line per member of each run, the leader labelled.
    let fsync = std::fs::read_to_string(plots.join("overlay-wal-fsync-p99.svg")).unwrap();
    for label in ["a.json · ", "b.json · ", "(leader)"] {
        assert!(fsync.contains(label), "{label}: {fsync}");
    }
    assert!(svg_titled(&html, "WAL fsync p99").contains("(leader)"));
    for file in ["overlay-p99.svg", "overlay-throughput.svg", "overlay-latency-by-keys.svg"] {
        let svg = std::fs::read_to_string(plots.join(file)).unwrap();
        assert!(svg.starts_with("<svg"), "{file}");
        assert!(svg.contains("a.json") && svg.contains("b.json"), "{file}: {svg}");
    }

    // Merged, the shards are one run: its page and its plots.
    let merged_page = dir.path().join("merged.html");
    let merged_plots = dir.path().join("merged-plots");
    etcdlat()
        .args(["--quiet", "merge"])
        .args([&a, &b])
        .arg("--html")
        .arg(&merged_page)
        .arg("--plots")
        .arg(&merged_plots)
        .assert()
        .success();
    let html = std::fs::read_to_string(&merged_page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("1 run "), "one merged run");
    assert!(svg_titled(&html, "throughput").contains("<polyline"), "a line drawn");
    assert!(merged_plots.join("1-put-latency.svg").is_file());
    assert!(!merged_plots.join("overlay-p99.svg").exists(), "one run: nothing to overlay");

    // Paths that cannot be written: exit 2, one line, nothing read or written.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("out.html");
    for command in ["compare", "merge"] {
        let out = etcdlat().arg(command).args([&a, &b]).arg("--html").arg(&under_file).output();
        refused_naming(&out.unwrap(), "--html");
        let out = etcdlat().arg(command).args([&a, &b]).arg("--plots").arg(&file).output();
        refused_naming(&out.unwrap(), "--plots");
    }
}
