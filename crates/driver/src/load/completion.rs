//! What a completed request did, as the operations report it to the worker's loop.

use std::time::Instant;

use crate::transport::message::ResponseHeader;

/// What a successful request did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Done {
    /// Keys written or read.
    pub keys: u64,
    /// Value bytes written or read.
    pub value_bytes: u64,
    /// Attempts beyond the first (STM conflicts, an apiserver update's retries).
    pub retries: u64,
    /// Compares that failed (an apiserver update's or delete's stale revisions).
    pub conflicts: u64,
    /// Pages read (an apiserver list's).
    pub pages: u64,
    /// Of the pages, those whose answer took longer than Kubernetes' list SLO.
    pub slow_pages: u64,
    /// The slowest page's time from its send to its answer, us (an apiserver list's).
    pub slowest_page_us: u64,
    /// The object an apiserver update or delete wrote (its number in its resource): which
    /// node lease a renewal renewed.
    pub object: u64,
    /// The member that answered (from the response header; 0 when unknown).
    pub member: u64,
    /// The response header's revision (0 when none): for the audit.
    pub revision: i64,
    /// A single-key range's: the mod revision of the key it found (0: none): for the audit.
    pub mod_revision: i64,
    /// A streamed range's: when its first message arrived.
    pub first_message: Option<Instant>,
}

impl Done {
    /// A request answered with `header` that wrote or read `keys` keys and `value_bytes`.
    pub(crate) fn answered(header: Option<&ResponseHeader>, keys: u64, value_bytes: u64) -> Self {
        Self {
            keys,
            value_bytes,
            member: member_of(header),
            revision: revision_of(header),
            ..Self::default()
        }
    }
}

/// The member id in a response header.
pub(crate) fn member_of(header: Option<&ResponseHeader>) -> u64 {
    header.map_or(0, |h| h.member_id)
}

/// The revision in a response header.
pub(crate) fn revision_of(header: Option<&ResponseHeader>) -> i64 {
    header.map_or(0, |h| h.revision)
}
