//! Thresholds checked against a report: the rows each applies to, the figures it reads
//! ([`Metric::value`]), and the [`Violation`]s of a run ([`Report::violations`]). The
//! expressions themselves are part of the scenario ([`crate::scenario::threshold`]).
//!
//! A threshold whose row is missing fails: a scoped kind the run did not send, or a latency
//! of a row with no successful request (an empty histogram would otherwise pass `p99 < ...`
//! while every request failed).

use std::fmt;

use crate::op::OpKind;
use crate::report::{OpReport, Report};

// The expressions, at the paths they had when this module held them too.
pub use crate::scenario::threshold::{Comparator, Metric, Threshold, ThresholdError};

impl Metric {
    /// The value of this metric in `op`, in its unit (microseconds for latencies); `None`
    /// when the row has none (a latency without a successful request).
    #[must_use]
    pub fn value(self, op: &OpReport) -> Option<f64> {
        let requests = op.ok + op.errors_total;
        if self.is_latency() && op.ok == 0 {
            return None;
        }
        let lat = &op.latency;
        Some(match self {
            Self::P50 => lat.quantile_us(0.5) as f64,
            Self::P90 => lat.quantile_us(0.9) as f64,
            Self::P99 => lat.quantile_us(0.99) as f64,
            Self::P99_9 => lat.quantile_us(0.999) as f64,
            Self::P99_99 => lat.quantile_us(0.9999) as f64,
            Self::Max => lat.max_us() as f64,
            Self::Mean => lat.mean_us(),
            Self::Stddev => lat.stddev_us(),
            Self::ErrorRate if requests == 0 => return None,
            Self::ErrorRate => op.errors_total as f64 / requests as f64,
            Self::Errors => op.errors_total as f64,
            Self::Throughput => op.throughput,
            Self::Ok => op.ok as f64,
        })
    }
}

/// A threshold that a report did not meet.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The threshold.
    pub threshold: Threshold,
    /// The row checked: an operation kind, or `None` for the run's `all` row.
    pub op: Option<OpKind>,
    /// The value measured, in the metric's unit; `None` when the row has no such figure (the
    /// kind was not sent, or none of its requests succeeded).
    pub actual: Option<f64>,
    /// Requests of the row, ok and failed (0 when the run did not send the kind).
    pub requests: u64,
}

impl fmt::Display for Violation {
    /// `put p99 < 20ms (was 31.2ms)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.threshold;
        let row = self.op.map_or("all", OpKind::name);
        write!(f, "{row} {} {} {} ", t.metric, t.comparison.symbol(), t.limit_text())?;
        match self.actual {
            Some(v) => write!(f, "(was {})", t.metric.format(v)),
            None if self.requests == 0 => write!(f, "(no {row} requests in the run)"),
            None => write!(f, "(no successful {row} requests)"),
        }
    }
}

impl Threshold {
    /// The rows of `report` this threshold is checked on (see its scope in
    /// [`crate::scenario::threshold`]), each with
    /// its operation kind (`None` for `all`) and its figures (`None` when the run did not
    /// send the kind).
    fn rows<'r>(&self, report: &'r Report) -> Vec<(Option<OpKind>, Option<&'r OpReport>)> {
        match (self.op, &report.all) {
            (Some(kind), _) => vec![(Some(kind), report.ops.get(&kind))],
            (None, Some(all)) => vec![(None, Some(all))],
            (None, None) => report
                .ops
                .iter()
                .filter(|(kind, _)| **kind != OpKind::Compact)
                .map(|(kind, op)| (Some(*kind), Some(op)))
                .collect(),
        }
    }

    /// Checks `report`: one violation per row that does not meet the threshold.
    #[must_use]
    pub fn check(&self, report: &Report) -> Vec<Violation> {
        self.rows(report)
            .into_iter()
            .filter_map(|(op, row)| {
                let actual = row.and_then(|r| self.metric.value(r));
                let met = actual.is_some_and(|v| self.comparison.holds(v, self.limit));
                let requests = row.map_or(0, |r| r.ok + r.errors_total);
                (!met).then(|| Violation { threshold: self.clone(), op, actual, requests })
            })
            .collect()
    }
}

impl Report {
    /// The thresholds of the scenario (`thresholds`, including those given with `--threshold`
    /// on the command line) that this run did not meet; see [`crate::threshold`].
    ///
    /// Kept apart from [`Report::failures`], the run's correctness checks; a run passed when
    /// both are empty. A threshold that does not parse is not checked: scenarios are validated
    /// when read, so that happens only to a scenario deserialized without validation.
    #[must_use]
    pub fn violations(&self) -> Vec<Violation> {
        self.scenario
            .thresholds
            .iter()
            .filter_map(|t| t.parse::<Threshold>().ok())
            .flat_map(|t| t.check(self))
            .collect()
    }
}
