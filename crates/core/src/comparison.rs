//! Comparing two runs (A/B: two builds, versions or settings) and telling real changes from
//! run-to-run noise.
//!
//! ```
//! use etcdlat_core::comparison::{Figure, compare};
//! # fn show(base: &etcdlat_core::Report, new: &etcdlat_core::Report) {
//! let comparison = compare(base, new);
//! for op in &comparison.ops {
//!     let p99 = op.row(Figure::P99);
//!     if p99.significant == Some(true) {
//!         println!("{}: p99 changed by {:+.1}%", op.kind, p99.change_pct.unwrap_or(0.0));
//!     }
//! }
//! # }
//! ```
//!
//! `etcdlat_render::comparison::markdown` writes comparisons as a table.
//!
//! Each operation kind present in either run gets rows for throughput, p50, p99, p99.9 and
//! errors: the base figure, the new one, and the change in percent of the base.
//!
//! # When a change is beyond noise
//!
//! A run's figure is one sample of what the same setup would measure again. Its noise is
//! estimated from the run's own time series: the spread (sample standard deviation `sd`) of
//! the figure over the run's `n` full intervals (a last, partial interval is left out). A
//! change is marked significant when
//!
//! ```text
//! |new - base| > 2 * sqrt(sd_base² / n_base + sd_new² / n_new)
//! ```
//!
//! that is, when it is more than twice the standard error of the difference of two means
//! (Welch's statistic at about 95%). The per-interval series used are:
//!
//! - throughput: each interval's successful requests divided by the interval length;
//! - p50 and p99: each interval's p50 and p99 (intervals with a successful request);
//! - p99.9: each interval's largest latency, since intervals keep no p99.9. A run's p99.9 is
//!   set by its few slowest moments rather than averaged over its intervals, so it varies
//!   like one interval's extreme: its bound is `2 * sqrt(sd_base² + sd_new²)`, without the
//!   division by `n`. Both choices err towards calling a change noise;
//! - errors: each interval's failures per second; the figures compared are the runs'
//!   failures per second (`errors / duration`), shown as totals.
//!
//! For latencies the bound is at least 1% of the larger figure, the resolution of the
//! per-interval histograms (2 significant digits), so that rounding is never a change.
//! With fewer than [`MIN_INTERVALS`] intervals in either run the noise is not estimated and
//! no row is marked either way.

use serde::Serialize;

use crate::op::OpKind;
use crate::report::{Interval, OpReport, Report, ReportSet};

/// Fewest full intervals in each run for its noise to be estimated.
pub const MIN_INTERVALS: usize = 3;

/// A figure compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Figure {
    /// Successful requests per second.
    Throughput,
    /// Latency median, microseconds.
    P50,
    /// Latency 99th percentile, microseconds.
    P99,
    /// Latency 99.9th percentile, microseconds.
    #[serde(rename = "p99_9")]
    P99_9,
    /// Failed requests.
    Errors,
}

impl Figure {
    /// Every figure, in table order.
    pub const ALL: [Figure; 5] =
        [Self::Throughput, Self::P50, Self::P99, Self::P99_9, Self::Errors];

    /// The row title in tables.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Self::Throughput => "Throughput (ops/s)",
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::P99_9 => "p99.9",
            Self::Errors => "Errors",
        }
    }

    /// The figure's name in JSON: `throughput`, `p50`, `p99`, `p99_9`, `errors`.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            Self::Throughput => "throughput",
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::P99_9 => "p99_9",
            Self::Errors => "errors",
        }
    }

    fn is_latency(self) -> bool {
        matches!(self, Self::P50 | Self::P99 | Self::P99_9)
    }

    /// The figure of a run: throughput in requests/s, latencies in us, errors as a count;
    /// `None` for a latency of a kind with no successful request.
    #[must_use]
    pub fn value(self, op: &OpReport) -> Option<f64> {
        let q = |q: f64| (op.ok > 0).then(|| op.latency.quantile_us(q) as f64);
        match self {
            Self::Throughput => Some(op.throughput),
            Self::P50 => q(0.5),
            Self::P99 => q(0.99),
            Self::P99_9 => q(0.999),
            Self::Errors => Some(op.errors_total as f64),
        }
    }

    /// What the significance test compares: the figure itself, except errors, which are
    /// compared per second so that runs of different lengths compare.
    fn tested(self, op: &OpReport) -> Option<f64> {
        match self {
            Self::Errors if op.duration_s > 0.0 => Some(op.errors_total as f64 / op.duration_s),
            Self::Errors => None,
            _ => self.value(op),
        }
    }

    /// The per-interval series whose spread is this figure's noise.
    fn series(self, intervals: &[Interval], interval_s: f64) -> Vec<f64> {
        let with_latency = || intervals.iter().filter(|i| i.count > 0);
        match self {
            Self::Throughput => intervals.iter().map(|i| i.count as f64 / interval_s).collect(),
            Self::Errors => intervals.iter().map(|i| i.errors as f64 / interval_s).collect(),
            Self::P50 => with_latency().map(|i| i.p50_us as f64).collect(),
            Self::P99 => with_latency().map(|i| i.p99_us as f64).collect(),
            Self::P99_9 => with_latency().map(|i| i.max_us as f64).collect(),
        }
    }
}

/// One figure of one operation kind, in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Which figure.
    pub figure: Figure,
    /// The base run's value (requests/s, microseconds or a count); `None` when the run has
    /// no such figure.
    pub base: Option<f64>,
    /// The new run's value.
    pub new: Option<f64>,
    /// `(new - base) / base`, in percent; `None` when the base is 0 and the new is not, or
    /// either is missing.
    pub change_pct: Option<f64>,
    /// The smallest difference of the tested figures that counts as beyond noise (see the
    /// module docs); `None` when it could not be estimated.
    pub noise: Option<f64>,
    /// Whether the change is beyond noise; `None` when that could not be told.
    pub significant: Option<bool>,
}

/// One operation kind in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpComparison {
    /// The kind.
    pub kind: OpKind,
    /// Full intervals of the base run the noise was estimated from (0 when the base did not
    /// send this kind).
    pub base_intervals: usize,
    /// Full intervals of the new run.
    pub new_intervals: usize,
    /// One row per figure, in [`Figure::ALL`] order.
    pub rows: Vec<Row>,
}

impl OpComparison {
    /// The row of one figure.
    ///
    /// # Panics
    /// Never: every figure has a row.
    #[must_use]
    pub fn row(&self, figure: Figure) -> &Row {
        self.rows.iter().find(|r| r.figure == figure).expect("every figure has a row")
    }

    /// Both runs have enough intervals for their noise to be estimated.
    #[must_use]
    pub fn noise_estimated(&self) -> bool {
        self.base_intervals >= MIN_INTERVALS && self.new_intervals >= MIN_INTERVALS
    }
}

/// Two runs side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Name of the base run.
    pub base: String,
    /// Name of the new run.
    pub new: String,
    /// Every operation kind present in either run, in report order.
    pub ops: Vec<OpComparison>,
}

/// Why two report sets cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// The sets hold different numbers of runs; runs are compared one to one, in order.
    #[error("the base has {base} runs and the new report {new}; runs are compared one to one")]
    RunCount {
        /// Runs in the base set.
        base: usize,
        /// Runs in the new set.
        new: usize,
    },
}

/// Compares run `i` of `base` with run `i` of `new`, for every `i`.
///
/// # Errors
/// [`CompareError::RunCount`] when the sets hold different numbers of runs.
pub fn compare_sets(base: &ReportSet, new: &ReportSet) -> Result<Vec<Comparison>, CompareError> {
    if base.runs.len() != new.runs.len() {
        return Err(CompareError::RunCount { base: base.runs.len(), new: new.runs.len() });
    }
    Ok(base.runs.iter().zip(&new.runs).map(|(b, n)| compare(b, n)).collect())
}

/// Compares two runs, kind by kind.
#[must_use]
pub fn compare(base: &Report, new: &Report) -> Comparison {
    let mut kinds: Vec<OpKind> = base.ops.keys().chain(new.ops.keys()).copied().collect();
    kinds.sort_unstable();
    kinds.dedup();
    let ops = kinds
        .into_iter()
        .map(|kind| {
            let b = base.ops.get(&kind).map(|op| (op, full_intervals(base, op)));
            let n = new.ops.get(&kind).map(|op| (op, full_intervals(new, op)));
            let count = |side: Option<(&OpReport, (&[Interval], f64))>| {
                side.map_or(0, |(_, (intervals, _))| intervals.len())
            };
            let (base_intervals, new_intervals) = (count(b), count(n));
            let estimate = base_intervals >= MIN_INTERVALS && new_intervals >= MIN_INTERVALS;
            let rows = Figure::ALL
                .into_iter()
                .map(|figure| {
                    let (bv, nv) =
                        (b.and_then(|s| figure.value(s.0)), n.and_then(|s| figure.value(s.0)));
                    let (significant, noise) = match (estimate, b, n) {
                        (true, Some(b), Some(n)) => significance(figure, b, n),
                        _ => (None, None),
                    };
                    Row {
                        figure,
                        base: bv,
                        new: nv,
                        change_pct: change_pct(bv, nv),
                        noise,
                        significant,
                    }
                })
                .collect();
            OpComparison { kind, base_intervals, new_intervals, rows }
        })
        .collect();
    Comparison { base: base.name.clone(), new: new.name.clone(), ops }
}

/// The intervals of `op` that cover a whole interval length (a last, partial one left out),
/// with the interval length in seconds.
fn full_intervals<'a>(report: &Report, op: &'a OpReport) -> (&'a [Interval], f64) {
    let step = report.interval().as_secs_f64();
    let n = op.intervals.len();
    let partial = n > 0 && n as f64 * step > op.duration_s + 0.01 * step;
    (if partial { &op.intervals[..n - 1] } else { &op.intervals[..] }, step)
}

/// Whether `figure` changed beyond noise between two runs, and the bound it was held to.
fn significance(
    figure: Figure,
    (base, (base_iv, base_step)): (&OpReport, (&[Interval], f64)),
    (new, (new_iv, new_step)): (&OpReport, (&[Interval], f64)),
) -> (Option<bool>, Option<f64>) {
    let (Some(b), Some(n)) = (figure.tested(base), figure.tested(new)) else {
        return (None, None);
    };
    let (bs, ns) = (figure.series(base_iv, base_step), figure.series(new_iv, new_step));
    if bs.len() < MIN_INTERVALS || ns.len() < MIN_INTERVALS {
        return (None, None);
    }
    let (sb, sn) = (stddev(&bs), stddev(&ns));
    // A mean over n intervals varies as sd / sqrt(n); an extreme (p99.9) as one interval.
    let (nb, nn) = match figure {
        Figure::P99_9 => (1.0, 1.0),
        _ => (bs.len() as f64, ns.len() as f64),
    };
    let mut bound = 2.0 * (sb * sb / nb + sn * sn / nn).sqrt();
    if figure.is_latency() {
        bound = bound.max(0.01 * b.abs().max(n.abs()));
    }
    (Some((n - b).abs() > bound), Some(bound))
}

/// Sample standard deviation (n - 1 in the denominator).
fn stddev(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

fn change_pct(base: Option<f64>, new: Option<f64>) -> Option<f64> {
    let (b, n) = (base?, new?);
    if b == 0.0 { (n == 0.0).then_some(0.0) } else { Some((n - b) / b * 100.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_deviation_and_change() {
        assert!((stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) - 2.138_089_935).abs() < 1e-6);
        assert_eq!(change_pct(Some(100.0), Some(150.0)), Some(50.0));
        assert_eq!(change_pct(Some(0.0), Some(0.0)), Some(0.0));
        assert_eq!(change_pct(Some(0.0), Some(3.0)), None);
        assert_eq!(change_pct(None, Some(3.0)), None);
    }
}
