//! Runs side by side (`render::columns`, `render::overlay`, the HTML page's section), on the
//! fixed reports of [`crate::fixture`]: a column per run under a header that tells the runs
//! apart, dbtester's rows in its order with each run's figures as its study writes them, a
//! figure a run cannot know as `n/a` (never 0) with why, and plots with a line per run.

use etcdlat_core::report::Row;
use etcdlat_core::{Report, ReportSet};
use etcdlat_render::columns::Columns;
use etcdlat_render::{self as render, overlay};

use crate::fixture::{mixed_interrupted_report, put_report, range_report};
use crate::plot::{all_text, parse, polylines, svg_outline, texts};

/// Two runs of one matrix over `load.clients`, on two etcd versions: the range run with every
/// figure known, and the same with other figures (fewer requests, another version).
fn matrix_runs() -> [Report; 2] {
    let mut a = range_report();
    a.name = "range-s [clients=100]".to_owned();
    let mut b = range_report();
    b.name = "range-s [clients=10]".to_owned();
    b.target.etcd_version = "3.6.14".to_owned();
    for m in &mut b.server {
        for s in &mut m.resources.samples {
            s.cpu_percent = s.cpu_percent.map(|c| c * 2.0);
            s.cpu_max_percent = s.cpu_max_percent.map(|c| c * 2.0);
        }
    }
    [a, b]
}

/// Three runs of different scenarios on one version: a put run that measured neither the
/// server nor itself (its server and client figures unknown), the range run with every
/// figure, and the interrupted run of two kinds.
fn three_runs() -> [Report; 3] {
    [put_report(), range_report(), mixed_interrupted_report()]
}

/// The cells of the text table's body: each line's cells between its `│`s, trimmed.
fn text_cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .filter(|l| l.starts_with('│'))
        .map(|l| {
            let inner = l.trim_start_matches('│').trim_end_matches('│');
            inner.split('│').map(|c| c.trim().to_owned()).collect()
        })
        .collect()
}

/// The cells of a markdown table's rows, the alignment row left out.
fn markdown_cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("| ---"))
        .map(|l| {
            let inner = l.trim_start_matches('|').trim_end_matches('|');
            inner.split(" | ").map(|c| c.trim().to_owned()).collect()
        })
        .collect()
}

#[test]
fn text_of_two_runs_of_a_matrix_over_versions() {
    insta::assert_snapshot!(Columns::new(&matrix_runs()).text());
}

#[test]
fn markdown_of_two_runs_of_a_matrix_over_versions() {
    insta::assert_snapshot!(Columns::new(&matrix_runs()).markdown());
}

#[test]
fn text_of_three_runs_with_unknown_figures() {
    insta::assert_snapshot!(Columns::new(&three_runs()).text());
}

#[test]
fn markdown_of_three_runs_with_unknown_figures() {
    insta::assert_snapshot!(Columns::new(&three_runs()).markdown());
}

#[test]
fn every_run_is_a_column_and_every_figure_a_row_with_the_runs_own_figures() {
    let runs = three_runs();
    let studies: Vec<_> = runs.iter().map(Report::study).collect();
    let text = Columns::new(&runs).text();
    let rows = text_cells(&text);
    // The header, then dbtester's rows in its order.
    assert_eq!(rows.len(), 1 + Row::ALL.len(), "{text}");
    assert_eq!(rows[0], ["", "put-256b", "range-s", "mixed"]);
    for (cells, row) in rows[1..].iter().zip(Row::ALL) {
        assert_eq!(cells.len(), 1 + runs.len(), "{text}");
        assert_eq!(cells[0], row.label());
        for (cell, study) in cells[1..].iter().zip(&studies) {
            assert_eq!(*cell, study.cell(row), "{}", row.label());
        }
    }
    // Every line of the box is as wide as the others.
    let widths: Vec<usize> = text.lines().take(3 + rows.len()).map(|l| l.chars().count()).collect();
    assert!(widths.iter().all(|w| *w == widths[0]), "{widths:?}\n{text}");

    let markdown = Columns::new(&runs).markdown();
    assert_eq!(markdown_cells(&markdown), rows, "the markdown holds the same cells");
}

#[test]
fn a_figure_a_run_cannot_know_is_unknown_with_why_never_zero() {
    let runs = three_runs();
    let table = Columns::new(&runs);
    let put = 0;
    let server_rx = table.rows.iter().find(|f| f.row == Row::ServerNetworkRx).unwrap();
    assert_eq!(server_rx.cells[put].text, "n/a");
    let why = server_rx.cells[put].why_unknown.as_deref().unwrap();
    assert!(why.contains("not sampled"), "{why}");
    // The range run measured it: its figure, not n/a.
    assert_eq!(server_rx.cells[1].why_unknown, None);
    assert_ne!(server_rx.cells[1].text, "n/a");
    // No unknown figure of the put run is written as a number.
    let study = runs[put].study();
    for figures in &table.rows {
        let cell = &figures.cells[put];
        assert_eq!(cell.text == "n/a", study.value(figures.row).is_none(), "{:?}", figures.row);
        assert_eq!(cell.why_unknown.is_some(), cell.text == "n/a");
    }
    // The notes say why, naming the figures and the runs.
    let notes = table.notes();
    let note = notes.iter().find(|n| n.contains("SERVER-TOTAL-NETWORK-RX-DATA-SUM")).unwrap();
    assert!(note.contains("(put-256b; mixed)") && note.ends_with(why), "{note}");
    assert!(table.text().contains("n/a:\n"));
    assert!(table.markdown().contains("\nn/a:\n\n- "));
    // Runs that know everything have nothing to explain.
    assert!(Columns::new(&matrix_runs()).notes().is_empty());
}

#[test]
fn headers_tell_the_runs_apart() {
    // One matrix: its name heads the first column, each run its values; the versions differ.
    let table = Columns::new(&matrix_runs());
    assert_eq!(table.corner, "range-s");
    assert_eq!(
        table.headers,
        [["clients=100", "etcd 3.5.17 (go1.23.4)"], ["clients=10", "etcd 3.6.14 (go1.23.4)"]]
    );
    assert_eq!(table.label(1), "clients=10 · etcd 3.6.14 (go1.23.4)");

    // One scenario in two files: the files, and the versions where they differ.
    let [a, b] = matrix_runs();
    let (mut a, mut b) = (a, b);
    a.name = "range-s".to_owned();
    b.name = "range-s".to_owned();
    let (first, second) = (vec![a.clone()], vec![b.clone()]);
    let files = Columns::of_files([("v3.5.json", &first[..]), ("v3.6.json", &second[..])]);
    assert_eq!(files.corner, "range-s");
    assert_eq!(
        files.headers,
        [["v3.5.json", "etcd 3.5.17 (go1.23.4)"], ["v3.6.json", "etcd 3.6.14 (go1.23.4)"]]
    );

    // The same run twice, nothing to tell: numbered.
    b.target.etcd_version = a.target.etcd_version.clone();
    assert_eq!(Columns::new([&a, &b]).headers, [["run 1"], ["run 2"]]);
    // One version built by two Go toolchains: two servers, each header says its Go.
    b.target.go_version = "go1.19.8".to_owned();
    let two_compilers = Columns::new([&a, &b]);
    assert_eq!(
        two_compilers.headers,
        [["etcd 3.5.17 (go1.23.4)"], ["etcd 3.5.17 (go1.19.8)"]],
        "the same version by another Go"
    );
    // A version the members did not say, nor their Go.
    b.target.etcd_version.clear();
    b.target.go_version.clear();
    assert_eq!(Columns::new([&a, &b]).headers[1], ["etcd unknown"]);
}

#[test]
fn markdown_escapes_pipes_in_names() {
    let [mut a, b] = matrix_runs();
    a.name = "range-s [key=a|b]".to_owned();
    let markdown = Columns::new([&a, &b]).markdown();
    assert!(markdown.starts_with("| range-s | key=a\\|b · etcd 3.5.17 (go1.23.4) |"), "{markdown}");
}

#[test]
fn html_puts_several_runs_side_by_side_with_plots_that_overlay_them() {
    let runs = three_runs();
    let page = render::html(&ReportSet::new(runs.to_vec()));
    let doc = parse(&page);
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("side-by-side"))
        .expect("a side-by-side section");
    let nav =
        doc.descendants().find(|n| n.attribute("href") == Some("#side-by-side")).map(all_text);
    assert_eq!(nav.as_deref(), Some("Runs side by side"));

    let table = section.descendants().find(|n| n.has_tag_name("table")).unwrap();
    assert_eq!(table.attribute("class"), Some("columns"));
    let head: Vec<String> = table
        .descendants()
        .find(|n| n.has_tag_name("thead"))
        .unwrap()
        .descendants()
        .filter(|n| n.has_tag_name("th"))
        .map(all_text)
        .collect();
    assert_eq!(head, ["", "put-256b", "range-s", "mixed"]);
    let body: Vec<roxmltree::Node<'_, '_>> = table
        .descendants()
        .find(|n| n.has_tag_name("tbody"))
        .unwrap()
        .children()
        .filter(|n| n.has_tag_name("tr"))
        .collect();
    assert_eq!(body.len(), Row::ALL.len());
    let studies: Vec<_> = runs.iter().map(Report::study).collect();
    for (tr, row) in body.iter().zip(Row::ALL) {
        let th = tr.children().find(|n| n.has_tag_name("th")).map(all_text);
        assert_eq!(th.as_deref(), Some(row.label()));
        let tds: Vec<roxmltree::Node<'_, '_>> =
            tr.children().filter(|n| n.has_tag_name("td")).collect();
        assert_eq!(tds.len(), runs.len());
        for (td, study) in tds.iter().zip(&studies) {
            assert_eq!(all_text(*td), study.cell(row));
            // An unknown figure says why on hover.
            assert_eq!(td.attribute("title"), study.why_unknown(row), "{}", row.label());
        }
    }

    let plots: Vec<String> = section
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .map(|svg| svg.descendants().find(|d| d.has_tag_name("text")).map(all_text).unwrap())
        .map(|t| t.trim().to_owned())
        .collect();
    // Only the range run sampled its members; the put runs wrote keys, with failures.
    assert_eq!(
        plots,
        [
            "throughput per interval",
            "p99 latency per interval",
            "members' average CPU",
            "members' average resident memory",
            "mean latency by keys written",
        ]
    );

    // One run: no section.
    let one = render::html(&ReportSet::new(vec![put_report()]));
    assert!(!one.contains("side-by-side"));
}

/// The colors of the first runs' lines, as the SVG writes them.
const RUN_STROKES: [&str; 3] = ["#1F77B4", "#FF7F0E", "#2CA02C"];

#[test]
fn overlays_have_a_line_per_run_in_a_color_of_its_own() {
    let runs = three_runs();
    let labelled: Vec<overlay::Run<'_>> =
        ["put", "range", "mixed"].into_iter().zip(&runs).collect();
    let svg = overlay::throughput_over_time(&labelled);
    insta::assert_snapshot!(svg_outline(&svg));
    let doc = parse(&svg);
    let legend: Vec<String> =
        texts(&doc).into_iter().filter(|t| !t.starts_with(char::is_numeric)).collect();
    assert_eq!(
        legend,
        [
            "throughput per interval",
            "requests per second",
            "time since start (s)",
            "put",
            "range",
            "mixed"
        ]
    );
    for (stroke, run) in RUN_STROKES.iter().zip(&runs) {
        let lines = polylines(&doc, stroke);
        assert_eq!(lines.len(), 2, "{stroke}: a line and its legend mark");
        let intervals = run.ops.values().map(|o| o.intervals.len()).max().unwrap();
        assert_eq!(lines[0].len(), intervals, "{stroke}: a point per interval");
    }

    // p99: the mixed run has no load figures of its own (two kinds, no `all`): no line, but
    // its place in the legend.
    let doc_text = overlay::p99_over_time(&labelled);
    let doc = parse(&doc_text);
    assert_eq!(polylines(&doc, RUN_STROKES[0])[0].len(), 3);
    assert_eq!(polylines(&doc, RUN_STROKES[1])[0].len(), 2);
    assert_eq!(polylines(&doc, RUN_STROKES[2]).len(), 1, "the legend mark alone");

    // Only the range run sampled its members: one line of CPU; none sampled, no plot.
    let cpu = overlay::server_cpu_over_time(&labelled).expect("a run sampled its members");
    let doc = parse(&cpu);
    assert_eq!(polylines(&doc, RUN_STROKES[1])[0].len(), 2, "a point per sample");
    assert_eq!(polylines(&doc, RUN_STROKES[0]).len(), 1);
    let unsampled = [("put", &runs[0])];
    assert_eq!(overlay::server_cpu_over_time(&unsampled), None);
    assert_eq!(overlay::server_memory_over_time(&unsampled), None);
}

#[test]
fn by_keys_the_runs_that_wrote_are_drawn_with_their_failures_crossed() {
    let mut put = put_report();
    put.server = range_report().server;
    let range = range_report();
    let labelled = [("put", &put), ("range", &range)];

    let svg = overlay::latency_by_keys(&labelled).expect("a run wrote keys");
    insta::assert_snapshot!(svg_outline(&svg));
    let doc = parse(&svg);
    // The put run's line has a point per interval; the range run wrote nothing: no line.
    assert_eq!(polylines(&doc, RUN_STROKES[0])[0].len(), 3);
    assert_eq!(polylines(&doc, RUN_STROKES[1]).len(), 1, "the legend mark alone");
    // The put run failed requests in its first and last intervals: a cross (two strokes)
    // on each, and one in the legend.
    let crosses = doc
        .descendants()
        .filter(|n| n.has_tag_name("line") && n.attribute("stroke") == Some(RUN_STROKES[0]))
        .count();
    assert_eq!(crosses, 2 * 3);
    assert!(texts(&doc).iter().any(|t| t == "put: failed requests"));

    // Memory by keys: a point per sample of the members.
    let svg = overlay::server_memory_by_keys(&labelled).expect("sampled and written");
    let doc = parse(&svg);
    assert_eq!(polylines(&doc, RUN_STROKES[0])[0].len(), 2);
    assert!(texts(&doc).iter().any(|t| t == "members' average resident memory by keys written"));

    // Nothing written, or the members of no run that wrote sampled: no plot by keys.
    assert_eq!(overlay::latency_by_keys(&[("range", &range)]), None);
    assert_eq!(overlay::server_memory_by_keys(&[("range", &range)]), None);
    let unsampled = put_report();
    assert_eq!(overlay::server_memory_by_keys(&[("put", &unsampled), ("range", &range)]), None);
}

/// A matrix of two cells run three times each, in rotation, the throughput 1% higher each
/// repeat: a column per cell, each figure the mean ± its Student's t interval, each
/// operation's figures after dbtester's, and the order the runs ran in; in text, markdown
/// and the HTML page.
#[test]
fn repeats_are_columns_of_cells_with_intervals_and_the_order() {
    let mut runs = Vec::new();
    for repetition in 1..=3u32 {
        for (clients, base) in [(100, 0), (10, 1)] {
            let mut run = matrix_runs()[base].clone();
            let axes: toml::Table =
                toml::from_str(&format!("\"load.clients\" = {clients}\n")).unwrap();
            run.name = format!("{} #{repetition}", run.name);
            run.matrix = Some(etcdlat_core::MatrixCell { axes, repetition, repeat: 3 });
            for op in run.ops.values_mut() {
                op.throughput *= 1.0 + 0.01 * f64::from(repetition);
            }
            runs.push(run);
        }
    }
    let table = Columns::new(&runs);
    assert_eq!(table.corner, "range-s");
    assert_eq!(
        table.headers,
        [
            ["clients=100", "etcd 3.5.17 (go1.23.4)", "3 runs"],
            ["clients=10", "etcd 3.6.14 (go1.23.4)", "3 runs"]
        ]
    );
    // The first cell's mean throughput and its interval, computed here: t(0.975, 2) = 4.3027.
    let values: Vec<f64> =
        [0, 2, 4].iter().map(|&i| runs[i].study().throughput_avg_per_s.unwrap()).collect();
    let mean = values.iter().sum::<f64>() / 3.0;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let half = 4.302_652_73 * sd / 3f64.sqrt();
    let row = table.rows.iter().find(|f| f.row == Row::AvgThroughput).unwrap();
    let expected =
        format!("{} ± {}", Row::AvgThroughput.format(mean), Row::AvgThroughput.format(half));
    assert_eq!(row.cells[0].text, expected);
    // A figure every repeat had the same: an interval of 0.
    let total = table.rows.iter().find(|f| f.row == Row::TotalRequests).unwrap();
    assert!(total.cells[0].text.ends_with(" ± 0"), "{:?}", total.cells[0]);
    // Each operation's figures follow dbtester's.
    let kinds: Vec<String> =
        table.op_rows.iter().map(|f| format!("{} {}", f.kind, f.figure.title())).collect();
    assert!(kinds.contains(&"range Throughput (ops/s)".to_owned()), "{kinds:?}");
    assert!(table.op_rows.iter().all(|f| f.cells.len() == 2 && f.cells[0].text.contains(" ± ")));

    let text = table.text();
    let cells = text_cells(&text);
    let avg = cells.iter().find(|r| r[0] == "AVG-THROUGHPUT").unwrap();
    assert_eq!(avg[1], expected);
    assert!(cells.iter().any(|r| r[0] == "range p99"), "{text}");
    assert!(text.contains("order: interleaved (1 2 1 2 1 2)"), "{text}");
    assert!(text.contains("Student's t"), "{text}");
    let markdown = table.markdown();
    let rows = markdown_cells(&markdown);
    assert_eq!(
        rows[0],
        [
            "range-s",
            "clients=100 · etcd 3.5.17 (go1.23.4) · 3 runs",
            "clients=10 · etcd 3.6.14 (go1.23.4) · 3 runs"
        ]
    );
    assert!(rows.iter().any(|r| r[0] == "AVG-THROUGHPUT" && r[1] == expected), "{markdown}");
    assert!(markdown.contains("- order: interleaved (1 2 1 2 1 2)"), "{markdown}");
    let page = render::html(&ReportSet::new(runs));
    assert!(page.contains(&expected) && page.contains("order: interleaved"), "{page}");
}
