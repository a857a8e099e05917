//! Client-count steps: one run on one cluster whose number of sending logical clients
//! changes step by step, each step measured on its own, as etcd's dbtester ran its
//! `connection_client_numbers` (1, 10, 50, ... 1,000 clients, keys continuing) and k6 ramps
//! its virtual users.
//!
//! ```toml
//! [load]
//! clients = 100                   # logical clients created once: at least the largest step
//! client-steps = [
//!     { clients = 1, total = 2000 },
//!     { clients = 10, total = 20000 },
//!     { clients = 100, duration = "10s" },
//! ]
//! ```
//!
//! The driver creates `load.clients` logical clients once (client `i` on connection
//! `i % conns`, as always) and step `k` has clients `0 .. steps[k].clients` send; the others
//! idle. A step ends in one of two ways:
//!
//! - by count (`total`): its requests are the next `total` request indices after the
//!   counted steps before it, split over the workers in proportion to the clients each has
//!   sending in it. Each worker does its part, waits for its last answer, and the next step
//!   starts when every worker has: its clients never overlap the step's.
//! - by time (`duration`): it ends `duration` after it started, a moment every worker knows
//!   from the run's one start instant and the steps before ([`StepPlan::end`]), so no worker
//!   waits for another. Requests still in flight then finish in the next step's time and
//!   count in the step that started them.
//!
//! Request indices (and so sequential keys) continue from step to step instead of starting
//! over: the whole run writes what one run of the steps' summed total would.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::unit;

/// The most steps one run may have: each costs every worker a latency histogram.
pub const MAX_STEPS: usize = 100;

/// One step of a client-steps run, as the scenario gives it (`load.client-steps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClientStep {
    /// Logical clients that send in this step: clients `0 .. clients` of the run's.
    pub clients: u32,
    /// Requests the step sends; it ends when all are answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// How long the step sends.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub duration: Option<Duration>,
}

/// How a step ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEnd {
    /// When this many requests are answered.
    Total(u64),
    /// This long after it started.
    After(Duration),
}

impl ClientStep {
    /// How the step ends: its total, else its duration (a valid step has exactly one; one
    /// with neither is an empty count).
    #[must_use]
    pub fn end(&self) -> StepEnd {
        match (self.total, self.duration) {
            (Some(total), _) => StepEnd::Total(total),
            (None, Some(d)) => StepEnd::After(d),
            (None, None) => StepEnd::Total(0),
        }
    }

    /// Whether client `id` (0-based) sends in this step.
    #[must_use]
    pub fn has(&self, id: u32) -> bool {
        id < self.clients
    }
}

/// The steps of a run, with what the workers need to follow them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(hidden)] // internal: the driver's; not part of the API
pub struct StepPlan {
    steps: Vec<ClientStep>,
    /// The first request index of each step: the counted steps' totals before it, summed.
    first: Vec<u64>,
}

impl StepPlan {
    /// The plan of `steps`.
    #[must_use]
    pub fn new(steps: &[ClientStep]) -> Self {
        let mut first = Vec::with_capacity(steps.len());
        let mut next = 0u64;
        for s in steps {
            first.push(next);
            if let StepEnd::Total(t) = s.end() {
                next = next.saturating_add(t);
            }
        }
        Self { steps: steps.to_vec(), first }
    }

    /// The steps, in order.
    #[must_use]
    pub fn steps(&self) -> &[ClientStep] {
        &self.steps
    }

    /// The number of steps.
    #[must_use]
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether there are no steps.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Step `k`.
    ///
    /// # Panics
    /// When there is no step `k`.
    #[must_use]
    pub fn step(&self, k: usize) -> &ClientStep {
        &self.steps[k]
    }

    /// The most clients any step has send: the logical clients the run needs.
    #[must_use]
    pub fn clients(&self) -> u32 {
        self.steps.iter().map(|s| s.clients).max().unwrap_or(0)
    }

    /// The request indices of step `k`: its first, and for a counted step how many. A timed
    /// step starts after the counted steps before it and has no end; each worker counts on
    /// from there.
    #[must_use]
    pub fn indices(&self, k: usize) -> (u64, Option<u64>) {
        let count = match self.steps[k].end() {
            StepEnd::Total(t) => Some(t),
            StepEnd::After(_) => None,
        };
        (self.first[k], count)
    }

    /// When step `k`, started at `start`, ends: for a timed step `start + duration`, known
    /// to every worker alike; `None` for a counted step, which ends when every worker has
    /// had its part answered.
    #[must_use]
    pub fn end(&self, k: usize, start: Instant) -> Option<Instant> {
        match self.steps[k].end() {
            StepEnd::After(d) => Some(start + d),
            StepEnd::Total(_) => None,
        }
    }

    /// How long the steps last in all, when every step is timed.
    #[must_use]
    pub fn length(&self) -> Option<Duration> {
        self.steps
            .iter()
            .map(|s| match s.end() {
                StepEnd::After(d) => Some(d),
                StepEnd::Total(_) => None,
            })
            .sum()
    }

    /// The requests of every counted step, summed, when every step is counted.
    #[must_use]
    pub fn total(&self) -> Option<u64> {
        self.steps.iter().map(|s| s.total).sum()
    }
}

/// Splits `total` request indices into contiguous parts in proportion to `weights`
/// (clients, say), exactly: the parts are `(start, count)`, in order, from 0, and their
/// counts add up to `total`. A part of weight 0 gets nothing; with no weight at all, nothing
/// is handed out.
#[must_use]
#[doc(hidden)] // internal: the driver's; not part of the API
pub fn split(total: u64, weights: &[u64]) -> Vec<(u64, u64)> {
    let all: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let mut out = Vec::with_capacity(weights.len());
    let (mut start, mut weight) = (0u64, 0u128);
    for &w in weights {
        weight += u128::from(w);
        let end = (u128::from(total) * weight).checked_div(all).unwrap_or(0) as u64;
        out.push((start, end - start));
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(clients: u32, total: u64) -> ClientStep {
        ClientStep { clients, total: Some(total), duration: None }
    }

    fn timed(clients: u32, ms: u64) -> ClientStep {
        ClientStep { clients, total: None, duration: Some(Duration::from_millis(ms)) }
    }

    #[test]
    fn indices_continue_over_counted_steps() {
        let plan = StepPlan::new(&[counted(1, 100), timed(4, 500), counted(16, 1000)]);
        assert_eq!(plan.indices(0), (0, Some(100)));
        // A timed step counts on from where the counted ones before it ended...
        assert_eq!(plan.indices(1), (100, None));
        // ... and the next counted step starts there too: keys never start over.
        assert_eq!(plan.indices(2), (100, Some(1000)));
        assert_eq!(plan.clients(), 16);
        assert_eq!((plan.total(), plan.length()), (None, None));
    }

    #[test]
    fn a_timed_step_ends_at_a_moment_every_worker_knows() {
        let t0 = Instant::now();
        let plan = StepPlan::new(&[timed(1, 250), timed(8, 1000), counted(2, 10)]);
        let second = plan.end(0, t0).expect("timed");
        assert_eq!(second - t0, Duration::from_millis(250));
        assert_eq!(plan.end(1, second).map(|e| e - t0), Some(Duration::from_millis(1250)));
        assert_eq!(plan.end(2, t0), None, "a counted step ends when its requests are answered");
        let all_timed = StepPlan::new(&[timed(1, 250), timed(8, 1000)]);
        assert_eq!(all_timed.length(), Some(Duration::from_millis(1250)));
        let all_counted = StepPlan::new(&[counted(1, 7), counted(3, 5)]);
        assert_eq!(all_counted.total(), Some(12));
    }

    #[test]
    fn a_step_has_its_first_clients() {
        let s = counted(4, 1);
        assert!((0..4).all(|id| s.has(id)));
        assert!(!s.has(4));
        assert_eq!(ClientStep { clients: 1, total: None, duration: None }.end(), StepEnd::Total(0));
    }

    #[test]
    fn split_is_exact_and_contiguous() {
        let q = split(1000, &[3, 3, 1]);
        assert_eq!(q.iter().map(|x| x.1).sum::<u64>(), 1000);
        assert_eq!(q[0].0, 0);
        assert_eq!(q[1].0, q[0].1);
        assert_eq!(q[2].0, q[1].0 + q[1].1);
        assert_eq!(split(5, &[0, 1]), vec![(0, 0), (0, 5)]);
        assert_eq!(split(5, &[0, 0]), vec![(0, 0), (0, 0)]);
        assert_eq!(
            split(u64::MAX, &[1, 1]),
            vec![(0, u64::MAX / 2), (u64::MAX / 2, u64::MAX / 2 + 1)]
        );
    }
}
