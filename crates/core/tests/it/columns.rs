//! Runs side by side (`render::columns`), on the fixed reports of [`crate::fixture`]: a
//! column per run under a header that tells the runs apart, dbtester's rows in its order
//! with each run's figures as its study writes them, a figure a run cannot know as `n/a`
//! (never 0) with why.

use etcdlat_core::Report;
use etcdlat_core::render::columns::Columns;
use etcdlat_core::report::Row;

use crate::fixture::{mixed_interrupted_report, put_report, range_report};

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
    assert_eq!(table.headers, [["clients=100", "etcd 3.5.17"], ["clients=10", "etcd 3.6.14"]]);
    assert_eq!(table.label(1), "clients=10 · etcd 3.6.14");

    // One scenario in two files: the files, and the versions where they differ.
    let [a, b] = matrix_runs();
    let (mut a, mut b) = (a, b);
    a.name = "range-s".to_owned();
    b.name = "range-s".to_owned();
    let (first, second) = (vec![a.clone()], vec![b.clone()]);
    let files = Columns::of_files([("v3.5.json", &first[..]), ("v3.6.json", &second[..])]);
    assert_eq!(files.corner, "range-s");
    assert_eq!(files.headers, [["v3.5.json", "etcd 3.5.17"], ["v3.6.json", "etcd 3.6.14"]]);

    // The same run twice, nothing to tell: numbered.
    b.target.etcd_version = a.target.etcd_version.clone();
    assert_eq!(Columns::new([&a, &b]).headers, [["run 1"], ["run 2"]]);
    // A version the members did not say.
    b.target.etcd_version.clear();
    assert_eq!(Columns::new([&a, &b]).headers[1], ["etcd unknown"]);
}

#[test]
fn markdown_escapes_pipes_in_names() {
    let [mut a, b] = matrix_runs();
    a.name = "range-s [key=a|b]".to_owned();
    let markdown = Columns::new([&a, &b]).markdown();
    assert!(markdown.starts_with("| range-s | key=a\\|b · etcd 3.5.17 |"), "{markdown}");
}
