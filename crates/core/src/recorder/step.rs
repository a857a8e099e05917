//! What one worker recorded of one step of a client-steps run ([`crate::step`]): every
//! operation kind together, so that a step costs a worker one histogram.

use std::time::Instant;

use hdrhistogram::Histogram;

use super::{new_histogram, to_us};

/// One step as one worker (or, merged, the whole run) saw it.
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// When the step started: the same instant on every worker.
    pub started: Option<Instant>,
    /// The last completion of a request the step started.
    pub last_done: Option<Instant>,
    /// Latency of the step's successful requests (completion minus intended start), us.
    pub latency: Histogram<u64>,
    /// Successful requests.
    pub ok: u64,
    /// Failed requests, all codes.
    pub errors: u64,
    /// Logical clients that sent at least one request in the step.
    pub clients: u64,
}

impl StepRecord {
    pub(super) fn new() -> Self {
        Self {
            started: None,
            last_done: None,
            latency: new_histogram(),
            ok: 0,
            errors: 0,
            clients: 0,
        }
    }

    /// Requests the step recorded, ok and failed.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.ok + self.errors
    }

    #[inline]
    pub(super) fn ok(&mut self, intended: Instant, done: Instant) {
        let (us, _) = to_us(done.saturating_duration_since(intended));
        self.latency.record(us).expect("value within bounds");
        self.ok += 1;
        self.done(done);
    }

    #[inline]
    pub(super) fn errors(&mut self, n: u64, done: Instant) {
        self.errors += n;
        self.done(done);
    }

    #[inline]
    fn done(&mut self, at: Instant) {
        self.last_done = Some(self.last_done.map_or(at, |last| last.max(at)));
    }

    /// Adds another worker's record of the same step.
    pub(super) fn merge(&mut self, other: &StepRecord) {
        self.started = match (self.started, other.started) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_done = self.last_done.max(other.last_done);
        self.latency.add(&other.latency).expect("same bounds");
        self.ok += other.ok;
        self.errors += other.errors;
        self.clients += other.clients;
    }
}
