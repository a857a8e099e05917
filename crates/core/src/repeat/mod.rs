//! Repeats as statistics: the runs of one matrix cell (`[matrix] repeat = N`, `run --repeat
//! N`) taken together, each figure with its mean, median and confidence interval, and cells
//! compared by a test on their repeats' values.
//!
//! ```
//! use etcdlat_core::repeat::{LEVEL, Repeats, Verdict};
//! # fn show(runs: &[etcdlat_core::Report]) {
//! if let Some(repeats) = Repeats::of(runs) {
//!     for cell in &repeats.cells {
//!         let p99 = cell.figure(etcdlat_core::Row::LatencyP99);
//!         println!("{}: {:?}", cell.name, p99.map(|e| (e.mean, e.half_width)));
//!     }
//!     for pair in repeats.compare(LEVEL) {
//!         let changed = pair.changes.iter().filter(|c| c.verdict == Verdict::Changed);
//!         println!("{} vs {}: {} changes", pair.base, pair.new, changed.count());
//!     }
//! }
//! # }
//! ```
//!
//! # The interval
//!
//! Each figure of a run (dbtester's figures, [`Row`], and each operation's throughput,
//! percentiles and errors, [`Figure`]) is one value per repeat. The cell's [`Estimate`] is
//! their mean, median and the 95% confidence interval of the mean by Student's t with
//! n - 1 degrees of freedom ([`INTERVAL`]): the repeats are taken as independent draws of
//! what the setup measures (each on a fresh cluster when etcdlat starts it, in rotation
//! with the other cells, so that a machine's drift spreads over every cell rather than
//! moving one).
//!
//! # The test
//!
//! A cell is compared with the first (the base) by Welch's t-test on the repeats' values,
//! two-sided ([`TEST`]): a figure is marked [`Verdict::Changed`] when its p-value is below
//! the level (0.05, [`LEVEL`]); with fewer than [`MIN_REPEATS`] repeats on either side no
//! figure is marked ([`Verdict::NotEnoughRepeats`]). Run-to-run variance is what the test
//! weighs a difference against, which a single run cannot know: one run has no interval.

mod estimate;
pub mod student;
mod welch;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use estimate::Estimate;
pub use welch::Welch;

use crate::comparison::Figure;
use crate::op::OpKind;
use crate::report::{Report, Row};

/// The confidence of the repeats' intervals.
pub const CONFIDENCE: f64 = 0.95;

/// The level at which a comparison marks a change unless told otherwise.
pub const LEVEL: f64 = 0.05;

/// Fewest repeats on each side for a comparison to mark a change or its absence.
pub const MIN_REPEATS: usize = 3;

/// How the intervals are computed, as the reports state it.
pub const INTERVAL: &str =
    "mean ± Student's t (n - 1 degrees of freedom) · sd / √n, a 95% confidence interval";

/// How a change is judged, as the comparisons state it.
pub const TEST: &str = "Welch's t-test on the repeats' values, two-sided";

/// In which order a matrix's cells ran their repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Order {
    /// In rotation, every cell once before any twice (A B C A B C ...): the default.
    Interleaved,
    /// Each cell's repeats one after another (A A B B C C), `[matrix] order = "in-a-row"`.
    InARow,
    /// Neither (runs of several files, a stopped run).
    Other,
}

impl Order {
    /// How the text report names it: `interleaved`, `in a row`, `as listed`.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Interleaved => "interleaved",
            Self::InARow => "in a row",
            Self::Other => "as listed",
        }
    }
}

/// The runs of a set grouped into cells, each figure over a cell's repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Repeats {
    /// The order the runs ran in.
    pub order: Order,
    /// Each run's cell (an index into `cells`), in the order the runs ran.
    pub sequence: Vec<usize>,
    /// The intervals' confidence, [`CONFIDENCE`].
    pub confidence: f64,
    /// How the intervals are computed, [`INTERVAL`].
    pub interval: String,
    /// The cells, in the order each first ran.
    pub cells: Vec<Cell>,
}

/// A cell's figures over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Cell {
    /// The cell's name: its runs' name without the repeat's number (`put [clients=1]`),
    /// after the file it was read from when several were (`a.json: put [clients=1]`).
    pub name: String,
    /// Its runs, as indexes into the runs of the set (or of the files one after another).
    pub runs: Vec<usize>,
    /// dbtester's figures ([`Row::key`]), each over the repeats that knew it; `null` when
    /// none did.
    pub figures: BTreeMap<String, Option<Estimate>>,
    /// Each operation kind's figures ([`Figure::key`]: throughput in requests/s,
    /// latencies in microseconds, errors as counts).
    pub ops: BTreeMap<OpKind, BTreeMap<String, Option<Estimate>>>,
}

impl Cell {
    /// The cell of `runs` (index, report), named `name`.
    fn of(name: String, runs: &[(usize, &Report)]) -> Self {
        let studies: Vec<_> = runs.iter().map(|(_, r)| r.study()).collect();
        let figures = Row::ALL
            .into_iter()
            .map(|row| {
                let values = studies.iter().filter_map(|s| s.value(row)).collect();
                (row.key().to_owned(), Estimate::of(values, CONFIDENCE))
            })
            .collect();
        let mut kinds: Vec<OpKind> = runs.iter().flat_map(|(_, r)| r.ops.keys().copied()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let ops = kinds
            .into_iter()
            .map(|kind| {
                let figures = Figure::ALL
                    .into_iter()
                    .map(|figure| {
                        let values = runs
                            .iter()
                            .filter_map(|(_, r)| r.ops.get(&kind).and_then(|op| figure.value(op)))
                            .collect();
                        (figure.key().to_owned(), Estimate::of(values, CONFIDENCE))
                    })
                    .collect();
                (kind, figures)
            })
            .collect();
        Self { name, runs: runs.iter().map(|(i, _)| *i).collect(), figures, ops }
    }

    /// How many runs the cell has.
    #[must_use]
    pub fn repeats(&self) -> usize {
        self.runs.len()
    }

    /// The estimate of one of dbtester's figures; `None` when no repeat knew it.
    #[must_use]
    pub fn figure(&self, row: Row) -> Option<&Estimate> {
        self.figures.get(row.key()).and_then(Option::as_ref)
    }

    /// The estimate of an operation kind's figure; `None` when no repeat had it.
    #[must_use]
    pub fn op(&self, kind: OpKind, figure: Figure) -> Option<&Estimate> {
        self.ops.get(&kind).and_then(|f| f.get(figure.key())).and_then(Option::as_ref)
    }
}

/// The name of a run's cell: its name without the repeat's number that the matrix added.
fn cell_name(run: &Report) -> &str {
    match &run.matrix {
        Some(cell) if cell.repeat > 1 => {
            run.name.strip_suffix(&format!(" #{}", cell.repetition)).unwrap_or(&run.name)
        }
        _ => &run.name,
    }
}

impl Repeats {
    /// The runs of one set as cells; `None` unless some cell ran more than once.
    #[must_use]
    pub fn of(runs: &[Report]) -> Option<Self> {
        Self::of_labeled(runs.iter().map(|r| (None, r)))
    }

    /// The runs of several files as cells, each cell named after its file (`label`) too;
    /// runs of different files are never one cell, and only runs a matrix repeated
    /// ([`MatrixCell::repeat`](crate::MatrixCell::repeat) over 1) share one. `None` unless
    /// some cell ran more than once.
    #[must_use]
    pub fn of_labeled<'a>(
        runs: impl IntoIterator<Item = (Option<&'a str>, &'a Report)>,
    ) -> Option<Self> {
        let mut names: Vec<String> = Vec::new();
        let mut members: Vec<Vec<(usize, &Report)>> = Vec::new();
        let mut sequence = Vec::new();
        for (i, (label, run)) in runs.into_iter().enumerate() {
            let name = match label {
                Some(label) => format!("{label}: {}", cell_name(run)),
                None => cell_name(run).to_owned(),
            };
            // Only a matrix's repeats are one cell: runs that merely share a name are not.
            let repeated = run.matrix.as_ref().is_some_and(|c| c.repeat > 1);
            let same = names.iter().zip(&members).position(|(n, m)| {
                repeated && *n == name && m[0].1.matrix.as_ref().is_some_and(|c| c.repeat > 1)
            });
            let cell = same.unwrap_or_else(|| {
                names.push(name);
                members.push(Vec::new());
                names.len() - 1
            });
            members[cell].push((i, run));
            sequence.push(cell);
        }
        if members.iter().all(|m| m.len() < 2) {
            return None;
        }
        let cells =
            names.into_iter().zip(&members).map(|(name, runs)| Cell::of(name, runs)).collect();
        Some(Self {
            order: order(&sequence, members.len()),
            sequence,
            confidence: CONFIDENCE,
            interval: INTERVAL.to_owned(),
            cells,
        })
    }

    /// Every cell after the first compared with the first, at `level` (0.05: [`LEVEL`]).
    #[must_use]
    pub fn compare(&self, level: f64) -> Vec<CellComparison> {
        let Some((base, rest)) = self.cells.split_first() else { return Vec::new() };
        rest.iter().map(|new| CellComparison::of(base, new, level)).collect()
    }
}

/// The order of `sequence`, the cell of each run in the order run, over `cells` cells.
fn order(sequence: &[usize], cells: usize) -> Order {
    if sequence.iter().enumerate().all(|(i, c)| *c == i % cells)
        && sequence.len().is_multiple_of(cells)
    {
        if cells > 1 {
            return Order::Interleaved;
        }
        return Order::InARow;
    }
    if sequence.windows(2).all(|w| w[0] <= w[1]) {
        return Order::InARow;
    }
    Order::Other
}

/// One cell compared with the base cell, figure by figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CellComparison {
    /// The base cell's name.
    pub base: String,
    /// The compared cell's name.
    pub new: String,
    /// The base cell's repeats.
    pub base_repeats: usize,
    /// The compared cell's repeats.
    pub new_repeats: usize,
    /// The test, [`TEST`].
    pub test: String,
    /// The level a p-value must be below for a change to be marked.
    pub level: f64,
    /// dbtester's figures in its order, then each operation kind's.
    pub changes: Vec<Change>,
}

/// One figure of two cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Change {
    /// The operation kind whose figure it is; `None` for dbtester's figures (the load's).
    pub op: Option<OpKind>,
    /// The figure's key: [`Row::key`] without an operation, [`Figure::key`] with one.
    pub figure: String,
    /// The base cell's estimate.
    pub base: Option<Estimate>,
    /// The compared cell's estimate.
    pub new: Option<Estimate>,
    /// The change of the means in percent of the base's; `None` when the base is 0 (and
    /// the new is not) or either is unknown.
    pub change_pct: Option<f64>,
    /// Welch's test on the two cells' values; `None` with fewer than two on a side.
    pub welch: Option<Welch>,
    /// What the test says at the level.
    pub verdict: Verdict,
}

impl Change {
    /// The figure of dbtester's table, when it is one.
    #[must_use]
    pub fn row(&self) -> Option<Row> {
        if self.op.is_some() {
            return None;
        }
        Row::ALL.into_iter().find(|r| r.key() == self.figure)
    }

    /// The operation's figure, when it is one.
    #[must_use]
    pub fn op_figure(&self) -> Option<Figure> {
        self.op?;
        Figure::ALL.into_iter().find(|f| f.key() == self.figure)
    }
}

/// What a comparison says of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    /// The p-value is below the level: a change.
    Changed,
    /// It is not: no change the repeats can tell from their noise.
    NoChange,
    /// Fewer than [`MIN_REPEATS`] repeats on a side: not judged.
    NotEnoughRepeats,
    /// A side does not know the figure.
    Unknown,
}

impl Verdict {
    /// How tables write it: `changed`, `no`, `not enough repeats`, `-`.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Changed => "changed",
            Self::NoChange => "no",
            Self::NotEnoughRepeats => "not enough repeats",
            Self::Unknown => "-",
        }
    }
}

impl CellComparison {
    fn of(base: &Cell, new: &Cell, level: f64) -> Self {
        let change =
            |op: Option<OpKind>, figure: &str, b: Option<&Estimate>, n: Option<&Estimate>| {
                let welch = match (b, n) {
                    (Some(b), Some(n)) => Welch::test(&b.values, &n.values),
                    _ => None,
                };
                let verdict = match (b, n) {
                    (Some(b), Some(n)) if b.n() < MIN_REPEATS || n.n() < MIN_REPEATS => {
                        Verdict::NotEnoughRepeats
                    }
                    (Some(_), Some(_)) => match welch {
                        Some(w) if w.p < level => Verdict::Changed,
                        Some(_) => Verdict::NoChange,
                        None => Verdict::NotEnoughRepeats,
                    },
                    _ => Verdict::Unknown,
                };
                let change_pct = match (b, n) {
                    (Some(b), Some(n)) if b.mean == 0.0 => (n.mean == 0.0).then_some(0.0),
                    (Some(b), Some(n)) => Some((n.mean - b.mean) / b.mean * 100.0),
                    _ => None,
                };
                Change {
                    op,
                    figure: figure.to_owned(),
                    base: b.cloned(),
                    new: n.cloned(),
                    change_pct,
                    welch,
                    verdict,
                }
            };
        let mut changes: Vec<Change> = Row::ALL
            .into_iter()
            .map(|row| change(None, row.key(), base.figure(row), new.figure(row)))
            .collect();
        let mut kinds: Vec<OpKind> = base.ops.keys().chain(new.ops.keys()).copied().collect();
        kinds.sort_unstable();
        kinds.dedup();
        for kind in kinds {
            for figure in Figure::ALL {
                changes.push(change(
                    Some(kind),
                    figure.key(),
                    base.op(kind, figure),
                    new.op(kind, figure),
                ));
            }
        }
        Self {
            base: base.name.clone(),
            new: new.name.clone(),
            base_repeats: base.repeats(),
            new_repeats: new.repeats(),
            test: TEST.to_owned(),
            level,
            changes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_read_from_the_sequence() {
        assert_eq!(order(&[0, 1, 2, 0, 1, 2], 3), Order::Interleaved);
        assert_eq!(order(&[0, 0, 1, 1], 2), Order::InARow);
        assert_eq!(order(&[0, 0, 0], 1), Order::InARow);
        assert_eq!(order(&[0, 1, 1, 0], 2), Order::Other);
        // A stopped rotation is still in rotation up to where it stopped, but not whole.
        assert_eq!(order(&[0, 1, 0], 2), Order::Other);
    }

    /// A cell whose AVG-THROUGHPUT repeats are `values` (its other figures unknown).
    fn cell(name: &str, values: &[f64]) -> Cell {
        let mut figures: BTreeMap<String, Option<Estimate>> =
            Row::ALL.iter().map(|r| (r.key().to_owned(), None)).collect();
        figures
            .insert(Row::AvgThroughput.key().to_owned(), Estimate::of(values.to_vec(), CONFIDENCE));
        Cell {
            name: name.to_owned(),
            runs: (0..values.len()).collect(),
            figures,
            ops: BTreeMap::new(),
        }
    }

    #[test]
    fn a_change_is_marked_only_when_significant_with_three_repeats_a_side() {
        let verdict = |base: &[f64], new: &[f64], level: f64| {
            let c = CellComparison::of(&cell("a", base), &cell("b", new), level);
            assert_eq!(c.changes.len(), Row::ALL.len());
            assert_eq!((c.test.as_str(), c.level), (TEST, level));
            let change = c.changes.iter().find(|c| c.row() == Some(Row::AvgThroughput)).unwrap();
            // Unknown on both sides: not judged.
            let other = c.changes.iter().find(|c| c.row() == Some(Row::LatencyP99)).unwrap();
            assert_eq!(other.verdict, Verdict::Unknown);
            (change.verdict, change.welch.map(|w| w.p), change.change_pct)
        };
        let (v, p, pct) = verdict(&[100.0, 101.0, 99.0], &[120.0, 121.0, 119.0], LEVEL);
        assert_eq!(v, Verdict::Changed);
        assert!(p.unwrap() < 0.001 && (pct.unwrap() - 20.0).abs() < 1e-9);
        let (v, p, _) = verdict(&[100.0, 110.0, 90.0], &[102.0, 112.0, 92.0], LEVEL);
        assert_eq!(v, Verdict::NoChange, "p = {p:?}");
        // The same difference, judged at a level above its p-value, is a change.
        let (v, _, _) = verdict(&[100.0, 110.0, 90.0], &[102.0, 112.0, 92.0], 0.9);
        assert_eq!(v, Verdict::Changed);
        // Two repeats: Welch's test runs, but nothing is judged.
        let (v, p, _) = verdict(&[100.0, 101.0], &[120.0, 121.0, 119.0], LEVEL);
        assert_eq!(v, Verdict::NotEnoughRepeats);
        assert!(p.is_some());
        let (v, p, _) = verdict(&[100.0], &[120.0], LEVEL);
        assert_eq!((v, p), (Verdict::NotEnoughRepeats, None));
    }
}
