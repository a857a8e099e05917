//! A `--find-max` search's answer (the report set's `find_max`): the bracket of node counts
//! around the largest a cluster carries within Kubernetes' SLOs, with how often each count
//! met them over its runs, what bound it (the resource and verb that missed most at the
//! count that missed) and the spread of its runs' worst p99s.

use serde::{Deserialize, Serialize};

use super::kubernetes::VerdictScope;
use crate::unit::thousands;

/// The search's answer: the largest count that met the SLOs in every run, the smallest
/// that missed them in any, and every count tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMaxReport {
    /// Runs each count near the boundary was given (`--find-max-repeats`); the doubling
    /// and halving before it run each count once.
    pub repeats: u32,
    /// The largest count that met the SLOs in every run, below every count that missed;
    /// null when none did.
    #[serde(default)]
    pub met: Option<CountReport>,
    /// The smallest count that missed them in some run; null when none did.
    #[serde(default)]
    pub missed: Option<CountReport>,
    /// What missed most often in the missed count's runs (`pods list page p99`); null
    /// without a missed count.
    #[serde(default)]
    pub bound_by: Option<String>,
    /// The missed count's distance from the met one, as a fraction of the met one; null
    /// without both. The search stops within a tenth.
    #[serde(default)]
    pub gap: Option<f64>,
    /// What the verdicts judged (etcd's side, the apiserver model); null when no run was
    /// made.
    #[serde(default)]
    pub scope: Option<VerdictScope>,
    /// Every count tried, by node count.
    pub counts: Vec<CountReport>,
}

/// One node count's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountReport {
    /// `[kubernetes] nodes`.
    pub nodes: u64,
    /// Runs of it (a count too large to set up counts one run, missed).
    pub runs: u32,
    /// Runs that met the SLOs.
    pub met: u32,
    /// What its missed runs missed first, by what bound them (`pods list page p99`,
    /// `rate`), each with its runs; most first.
    pub bound_by: Vec<BoundBy>,
    /// The smallest and largest over its runs of the run's worst p99 as a fraction of
    /// the limit it was held to (1.0: at the limit); null for a count that never ran.
    #[serde(default)]
    pub worst_p99_of_limit: Option<[f64; 2]>,
}

/// What bound a count's missed runs, and in how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundBy {
    /// The resource and verb (`pods list page p99`), or what else missed (`rate`,
    /// `errors`, `NotReady nodes`, `checks`, `cannot run`).
    pub what: String,
    /// Runs it bound.
    pub runs: u32,
}

impl CountReport {
    /// Runs that missed.
    #[must_use]
    pub fn missed(&self) -> u32 {
        self.runs - self.met
    }
}

impl FindMaxReport {
    /// The bracket in one line: `6,000 nodes met 3 of 3; 7,000 missed 2 of 3; bound by:
    /// pods list page p99`.
    #[must_use]
    pub fn bracket(&self) -> String {
        let met = self
            .met
            .as_ref()
            .map(|c| format!("{} nodes met {} of {}", thousands(c.nodes), c.met, c.runs));
        let missed = self
            .missed
            .as_ref()
            .map(|c| format!("{} missed {} of {}", thousands(c.nodes), c.missed(), c.runs));
        let mut out = match (met, missed) {
            (Some(met), Some(missed)) => format!("{met}; {missed}"),
            (Some(met), None) => format!("{met}; no larger count was tried"),
            (None, Some(missed)) => format!("no count met the SLOs; {missed}"),
            (None, None) => "no count was tried".to_owned(),
        };
        if let Some(by) = &self.bound_by {
            out.push_str("; bound by: ");
            out.push_str(by);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracket_reads_as_one_line() {
        let count = |nodes, runs, met| CountReport {
            nodes,
            runs,
            met,
            bound_by: Vec::new(),
            worst_p99_of_limit: None,
        };
        let mut r = FindMaxReport {
            repeats: 3,
            met: Some(count(6000, 3, 3)),
            missed: Some(count(7000, 3, 1)),
            bound_by: Some("pods list page p99".to_owned()),
            gap: Some(1.0 / 6.0),
            scope: None,
            counts: Vec::new(),
        };
        assert_eq!(
            r.bracket(),
            "6,000 nodes met 3 of 3; 7,000 missed 2 of 3; bound by: pods list page p99"
        );
        r.missed = None;
        r.bound_by = None;
        assert_eq!(r.bracket(), "6,000 nodes met 3 of 3; no larger count was tried");
    }
}
