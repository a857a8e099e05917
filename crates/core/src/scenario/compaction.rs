//! `[compaction]`: background compaction during a run, etcd benchmark's or the apiserver's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ScenarioError;
use crate::unit;

/// Background compaction during a run, as etcd benchmark's `put --compact-interval`, or as
/// kube-apiserver's compactor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Compaction {
    /// Compact this often.
    #[serde(with = "unit::duration")]
    pub interval: Duration,
    /// Keep this many revisions: compact at the current revision minus this. Default 1000.
    /// Not used by the apiserver's compactor.
    #[serde(default = "thousand")]
    pub index_delta: u64,
    /// Whose compaction: etcd benchmark's (the default) or the apiserver's.
    #[serde(default, skip_serializing_if = "CompactionStyle::is_benchmark")]
    pub style: CompactionStyle,
}

/// How background compaction chooses its revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionStyle {
    /// etcd benchmark's: every interval, the current revision minus `index-delta`.
    #[default]
    Benchmark,
    /// kube-apiserver's: every interval, a Txn on `compact_rev_key`'s version (the claim
    /// that several apiservers make one compaction, measured as `k8s-compactor`), then, if
    /// it won, Compact to the revision its claim saw one interval before.
    Apiserver,
}

impl CompactionStyle {
    pub(super) fn is_benchmark(&self) -> bool {
        *self == Self::Benchmark
    }
}

impl Compaction {
    /// Checks the `[compaction]` section.
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
        if self.interval < Duration::from_millis(100) {
            return Err(ScenarioError::invalid("compaction.interval", "must be at least 100ms"));
        }
        Ok(())
    }
}

fn thousand() -> u64 {
    1000
}
