//! The invariants of the apiserver's requests, counted over a run ([`Checks`]).

use std::sync::atomic::{AtomicU64, Ordering};

use etcdlat_core::invariant::Invariant;

/// Violations of [`Invariant`]s the run's apiserver operations counted, on every worker,
/// handed to one worker's recorder at the end (violations are rare: their counts are
/// atomics that no request waits on).
#[derive(Default)]
pub(crate) struct Checks {
    counts: [AtomicU64; Invariant::COUNT],
}

impl Checks {
    pub(super) fn violated(&self, invariant: Invariant) {
        self.violated_times(invariant, 1);
    }

    /// Counted, not logged at warn: the report says how many, and a fault that repeats
    /// would fill the terminal.
    pub(super) fn violated_times(&self, invariant: Invariant, times: u64) {
        self.counts[invariant.index()].fetch_add(times, Ordering::Relaxed);
        tracing::debug!(?invariant, times, "an invariant of the apiserver's requests was violated");
    }

    /// The counts, indexed by [`Invariant::index`].
    pub(crate) fn counts(&self) -> [u64; Invariant::COUNT] {
        std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed))
    }
}
