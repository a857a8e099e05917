//! Heatmaps of a matrix over two axes ([`etcdlat_render::heatmap`]), on fixed reports:
//! the runs of a 2 × 3 matrix of reads and writes, three repetitions per cell, with figures
//! set from the cell and the repetition so that a cell's median differs from its mean.
//!
//! The SVG is parsed, not compared as pixels: its outline is snapshotted, and each cell is
//! read back ([`crate::drawn`]) and checked against the median the reports give, as are the axes' names and values, the colours of a change, and the
//! page of a matrix.

use etcdlat_core::{Distribution, MatrixCell, OpKind, Report, ReportSet};
use etcdlat_render as render;
use etcdlat_render::heatmap::{self, HeatmapError, Scale};

use crate::drawn::{cells, value};
use crate::fixture::{put_report, range_report};
use crate::plot::{all_text, parse, svg_outline};

const ROWS: [f64; 2] = [1.0, 9.0];
const COLUMNS: [i64; 3] = [256, 1024, 4096];
const ROW_AXIS: &str = "op.txn-mixed.rw-ratio";
const COLUMN_AXIS: &str = "op.txn-mixed.val-size";

/// How far each repetition is from the cell's figure: the median is the figure, the mean
/// is not.
const OFFSETS: [f64; 3] = [0.0, 50.0, -20.0];

/// A latency distribution of 100 requests of `us` each (exact below 2,048 µs).
fn latency(us: u64) -> Distribution {
    let mut h = etcdlat_core::recorder::new_histogram();
    h.record_n(us, 100).unwrap();
    Distribution::new(h)
}

/// The reads' throughput of cell (row, column), before the repetition's offset.
fn reads(row: usize, column: usize) -> f64 {
    1_000.0 * (row + 1) as f64 * (3 - column) as f64
}

/// The writes' throughput of cell (row, column), before a tenth of the offset.
fn writes(row: usize, column: usize) -> f64 {
    2_000.0 / (row + 1) as f64 / (column + 1) as f64
}

/// Repetition `rep` (from 0) of cell (row, column): ranges and puts, its figures set.
fn rw_run(row: usize, column: usize, rep: usize) -> Report {
    let mut run = put_report();
    run.ops.insert(OpKind::Range, range_report().op(OpKind::Range).clone());
    let axes = [
        (ROW_AXIS.to_owned(), toml::Value::Float(ROWS[row])),
        (COLUMN_AXIS.to_owned(), toml::Value::Integer(COLUMNS[column])),
    ];
    run.matrix = Some(MatrixCell {
        axes: axes.into_iter().collect(),
        repetition: rep as u32 + 1,
        repeat: 3,
    });
    run.name = format!("rw [rw-ratio={:?}, val-size={}] #{}", ROWS[row], COLUMNS[column], rep + 1);
    let range = run.ops.get_mut(&OpKind::Range).unwrap();
    range.throughput = reads(row, column) + OFFSETS[rep];
    range.latency = latency(300 + 100 * row as u64 + 10 * column as u64 + rep as u64);
    let put = run.ops.get_mut(&OpKind::Put).unwrap();
    put.throughput = writes(row, column) + OFFSETS[rep] / 10.0;
    put.latency = latency(1_200 + 200 * row as u64 + 20 * column as u64 + rep as u64);
    run
}

/// Every run of the matrix, in the order a matrix runs them.
fn rw_matrix() -> Vec<Report> {
    let mut runs = Vec::new();
    for row in 0..ROWS.len() {
        for column in 0..COLUMNS.len() {
            for rep in 0..OFFSETS.len() {
                runs.push(rw_run(row, column, rep));
            }
        }
    }
    runs
}

#[test]
fn heatmap_outline() {
    let maps = heatmap::of_runs(&rw_matrix()).unwrap();
    insta::assert_snapshot!(svg_outline(&heatmap::svg(&maps)));
}

#[test]
fn cells_hold_the_median_of_their_runs() {
    let maps = heatmap::of_runs(&rw_matrix()).unwrap();
    let figures: Vec<(&str, &str, &str)> =
        maps.iter().map(|m| (m.figure.as_str(), m.unit, m.slug.as_str())).collect();
    assert_eq!(
        figures,
        [
            ("read throughput", "ops/s", "read-throughput"),
            ("write throughput", "ops/s", "write-throughput"),
            ("read p99 latency", "ms", "read-p99"),
            ("write p99 latency", "ms", "write-p99"),
        ]
    );
    let read = &maps[0];
    assert_eq!((read.rows.name.as_str(), read.columns.name.as_str()), (ROW_AXIS, COLUMN_AXIS));
    assert_eq!(read.rows.values, ["1.0", "9.0"]);
    assert_eq!(read.columns.values, ["256", "1024", "4096"]);
    assert_eq!((read.matrix.as_str(), read.note.as_str()), ("rw", "median of 3 runs per cell"));
    for (row, cells) in read.cells.iter().enumerate() {
        for (column, cell) in cells.iter().enumerate() {
            assert_eq!(*cell, Some(reads(row, column)), "the median, not the mean");
            assert_eq!(maps[1].cells[row][column], Some(writes(row, column)));
            // The repetitions' latencies are +0, +1 and +2 µs: the median is +1.
            let read_p99_ms = (301 + 100 * row + 10 * column) as f64 / 1e3;
            assert_eq!(maps[2].cells[row][column], Some(read_p99_ms));
        }
    }

    // As drawn: four panels of six cells, each with its value, rows top down.
    let svg = heatmap::svg(&maps);
    let drawn = cells(&svg);
    assert_eq!(drawn.len(), 4 * 6, "{drawn:#?}");
    for (figure, panel) in maps.iter().zip(drawn.chunks(6)) {
        for (i, cell) in panel.iter().enumerate() {
            let expected = figure.cells[i / 3][i % 3].unwrap();
            let tolerance = if figure.unit == "ms" { 5e-4 } else { 0.05 };
            assert!(
                (value(&cell.text) - expected).abs() <= tolerance,
                "{}: cell {i} reads {:?}, the median is {expected}",
                figure.figure,
                cell.text
            );
        }
        // A sequential scale: the highest value is drawn lightest (viridis' yellow end).
        let brightest = panel.iter().max_by_key(|c| {
            let (r, g, b) = c.rgb();
            u32::from(r) + u32::from(g) + u32::from(b)
        });
        let highest = panel.iter().max_by(|a, b| value(&a.text).total_cmp(&value(&b.text)));
        assert_eq!(brightest.map(|c| &c.text), highest.map(|c| &c.text), "{}", figure.figure);
    }
    let doc = parse(&svg);
    let texts = crate::plot::texts(&doc);
    for label in [ROW_AXIS, COLUMN_AXIS, "1.0", "9.0", "256", "1024", "4096", "ops/s", "ms"] {
        assert!(texts.iter().any(|t| t == label), "{label:?} in {texts:?}");
    }
    assert!(texts.iter().any(|t| t == "rw: read throughput (ops/s)"), "{texts:?}");
}

#[test]
fn a_cell_without_a_run_is_grey_and_single_operations_are_named() {
    let mut runs: Vec<Report> = rw_matrix();
    // The last cell's runs never finished; and only puts were sent.
    runs.retain(|r| !r.name.starts_with("rw [rw-ratio=9.0, val-size=4096]"));
    runs.truncate(runs.len() - 1);
    for run in &mut runs {
        run.ops.remove(&OpKind::Range);
    }
    let maps = heatmap::of_runs(&runs).unwrap();
    let figures: Vec<&str> = maps.iter().map(|m| m.figure.as_str()).collect();
    assert_eq!(figures, ["put throughput", "put p99 latency"]);
    assert_eq!(maps[0].note, "median of 2 to 3 runs per cell");
    assert_eq!(maps[0].cells[1][2], None);
    // Two runs left of (9.0, 1024): the mean of the middle two.
    assert_eq!(maps[0].cells[1][1], Some(writes(1, 1) + 2.5));
    let drawn = cells(&heatmap::svg(&maps));
    assert_eq!(drawn.len(), 2 * 6);
    assert_eq!((drawn[5].text.as_str(), drawn[5].fill.as_str()), ("–", "#EEEEEE"));
}

#[test]
fn a_difference_is_the_change_of_the_medians_coloured_by_better_and_worse() {
    let base = rw_matrix();
    let mut new = rw_matrix();
    for run in &mut new {
        let cell = run.matrix.as_ref().unwrap();
        let faster = cell.label(ROW_AXIS).as_deref() == Some("1.0");
        let range = run.ops.get_mut(&OpKind::Range).unwrap();
        // Reads: 50% more throughput in the first row, 20% less in the second.
        range.throughput *= if faster { 1.5 } else { 0.8 };
        // And twice the latency everywhere.
        range.latency = latency(2 * range.latency.quantile_us(0.99));
    }
    let maps = heatmap::difference(&base, &new).unwrap();
    let figures: Vec<(&str, &str)> = maps.iter().map(|m| (m.figure.as_str(), m.unit)).collect();
    assert_eq!(
        figures,
        [
            ("read throughput", "%"),
            ("write throughput", "%"),
            ("read p99 latency", "%"),
            ("write p99 latency", "%")
        ]
    );
    assert_eq!(maps[0].scale, Scale::Change { higher_is_better: true });
    assert_eq!(maps[3].scale, Scale::Change { higher_is_better: false });
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
    for column in 0..3 {
        assert!(close(maps[0].cells[0][column], 50.0), "{:?}", maps[0].cells);
        assert!(close(maps[0].cells[1][column], -20.0), "{:?}", maps[0].cells);
        assert!(close(maps[1].cells[0][column], 0.0));
        assert!(close(maps[2].cells[1][column], 100.0), "{:?}", maps[2].cells);
    }

    let svg = heatmap::svg(&maps);
    let texts = crate::plot::texts(&parse(&svg));
    assert!(texts.iter().any(|t| t == "rw: change in read p99 latency (%)"), "{texts:?}");
    let drawn = cells(&svg);
    assert_eq!(drawn.len(), 4 * 6);
    let (gain, loss, unchanged, slower) = (&drawn[0], &drawn[3], &drawn[6], &drawn[12]);
    assert_eq!(
        [&gain.text, &loss.text, &unchanged.text, &slower.text],
        ["+50.0%", "-20.0%", "+0.0%", "+100.0%"]
    );
    let (r, _, b) = gain.rgb();
    assert!(b > r, "more throughput is blue: {}", gain.fill);
    let (r, _, b) = loss.rgb();
    assert!(r > b, "less throughput is red: {}", loss.fill);
    let (r, _, b) = slower.rgb();
    assert!(r > b, "more latency is red: {}", slower.fill);
    assert_eq!(unchanged.fill, "#F7F7F7", "no change is white");
}

#[test]
fn anything_but_one_matrix_over_two_axes_is_refused_in_words() {
    let message = |runs: &[Report]| heatmap::of_runs(runs).unwrap_err().to_string();
    let with_axes = |paths: &[&str]| {
        let mut run = rw_run(0, 0, 0);
        let cell = run.matrix.as_mut().unwrap();
        cell.axes = paths.iter().map(|p| ((*p).to_owned(), toml::Value::Integer(1))).collect();
        run
    };
    assert_eq!(
        message(&[with_axes(&["load.clients"])]),
        "the matrix has one axis (load.clients): a heatmap needs two, one for its rows and one for its columns"
    );
    assert_eq!(
        message(&[with_axes(&["a", "b", "c"])]),
        "the matrix has 3 axes (a, b, c): a heatmap needs exactly two"
    );
    assert_eq!(
        message(&[with_axes(&[])]),
        "the matrix has no axis (only repeat): a heatmap needs a matrix over two axes"
    );
    assert_eq!(
        message(&[put_report()]),
        "\"put-256b\" is not a run of a [matrix]: a heatmap draws the runs of a matrix over two axes"
    );
    assert_eq!(
        message(&[with_axes(&["a", "b"]), with_axes(&["a", "c"])]),
        "the runs are of matrices over different axes (a, b and a, c): a heatmap draws one matrix"
    );
    assert_eq!(heatmap::of_runs(&[]).unwrap_err(), HeatmapError::NoRuns);

    let base = rw_matrix();
    let fewer: Vec<Report> =
        rw_matrix().into_iter().filter(|r| !r.name.contains("val-size=4096")).collect();
    assert_eq!(
        heatmap::difference(&base, &fewer).unwrap_err().to_string(),
        "the two reports' matrices differ: the base is op.txn-mixed.rw-ratio (1.0, 9.0) × op.txn-mixed.val-size (256, 1024, 4096), the new one op.txn-mixed.rw-ratio (1.0, 9.0) × op.txn-mixed.val-size (256, 1024)"
    );
}

#[test]
fn the_page_of_a_two_axis_matrix_draws_its_heatmaps() {
    let page = render::html(&ReportSet::new(rw_matrix()));
    let doc = parse(&page);
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("heatmaps"))
        .expect("a section of heatmaps");
    let heading = section.descendants().find(|n| n.has_tag_name("h2")).map(all_text);
    assert_eq!(heading.as_deref(), Some("Heatmaps: op.txn-mixed.rw-ratio × op.txn-mixed.val-size"));
    let figures = section.descendants().filter(|n| n.has_tag_name("svg")).count();
    assert_eq!(figures, 4, "one per figure");
    // Before the runs, and each figure a document of its own with its six cells.
    let first_run = page.find("id=\"run-1\"").unwrap();
    assert!(page.find("id=\"heatmaps\"").unwrap() < first_run);
    // The runs side by side follow the heatmaps, before the runs, with plots of their own.
    let from = page.find("id=\"heatmaps\"").unwrap();
    let section = &page[from..from + page[from..].find("</section>").unwrap()];
    let svgs: Vec<&str> = section.match_indices("<svg ").map(|(at, _)| &section[at..]).collect();
    assert_eq!(svgs.len(), 4);
    for svg in svgs {
        let end = svg.find("</svg>").unwrap() + "</svg>".len();
        assert_eq!(cells(&svg[..end]).len(), 6);
    }

    // Runs of no matrix, or of one over one axis, have none.
    let mut one_axis = rw_matrix();
    for run in &mut one_axis {
        run.matrix.as_mut().unwrap().axes.remove(COLUMN_AXIS);
    }
    for runs in [vec![put_report()], one_axis] {
        assert!(!render::html(&ReportSet::new(runs)).contains("id=\"heatmaps\""));
    }
}
