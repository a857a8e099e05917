//! Heatmaps of a matrix over two axes, as etcd's `rw-heatmaps` draws its sweep of read/write
//! ratio and value size: a grid with a row per value of the matrix's first axis and a column
//! per value of its second, each cell coloured by a figure of its runs and labelled with it.
//!
//! [`of_runs`] makes one [`Heatmap`] per figure from the reports of a matrix: read throughput
//! and write throughput when the runs read and write (range and txn-read are reads; put,
//! delete, txn-put and txn-write writes), else the one operation's throughput (or all
//! operations' together); then p99 latency, split the same way. A cell holds the median of
//! its runs (a matrix's `repeat`). [`difference`] makes the same heatmaps of the change from
//! one such set of reports to another, in percent of the base. [`svg`] draws heatmaps, one
//! panel each, into one SVG document (with plotters, text as SVG `<text>`: no font file is
//! read, as in [`super::plot`]).
//!
//! A sequential scale (viridis) colours values from the lowest to the highest of the figure;
//! a change is on a diverging scale centred on 0 and symmetric, blue where the new runs did
//! better (more throughput, less latency) and red where they did worse. Each panel has a
//! legend of its scale; a cell without a value (no run of it finished, or none had a
//! successful request of the kind) is grey and reads `–`.
//!
//! ```
//! use etcdlat_render::heatmap;
//! # fn draw(runs: &[etcdlat_core::Report]) -> Result<(), heatmap::HeatmapError> {
//! let maps = heatmap::of_runs(runs)?;
//! let svg = heatmap::svg(&maps);
//! assert!(svg.starts_with("<svg"));
//! # Ok(())
//! # }
//! ```

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontTransform;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::markdown::qps;
use etcdlat_core::op::OpKind;
use etcdlat_core::report::Report;
use etcdlat_core::scenario::MatrixCell;

/// Width and height of one heatmap's panel, pixels (the document's `viewBox`, so it scales).
const PANEL: (u32, u32) = (800, 420);

/// The generic family: the viewer's own sans-serif font lays out the text.
const FONT: &str = "sans-serif";

/// The margins around the grid of cells, pixels: row labels and the rows' axis on the left,
/// the legend on the right, the title above, column labels and the columns' axis below.
const LEFT: i32 = 150;
const RIGHT: i32 = 140;
const TOP: i32 = 64;
const BOTTOM: i32 = 64;

/// Steps the legend's colour bar is drawn in.
const LEGEND_STEPS: i32 = 48;

/// Written in a cell without a value.
const MISSING: &str = "–";
const MISSING_FILL: RGBColor = RGBColor(238, 238, 238);
const GREY: RGBColor = RGBColor(90, 90, 90);

/// matplotlib's viridis at eight evenly spaced points, from low to high: perceptually even,
/// and readable in grey and by most colour-blind readers.
const VIRIDIS: [RGBColor; 8] = [
    RGBColor(68, 1, 84),
    RGBColor(70, 50, 127),
    RGBColor(54, 92, 141),
    RGBColor(39, 127, 143),
    RGBColor(31, 162, 136),
    RGBColor(74, 194, 110),
    RGBColor(160, 219, 57),
    RGBColor(254, 232, 37),
];

/// ColorBrewer's RdBu, from red (worse) through white (no change) to blue (better), as etcd's
/// rw-heatmaps colours its gains.
const RED_BLUE: [RGBColor; 11] = [
    RGBColor(103, 0, 31),
    RGBColor(178, 24, 43),
    RGBColor(214, 96, 77),
    RGBColor(244, 165, 130),
    RGBColor(253, 219, 199),
    RGBColor(247, 247, 247),
    RGBColor(209, 229, 240),
    RGBColor(146, 197, 222),
    RGBColor(67, 147, 195),
    RGBColor(33, 102, 172),
    RGBColor(5, 48, 97),
];

/// Why runs cannot be drawn as heatmaps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeatmapError {
    /// There are no runs.
    #[error("there are no runs to draw")]
    NoRuns,
    /// A run is not one of a matrix.
    #[error(
        "{run:?} is not a run of a [matrix]: a heatmap draws the runs of a matrix over two axes"
    )]
    NotAMatrix {
        /// The run's name.
        run: String,
    },
    /// The matrix does not have exactly two axes.
    #[error("{}", too_few_or_many(axes))]
    Axes {
        /// The matrix's axes, in order.
        axes: Vec<String>,
    },
    /// The runs are of matrices over different axes.
    #[error(
        "the runs are of matrices over different axes ({} and {}): a heatmap draws one matrix",
        list(first),
        list(other)
    )]
    MixedAxes {
        /// The first run's axes.
        first: Vec<String>,
        /// The axes of a run that differs.
        other: Vec<String>,
    },
    /// Two sets of runs compared are not over the same axes and values.
    #[error("the two reports' matrices differ: the base is {base}, the new one {new}")]
    DifferentGrids {
        /// The base's axes and values.
        base: String,
        /// The new set's axes and values.
        new: String,
    },
}

fn list(axes: &[String]) -> String {
    if axes.is_empty() { "none".to_owned() } else { axes.join(", ") }
}

fn too_few_or_many(axes: &[String]) -> String {
    match axes.len() {
        0 => "the matrix has no axis (only repeat): a heatmap needs a matrix over two axes"
            .to_owned(),
        1 => format!(
            "the matrix has one axis ({}): a heatmap needs two, one for its rows and one for its columns",
            axes[0]
        ),
        n => format!("the matrix has {n} axes ({}): a heatmap needs exactly two", list(axes)),
    }
}

/// The two axes of the matrix that `runs` (name and matrix cell) were expanded from: the
/// first for the rows, the second for the columns. For checking a plan before it runs, as
/// [`of_runs`] checks reports.
///
/// # Errors
/// [`HeatmapError::NoRuns`], [`HeatmapError::NotAMatrix`] for a run of no matrix,
/// [`HeatmapError::MixedAxes`] for runs of different matrices, [`HeatmapError::Axes`] when
/// the matrix does not have exactly two axes.
pub fn axes<'a>(
    runs: impl IntoIterator<Item = (&'a str, Option<&'a MatrixCell>)>,
) -> Result<[String; 2], HeatmapError> {
    let mut first: Option<Vec<String>> = None;
    for (run, cell) in runs {
        let Some(cell) = cell else {
            return Err(HeatmapError::NotAMatrix { run: run.to_owned() });
        };
        let names: Vec<String> = cell.axes.keys().cloned().collect();
        match &first {
            None => first = Some(names),
            Some(f) if *f != names => {
                return Err(HeatmapError::MixedAxes { first: f.clone(), other: names });
            }
            Some(_) => {}
        }
    }
    let names = first.ok_or(HeatmapError::NoRuns)?;
    <[String; 2]>::try_from(names).map_err(|axes| HeatmapError::Axes { axes })
}

/// One axis of a heatmap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// The matrix axis: its dotted path (`load.clients`), or `case`.
    pub name: String,
    /// Its values as run names show them, in the order the runs first took them.
    pub values: Vec<String>,
}

/// How a heatmap's values map to colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// From the lowest value to the highest (viridis).
    Sequential,
    /// A change in percent, centred on 0: blue better, red worse.
    Change {
        /// Whether a rise is better (throughput) or worse (latency).
        higher_is_better: bool,
    },
}

/// One figure of a matrix over two axes: a value per combination.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// The matrix's name (its runs' name before the values in brackets).
    pub matrix: String,
    /// What the cells hold: `read throughput`, `put p99 latency`.
    pub figure: String,
    /// The cells' unit: `ops/s`, `ms`, or `%` for a change.
    pub unit: &'static str,
    /// A name for a file of this heatmap alone: `read-throughput`, `put-p99`.
    pub slug: String,
    /// How the cells were made, drawn under the title: `median of 3 runs per cell`.
    pub note: String,
    /// The rows: the matrix's first axis.
    pub rows: Axis,
    /// The columns: the matrix's second axis.
    pub columns: Axis,
    /// Each cell's value, `cells[row][column]`; `None` where it has none.
    pub cells: Vec<Vec<Option<f64>>>,
    /// How values map to colours.
    pub scale: Scale,
}

/// A heatmap per figure of `runs`, the reports of a matrix over two axes, each cell the
/// median of its runs.
///
/// # Errors
/// As [`axes`], when the runs are not those of one matrix over two axes.
pub fn of_runs(runs: &[Report]) -> Result<Vec<Heatmap>, HeatmapError> {
    let grid = Grid::of(runs)?;
    let sizes = grid.cells.iter().flatten().map(Vec::len).filter(|n| *n > 0);
    let (fewest, most) = sizes.fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
    let note = match (fewest, most) {
        (_, 0 | 1) => "one run per cell".to_owned(),
        (lo, hi) if lo == hi => format!("median of {hi} runs per cell"),
        (lo, hi) => format!("median of {lo} to {hi} runs per cell"),
    };
    Ok(figures(runs)
        .into_iter()
        .map(|figure| Heatmap {
            matrix: grid.matrix.clone(),
            figure: figure.name(),
            unit: figure.unit(),
            slug: figure.slug(),
            note: note.clone(),
            rows: grid.rows.clone(),
            columns: grid.columns.clone(),
            cells: grid.medians(figure),
            scale: Scale::Sequential,
        })
        .collect())
}

/// A heatmap per figure of the change from `base` to `new`, the reports of two runs of one
/// matrix (two builds, versions or settings): each cell is the new median minus the base's,
/// in percent of the base's. Drawn in the base's order.
///
/// # Errors
/// As [`axes`] for either set, and [`HeatmapError::DifferentGrids`] when the two are not
/// over the same axes and values.
pub fn difference(base: &[Report], new: &[Report]) -> Result<Vec<Heatmap>, HeatmapError> {
    let (b, n) = (Grid::of(base)?, Grid::of(new)?);
    let same = |x: &Axis, y: &Axis| {
        let (mut xs, mut ys) = (x.values.clone(), y.values.clone());
        xs.sort();
        ys.sort();
        x.name == y.name && xs == ys
    };
    if !same(&b.rows, &n.rows) || !same(&b.columns, &n.columns) {
        return Err(HeatmapError::DifferentGrids { base: b.describe(), new: n.describe() });
    }
    let index = |axis: &Axis, value: &String| axis.values.iter().position(|v| v == value);
    let matrix = if b.matrix == n.matrix {
        b.matrix.clone()
    } else {
        format!("{} vs {}", b.matrix, n.matrix)
    };
    Ok(figures(base.iter().chain(new))
        .into_iter()
        .map(|figure| {
            let (before, after) = (b.medians(figure), n.medians(figure));
            let cells = b
                .rows
                .values
                .iter()
                .enumerate()
                .map(|(i, row)| {
                    b.columns
                        .values
                        .iter()
                        .enumerate()
                        .map(|(j, column)| {
                            let (ni, nj) = (index(&n.rows, row)?, index(&n.columns, column)?);
                            match (before[i][j], after[ni][nj]) {
                                (Some(b), Some(a)) if b > 0.0 => Some((a - b) / b * 100.0),
                                _ => None,
                            }
                        })
                        .collect()
                })
                .collect();
            Heatmap {
                matrix: matrix.clone(),
                figure: figure.name(),
                unit: "%",
                slug: figure.slug(),
                note: "new vs base: the change of each cell's median, in percent of the base's; blue better, red worse".to_owned(),
                rows: b.rows.clone(),
                columns: b.columns.clone(),
                cells,
                scale: Scale::Change { higher_is_better: figure.measure == Measure::Throughput },
            }
        })
        .collect())
}

/// Heatmaps drawn as one SVG document, a panel each, one under the other (a blank panel
/// when there are none).
#[must_use]
pub fn svg(maps: &[Heatmap]) -> String {
    let panels = maps.len().max(1);
    let size = (PANEL.0, PANEL.1 * panels as u32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        // The SVG backend writes into a String and never fails; nor do plotters' text
        // estimates, which read no fonts.
        let drawn = root.fill(&WHITE).and_then(|()| {
            for (area, map) in root.split_evenly((panels, 1)).iter().zip(maps) {
                draw_panel(area, map)?;
            }
            root.present()
        });
        drawn.expect("drawing an SVG into a String cannot fail");
    }
    svg
}

/// The runs of a matrix over two axes, by cell.
struct Grid<'a> {
    matrix: String,
    rows: Axis,
    columns: Axis,
    /// `cells[row][column]`: the runs of that combination.
    cells: Vec<Vec<Vec<&'a Report>>>,
}

impl<'a> Grid<'a> {
    fn of(runs: &'a [Report]) -> Result<Self, HeatmapError> {
        let [row_axis, column_axis] =
            axes(runs.iter().map(|r| (r.name.as_str(), r.matrix.as_ref())))?;
        let label = |run: &Report, axis: &str| {
            run.matrix.as_ref().and_then(|cell| cell.label(axis)).unwrap_or_default()
        };
        let mut rows = Axis { name: row_axis, values: Vec::new() };
        let mut columns = Axis { name: column_axis, values: Vec::new() };
        for run in runs {
            for axis in [&mut rows, &mut columns] {
                let value = label(run, &axis.name);
                if !axis.values.contains(&value) {
                    axis.values.push(value);
                }
            }
        }
        let mut cells = vec![vec![Vec::new(); columns.values.len()]; rows.values.len()];
        for run in runs {
            let at = |axis: &Axis| {
                let value = label(run, &axis.name);
                axis.values.iter().position(|v| *v == value).expect("every value was listed")
            };
            cells[at(&rows)][at(&columns)].push(run);
        }
        // The name the runs share: the scenario's, before the values they took.
        let matrix = runs[0].name.split(" [").next().unwrap_or_default().to_owned();
        Ok(Self { matrix, rows, columns, cells })
    }

    /// Each cell's median of `figure`.
    fn medians(&self, figure: Figure) -> Vec<Vec<Option<f64>>> {
        self.cells
            .iter()
            .map(|row| {
                row.iter()
                    .map(|runs| median(runs.iter().filter_map(|r| figure.of(r)).collect()))
                    .collect()
            })
            .collect()
    }

    /// The axes and their values: `load.clients (1, 10) × op.put.val-size (256, 1KiB)`.
    fn describe(&self) -> String {
        let axis = |a: &Axis| format!("{} ({})", a.name, a.values.join(", "));
        format!("{} × {}", axis(&self.rows), axis(&self.columns))
    }
}

/// The middle value, or the mean of the two middle ones; `None` of nothing.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        n if n % 2 == 1 => Some(values[n / 2]),
        n => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// What a heatmap's cells measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// Successful requests per second.
    Throughput,
    /// The 99th percentile of latency.
    P99,
}

/// Which of a run's operations a figure covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kinds {
    Reads,
    Writes,
    One(OpKind),
    /// Every operation of the load (background compaction is not part of it).
    All,
}

impl Kinds {
    fn covers(self, kind: OpKind) -> bool {
        match self {
            Self::Reads => is_read(kind),
            Self::Writes => is_write(kind),
            Self::One(one) => kind == one,
            Self::All => kind != OpKind::Compact,
        }
    }
}

fn is_read(kind: OpKind) -> bool {
    matches!(kind, OpKind::Range | OpKind::TxnRead)
}

fn is_write(kind: OpKind) -> bool {
    matches!(kind, OpKind::Put | OpKind::Delete | OpKind::TxnPut | OpKind::TxnWrite)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Figure {
    measure: Measure,
    kinds: Kinds,
}

/// The figures `runs` are drawn by: throughput, then p99 latency, of reads and of writes
/// when they have both, else of their one operation, else of all together.
fn figures<'a>(runs: impl IntoIterator<Item = &'a Report>) -> Vec<Figure> {
    let mut kinds: Vec<OpKind> = runs.into_iter().flat_map(|r| r.ops.keys().copied()).collect();
    kinds.retain(|k| *k != OpKind::Compact);
    kinds.sort_unstable();
    kinds.dedup();
    let split = if kinds.iter().any(|k| is_read(*k)) && kinds.iter().any(|k| is_write(*k)) {
        vec![Kinds::Reads, Kinds::Writes]
    } else if let [one] = kinds[..] {
        vec![Kinds::One(one)]
    } else {
        vec![Kinds::All]
    };
    [Measure::Throughput, Measure::P99]
        .into_iter()
        .flat_map(|measure| split.iter().map(move |&kinds| Figure { measure, kinds }))
        .collect()
}

impl Figure {
    fn name(self) -> String {
        let of = match self.kinds {
            Kinds::Reads => "read ".to_owned(),
            Kinds::Writes => "write ".to_owned(),
            Kinds::One(kind) => format!("{kind} "),
            Kinds::All => String::new(),
        };
        match self.measure {
            Measure::Throughput => format!("{of}throughput"),
            Measure::P99 => format!("{of}p99 latency"),
        }
    }

    fn unit(self) -> &'static str {
        match self.measure {
            Measure::Throughput => "ops/s",
            Measure::P99 => "ms",
        }
    }

    fn slug(self) -> String {
        let of = match self.kinds {
            Kinds::Reads => "read",
            Kinds::Writes => "write",
            Kinds::One(kind) => kind.name(),
            Kinds::All => "all",
        };
        match self.measure {
            Measure::Throughput => format!("{of}-throughput"),
            Measure::P99 => format!("{of}-p99"),
        }
    }

    /// The figure of one run: the throughputs of its kinds added (0 when it sent none), or
    /// the p99 of their latencies together, ms (none without a successful request).
    fn of(self, run: &Report) -> Option<f64> {
        let mut ops = run.ops.iter().filter(|(k, _)| self.kinds.covers(**k)).map(|(_, o)| o);
        match self.measure {
            Measure::Throughput => Some(ops.map(|o| o.throughput).sum()),
            Measure::P99 => {
                let mut latency = ops.next()?.latency.histogram().clone();
                for op in ops {
                    latency.add(op.latency.histogram()).ok()?;
                }
                (!latency.is_empty()).then(|| latency.value_at_quantile(0.99) as f64 / 1e3)
            }
        }
    }
}

impl Heatmap {
    /// The lowest and highest value the scale spans, never an empty range.
    fn range(&self) -> (f64, f64) {
        let values = self.cells.iter().flatten().flatten().copied();
        match self.scale {
            Scale::Sequential => {
                let (lo, hi) = values
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
                if lo > hi {
                    (0.0, 1.0)
                } else if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
                    // One value: the middle of the scale, with room either side.
                    let room = (hi.abs() * 0.1).max(1.0);
                    (lo - room, hi + room)
                } else {
                    (lo, hi)
                }
            }
            // Symmetric about 0, so that white is no change; at least ±1%.
            Scale::Change { .. } => {
                let most = values.map(f64::abs).fold(1.0, f64::max);
                (-most, most)
            }
        }
    }

    fn color(&self, value: f64, (lo, hi): (f64, f64)) -> RGBColor {
        let t = ((value - lo) / (hi - lo)).clamp(0.0, 1.0);
        match self.scale {
            Scale::Sequential => interpolate(&VIRIDIS, t),
            Scale::Change { higher_is_better: true } => interpolate(&RED_BLUE, t),
            Scale::Change { higher_is_better: false } => interpolate(&RED_BLUE, 1.0 - t),
        }
    }

    /// A value as its cell and the legend write it.
    fn format(&self, value: f64) -> String {
        match (self.scale, self.unit) {
            (Scale::Change { .. }, _) => format!("{value:+.1}%"),
            (Scale::Sequential, "ms") => format!("{value:.3}"),
            (Scale::Sequential, _) => qps(value),
        }
    }

    fn title(&self) -> String {
        match self.scale {
            Scale::Sequential => format!("{}: {} ({})", self.matrix, self.figure, self.unit),
            Scale::Change { .. } => format!("{}: change in {} (%)", self.matrix, self.figure),
        }
    }
}

/// The colour at `t` (0 to 1) along evenly spaced `stops`.
fn interpolate(stops: &[RGBColor], t: f64) -> RGBColor {
    let x = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
    let i = (x.floor() as usize).min(stops.len() - 2);
    let f = x - i as f64;
    let (a, b) = (stops[i], stops[i + 1]);
    let mix = |p: u8, q: u8| (f64::from(p) + (f64::from(q) - f64::from(p)) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Black or white, whichever reads on `fill`.
fn ink(fill: RGBColor) -> RGBColor {
    let luma = 0.299 * f64::from(fill.0) + 0.587 * f64::from(fill.1) + 0.114 * f64::from(fill.2);
    if luma < 128.0 { WHITE } else { BLACK }
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn style(size: u32, color: &RGBColor, h: HPos, v: VPos) -> TextStyle<'_> {
    TextStyle::from((FONT, size).into_font()).color(color).pos(Pos::new(h, v))
}

fn draw_panel(area: &DrawingArea<SVGBackend<'_>, Shift>, map: &Heatmap) -> DrawResult {
    let (width, height) = area.dim_in_pixel();
    let (width, height) = (width as i32, height as i32);
    let (left, right, top, bottom) = (LEFT, width - RIGHT, TOP, height - BOTTOM);
    let centre = |a: i32, b: i32| (a + b) / 2;
    area.draw(&Text::new(
        map.title(),
        (width / 2, 10),
        style(18, &BLACK, HPos::Center, VPos::Top),
    ))?;
    area.draw(&Text::new(
        map.note.clone(),
        (width / 2, 34),
        style(13, &GREY, HPos::Center, VPos::Top),
    ))?;

    let columns = map.columns.values.len().max(1) as i32;
    let rows = map.rows.values.len().max(1) as i32;
    let (cell_w, cell_h) = ((right - left) / columns, (bottom - top) / rows);
    let range = map.range();
    for (i, row) in map.cells.iter().enumerate() {
        for (j, value) in row.iter().enumerate() {
            let (x0, y0) = (left + j as i32 * cell_w, top + i as i32 * cell_h);
            let fill = value.map_or(MISSING_FILL, |v| map.color(v, range));
            // A pixel of white between cells.
            let inner = [(x0 + 1, y0 + 1), (x0 + cell_w - 1, y0 + cell_h - 1)];
            area.draw(&Rectangle::new(inner, fill.filled()))?;
            let text = value.map_or_else(|| MISSING.to_owned(), |v| map.format(v));
            let at = (x0 + cell_w / 2, y0 + cell_h / 2);
            area.draw(&Text::new(text, at, style(13, &ink(fill), HPos::Center, VPos::Center)))?;
        }
    }

    for (i, value) in map.rows.values.iter().enumerate() {
        let at = (left - 8, top + i as i32 * cell_h + cell_h / 2);
        area.draw(&Text::new(value.clone(), at, style(13, &BLACK, HPos::Right, VPos::Center)))?;
    }
    let rotated = TextStyle::from((FONT, 15).into_font().transform(FontTransform::Rotate270))
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new(map.rows.name.clone(), (20, centre(top, bottom)), rotated))?;
    for (j, value) in map.columns.values.iter().enumerate() {
        let at = (left + j as i32 * cell_w + cell_w / 2, bottom + 8);
        area.draw(&Text::new(value.clone(), at, style(13, &BLACK, HPos::Center, VPos::Top)))?;
    }
    let at = (centre(left, right), bottom + 30);
    area.draw(&Text::new(
        map.columns.name.clone(),
        at,
        style(15, &BLACK, HPos::Center, VPos::Top),
    ))?;

    // The legend: the scale from its top (the highest value) down, with five ticks.
    let (x0, x1) = (right + 24, right + 42);
    let (lo, hi) = range;
    let step = f64::from(bottom - top) / f64::from(LEGEND_STEPS);
    for k in 0..LEGEND_STEPS {
        let value = hi - (f64::from(k) + 0.5) / f64::from(LEGEND_STEPS) * (hi - lo);
        let y0 = top + (f64::from(k) * step).round() as i32;
        let y1 = top + (f64::from(k + 1) * step).round() as i32;
        area.draw(&Rectangle::new([(x0, y0), (x1, y1)], map.color(value, range).filled()))?;
    }
    area.draw(&Rectangle::new([(x0, top), (x1, bottom)], GREY.stroke_width(1)))?;
    for q in 0..=4 {
        let y = top + (f64::from(bottom - top) * f64::from(q) / 4.0).round() as i32;
        let value = hi - f64::from(q) / 4.0 * (hi - lo);
        area.draw(&Text::new(
            map.format(value),
            (x1 + 6, y),
            style(12, &BLACK, HPos::Left, VPos::Center),
        ))?;
    }
    area.draw(&Text::new(
        map.unit.to_owned(),
        (centre(x0, x1), top - 8),
        style(13, &BLACK, HPos::Center, VPos::Bottom),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 10.0]), Some(3.5));
    }

    #[test]
    fn colours_run_along_their_stops() {
        assert_eq!(interpolate(&VIRIDIS, 0.0), VIRIDIS[0]);
        assert_eq!(interpolate(&VIRIDIS, 1.0), VIRIDIS[7]);
        assert_eq!(interpolate(&RED_BLUE, 0.5), RED_BLUE[5]);
        assert_eq!(interpolate(&VIRIDIS, 0.5 / 7.0), RGBColor(69, 26, 106));
        assert_eq!(ink(VIRIDIS[0]), WHITE);
        assert_eq!(ink(VIRIDIS[7]), BLACK);
    }
}
