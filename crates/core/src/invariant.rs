//! What the apiserver's requests (`k8s-*`, [`crate::workload::kubernetes`]) must find true of
//! etcd, checked while the run goes: each check costs a comparison or two per answer or
//! watch event, counted per worker and added when the recorders merge. Named as the audit's
//! counts are ([`crate::audit::AuditReport`]): what was violated, how many times.
//!
//! The checks that read a watch are made by the run's watch cache of each resource on the
//! events it receives (one watch per resource per run), so one fault of etcd's is counted
//! once.

use serde::{Deserialize, Serialize};

/// A property the apiserver's requests rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Invariant {
    /// An update or delete of an object with one writer, which compared the revision its
    /// own last write returned, found the object changed.
    UnexpectedConflict,
    /// A create succeeded on a name that existed: a watch saw an object created (version
    /// 1) that it held, with no delete between.
    DuplicateCreate,
    /// A pinned list's keys did not strictly increase, within or across its pages.
    ListOrder,
    /// A pinned list's pages held other than the count its first page gave.
    ListCount,
    /// A watch's events went back in revision.
    WatchOrder,
    /// A watch's progress notification named a revision older than one it had delivered.
    ProgressRegression,
    /// A watch event of an update or delete came without the previous value its watch asked
    /// for (prevKV): the apiserver fails such an event.
    MissingPrevKv,
    /// At the end, a watch cache (a list at R plus the events from R + 1) held an object
    /// at another revision than a fresh list at the cache's revision, or held one it does
    /// not have, or missed one it has.
    CacheDivergence,
}

impl Invariant {
    /// Every invariant, in report order.
    pub const ALL: [Invariant; 8] = [
        Self::UnexpectedConflict,
        Self::DuplicateCreate,
        Self::ListOrder,
        Self::ListCount,
        Self::WatchOrder,
        Self::ProgressRegression,
        Self::MissingPrevKv,
        Self::CacheDivergence,
    ];

    /// Number of invariants, for fixed-size count arrays.
    pub const COUNT: usize = Self::ALL.len();

    /// Position in [`Invariant::ALL`].
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The report's `invariants` section: how often each was violated in a run that sent the
/// apiserver's requests. All zero when etcd kept them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InvariantReport {
    /// One-writer updates and deletes that found their object changed by someone else.
    pub unexpected_conflicts: u64,
    /// Creates that succeeded on a name that existed.
    pub duplicate_creates: u64,
    /// Pinned lists whose keys did not strictly increase.
    pub list_order_violations: u64,
    /// Pinned lists whose pages held other than their first page's count.
    pub list_count_mismatches: u64,
    /// Watch events that went back in revision (summed over the workers' watches).
    pub watch_order_violations: u64,
    /// Progress notifications older than what their watch had delivered (summed over the
    /// workers' watches).
    pub progress_regressions: u64,
    /// Watch events of updates and deletes without the previous value asked for (summed
    /// over the workers' watches).
    pub missing_prev_kvs: u64,
    /// Objects a watch cache held otherwise than a fresh list at its revision at the end
    /// (summed over the workers' caches).
    pub cache_divergences: u64,
}

impl InvariantReport {
    /// The report of `counts`, indexed by [`Invariant::index`].
    #[must_use]
    pub fn from_counts(counts: &[u64; Invariant::COUNT]) -> Self {
        let of = |i: Invariant| counts[i.index()];
        Self {
            unexpected_conflicts: of(Invariant::UnexpectedConflict),
            duplicate_creates: of(Invariant::DuplicateCreate),
            list_order_violations: of(Invariant::ListOrder),
            list_count_mismatches: of(Invariant::ListCount),
            watch_order_violations: of(Invariant::WatchOrder),
            progress_regressions: of(Invariant::ProgressRegression),
            missing_prev_kvs: of(Invariant::MissingPrevKv),
            cache_divergences: of(Invariant::CacheDivergence),
        }
    }

    /// Every violation, together.
    #[must_use]
    pub fn violation_count(&self) -> u64 {
        self.unexpected_conflicts
            + self.duplicate_creates
            + self.list_order_violations
            + self.list_count_mismatches
            + self.watch_order_violations
            + self.progress_regressions
            + self.missing_prev_kvs
            + self.cache_divergences
    }

    /// Adds another shard's counts.
    pub fn add(&mut self, other: &Self) {
        self.unexpected_conflicts += other.unexpected_conflicts;
        self.duplicate_creates += other.duplicate_creates;
        self.list_order_violations += other.list_order_violations;
        self.list_count_mismatches += other.list_count_mismatches;
        self.watch_order_violations += other.watch_order_violations;
        self.progress_regressions += other.progress_regressions;
        self.missing_prev_kvs += other.missing_prev_kvs;
        self.cache_divergences += other.cache_divergences;
    }

    /// What failed, in words: one line, or none when every invariant held.
    #[must_use]
    pub fn failures(&self) -> Vec<String> {
        if self.violation_count() == 0 {
            return Vec::new();
        }
        vec![format!(
            "invariants: {} unexpected conflicts, {} duplicate creates, {} list order violations, {} list count mismatches, {} watch order violations, {} progress regressions, {} events without prevKV, {} cache divergences",
            self.unexpected_conflicts,
            self.duplicate_creates,
            self.list_order_violations,
            self.list_count_mismatches,
            self.watch_order_violations,
            self.progress_regressions,
            self.missing_prev_kvs,
            self.cache_divergences
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_their_named_field() {
        for inv in Invariant::ALL {
            let mut counts = [0; Invariant::COUNT];
            counts[inv.index()] = 3;
            let report = InvariantReport::from_counts(&counts);
            assert_eq!(report.violation_count(), 3, "{inv:?}");
            let json = serde_json::to_value(report).unwrap();
            let named: Vec<_> =
                json.as_object().unwrap().iter().filter(|(_, v)| **v == 3).collect();
            assert_eq!(named.len(), 1, "{inv:?} in {json}");
        }
        assert!(InvariantReport::default().failures().is_empty());
    }
}
