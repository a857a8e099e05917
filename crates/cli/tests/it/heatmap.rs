//! `--heatmap`: a 2 × 2 matrix run twice per cell against a real etcd draws each cell as the
//! median of its two runs' figures in the JSON report; `compare --heatmap` of two such
//! reports draws each cell's change in percent; and a heatmap of anything but a matrix over
//! two axes is refused with exit 2 and one line, before anything starts or is written.

use std::collections::BTreeMap;
use std::path::Path;

use etcdlat_testkit::Etcd;
use serde_json::Value;

use crate::bad_input::error_line;
use crate::drawn::{cells, value};
use crate::{etcdlat, read_report};

/// The matrix: rows `load.clients`, columns `op.put.val-size`, each cell run twice.
const MATRIX: &str = "name = \"hm\"\n[load]\ntotal = 200\nconns = 2\n[op.put]\nkey-space-size = 1000\n\
     [matrix]\n\"load.clients\" = [1, 4]\n\"op.put.val-size\" = [64, 256]\nrepeat = 2\n";
const CLIENTS: [u64; 2] = [1, 4];
const VAL_SIZES: [u64; 2] = [64, 256];

/// Runs [`MATRIX`] against `etcd`, its JSON report to `dir/name`, the heatmaps to
/// `dir/heatmap`; returns the report.
fn run_matrix(etcd: &Etcd, dir: &Path, name: &str, heatmap: &str) -> Value {
    std::fs::write(dir.join("hm.toml"), MATRIX).unwrap();
    etcdlat()
        .current_dir(dir)
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .args(["--quiet", "run", "hm.toml", "--json", name, "--heatmap", heatmap])
        .assert()
        .success();
    read_report(&dir.join(name))
}

/// Every text of an SVG.
fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_owned())
        .collect()
}

/// The figure at `pointer` of every run, by cell (clients, value size), as the JSON report
/// has them, after checking that each cell has its two repetitions.
fn by_cell(report: &Value, pointer: &str) -> BTreeMap<(u64, u64), Vec<f64>> {
    let mut cells: BTreeMap<(u64, u64), Vec<f64>> = BTreeMap::new();
    for run in report["runs"].as_array().expect("runs") {
        let matrix = &run["matrix"];
        let axes = matrix["axes"].as_object().expect("each run records its cell");
        let keys: Vec<&str> = axes.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 2, "{matrix}");
        let cell =
            (axes["load.clients"].as_u64().unwrap(), axes["op.put.val-size"].as_u64().unwrap());
        assert_eq!(matrix["repeat"], 2, "{matrix}");
        let figure = run.pointer(pointer).and_then(Value::as_f64).expect("a figure");
        cells.entry(cell).or_default().push(figure);
    }
    assert_eq!(cells.len(), 4);
    assert!(cells.values().all(|runs| runs.len() == 2), "{cells:?}");
    cells
}

/// The median of two: their mean.
fn median(runs: &[f64]) -> f64 {
    (runs[0] + runs[1]) / 2.0
}

#[tokio::test]
async fn a_matrix_run_twice_per_cell_draws_the_medians_of_its_reports() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let before = etcd.revision().await;
    let report = run_matrix(&etcd, dir.path(), "r.json", "hm.svg");
    // Eight runs of 200 puts each reached the server.
    assert_eq!(etcd.revision().await - before, 8 * 200);
    let names: Vec<&str> =
        report["runs"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    // The repeats run in rotation: every cell once, then every cell again.
    assert_eq!(
        names[..5],
        [
            "hm [clients=1, val-size=64] #1",
            "hm [clients=1, val-size=256] #1",
            "hm [clients=4, val-size=64] #1",
            "hm [clients=4, val-size=256] #1",
            "hm [clients=1, val-size=64] #2"
        ]
    );

    let svg = std::fs::read_to_string(dir.path().join("hm.svg")).unwrap();
    let drawn = cells(&svg);
    assert_eq!(drawn.len(), 2 * 4, "two panels of four cells: {drawn:#?}");
    let throughput = by_cell(&report, "/ops/put/throughput");
    let p99_us = by_cell(&report, "/ops/put/latency_us/p99");
    for (i, cell) in drawn[..4].iter().enumerate() {
        // Rows are the clients, top down; columns the value sizes.
        let key = (CLIENTS[i / 2], VAL_SIZES[i % 2]);
        let expected = median(&throughput[&key]);
        assert!(
            (value(&cell.text) - expected).abs() <= 0.05,
            "cell {key:?} reads {:?}; its runs' throughputs are {:?}",
            cell.text,
            throughput[&key]
        );
    }
    for (i, cell) in drawn[4..].iter().enumerate() {
        let key = (CLIENTS[i / 2], VAL_SIZES[i % 2]);
        let expected_ms = median(&p99_us[&key]) / 1e3;
        // Three decimals: within half of the last one, and a median of two whole
        // microseconds can sit exactly on that half.
        assert!(
            (value(&cell.text) - expected_ms).abs() <= 5e-4 + 1e-9,
            "cell {key:?} reads {:?}; its runs' p99s are {:?} µs",
            cell.text,
            p99_us[&key]
        );
    }
    let texts = texts(&svg);
    for label in ["load.clients", "op.put.val-size", "1", "4", "64", "256"] {
        assert!(texts.iter().any(|t| t == label), "{label:?} in {texts:?}");
    }
    assert!(texts.iter().any(|t| t == "hm: put throughput (ops/s)"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "median of 2 runs per cell"), "{texts:?}");
}

#[tokio::test]
async fn compare_draws_each_cells_change_from_one_report_to_the_other() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let base = run_matrix(&etcd, dir.path(), "base.json", "base.svg");
    // The new report: a quarter more throughput with one client, half as much with four.
    let mut new = base.clone();
    for run in new["runs"].as_array_mut().unwrap() {
        let factor = if run["matrix"]["axes"]["load.clients"] == 1 { 1.25 } else { 0.5 };
        let throughput = &mut run["ops"]["put"]["throughput"];
        *throughput = Value::from(throughput.as_f64().unwrap() * factor);
    }
    std::fs::write(dir.path().join("new.json"), new.to_string()).unwrap();

    let out = etcdlat()
        .current_dir(dir.path())
        .args(["compare", "base.json", "new.json", "--heatmap", "diff", "--markdown", "c.md"])
        .assert()
        .success();
    assert!(!out.get_output().stdout.is_empty(), "the comparison is printed as before");
    let throughput = std::fs::read_to_string(dir.path().join("diff/put-throughput.svg")).unwrap();
    let drawn = cells(&throughput);
    let changes: Vec<&str> = drawn.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(changes, ["+25.0%", "+25.0%", "-50.0%", "-50.0%"]);
    let (gain, loss) = (drawn[0].rgb(), drawn[3].rgb());
    assert!(gain.2 > gain.0 && loss.0 > loss.2, "more throughput blue, less red: {drawn:?}");
    assert!(
        texts(&throughput).iter().any(|t| t == "hm: change in put throughput (%)"),
        "{:?}",
        texts(&throughput)
    );
    let p99 = std::fs::read_to_string(dir.path().join("diff/put-p99.svg")).unwrap();
    let drawn: Vec<String> = cells(&p99).into_iter().map(|c| c.text).collect();
    assert_eq!(drawn, ["+0.0%"; 4], "latency unchanged");
    assert!(dir.path().join("c.md").is_file());

    // A report whose matrix lost an axis cannot be compared cell by cell: nothing written.
    let mut one_axis = base.clone();
    for run in one_axis["runs"].as_array_mut().unwrap() {
        run["matrix"]["axes"].as_object_mut().unwrap().remove("op.put.val-size");
    }
    std::fs::write(dir.path().join("one.json"), one_axis.to_string()).unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["compare", "base.json", "one.json", "--heatmap", "bad.svg", "--json", "c.json"])
        .output()
        .unwrap();
    let line = error_line("compare --heatmap of a one-axis report", &out);
    assert!(line.contains("--heatmap: the matrix has one axis (load.clients)"), "{line}");
    assert!(!dir.path().join("bad.svg").exists() && !dir.path().join("c.json").exists());
}

#[test]
fn a_heatmap_of_anything_but_a_two_axis_matrix_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |name: &str, matrix: &str| {
        let text = format!("name = \"{name}\"\n[load]\ntotal = 10\n[op.put]\n{matrix}");
        std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap();
        format!("{name}.toml")
    };
    let one = scenario("one", "[matrix]\n\"load.clients\" = [1, 2]\nrepeat = 2\n");
    let three = scenario(
        "three",
        "[matrix]\n\"load.clients\" = [1, 2]\n\"op.put.val-size\" = [8, 16]\ntarget = [\"leader\"]\n",
    );
    let two =
        scenario("two", "[matrix]\n\"load.clients\" = [1, 2]\n\"op.put.val-size\" = [8, 16]\n");
    let cases: [(&str, Vec<&str>, &str); 5] = [
        (
            "a one-axis matrix",
            vec!["run", &one, "--heatmap", "hm.svg"],
            "--heatmap: the matrix has one axis (load.clients): a heatmap needs two",
        ),
        (
            "a three-axis matrix",
            vec!["run", &three, "--heatmap", "hm.svg"],
            "--heatmap: the matrix has 3 axes (load.clients, op.put.val-size, target)",
        ),
        (
            "no matrix",
            vec!["--local", "put", "--total=10", "--heatmap", "hm.svg"],
            "--heatmap: \"put\" is not a run of a [matrix]",
        ),
        (
            "two matrices",
            vec!["run", &two, &one, "--heatmap", "hm.svg"],
            "--heatmap: the runs are of matrices over different axes",
        ),
        ("standard output", vec!["run", &two, "--heatmap", "-"], "--heatmap writes SVG files"),
    ];
    for (what, args, needle) in cases {
        // No etcd to start: had anything started, the error would be another.
        let out = etcdlat()
            .current_dir(dir.path())
            .env("ETCD_BIN", "/nonexistent/etcd")
            .args(&args)
            .output()
            .unwrap();
        let line = error_line(what, &out);
        assert!(line.contains(needle), "{what}: {needle:?} in {line:?}");
        assert!(!dir.path().join("hm.svg").exists(), "{what}: nothing written");
    }
}
