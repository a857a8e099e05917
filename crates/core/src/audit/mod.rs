//! The consistency audit: every acknowledged write accounted for, reads' freshness measured.
//!
//! etcd gives every write a revision from one total order, so a client can check its own
//! history without a general linearizability search. With `[checks] audit = true` each
//! worker appends one `Entry` per request to a buffer of its own (no locks; 56 bytes an
//! entry, `ENTRY_BYTES`); after the run the buffers are concatenated and checked:
//!
//! - **Real-time order** (`check`): a write acknowledged before another write was sent has
//!   a lower revision; a linearizable read (or a delete that found nothing, which etcd
//!   answers at its current revision) sent after a write was acknowledged answers at that
//!   revision or later, and a single-key linearizable read that finds its key returns a mod
//!   revision no older than the last put of that key acknowledged before it was sent. One
//!   sort by send time and one by acknowledgement, then a sweep with the highest revision
//!   acknowledged so far: O(n log n).
//! - **Unique revisions**: no two acknowledged writes share a revision.
//! - **Lost writes** ([`ReadPlan`], [`ReadBack`]): the driver reads every written key back
//!   (its current mod revision) and every acknowledged put at its own revision; a put whose
//!   key does not hold it there, or whose key is now older than it (with no delete that
//!   could explain an absent key), is lost. Writes of unknown outcome (a timeout, a lost
//!   connection, abandoned at the stop) are counted apart and never called lost.
//! - **Staleness** of serializable reads, a measurement: how many revisions the answer is
//!   behind the newest write acknowledged when the read was sent, and for how long the
//!   first write it missed had been acknowledged, per member.
//!
//! ```
//! use etcdlat_core::audit::{self, Access, Entry, Outcome};
//! use etcdlat_core::OpKind;
//! let put = |key, rev, sent_ns, done_ns| Entry {
//!     sent_ns, done_ns, revision: rev, key, outcome: Outcome::Ok,
//!     ..Entry::new(OpKind::Put, Access::Put, 0)
//! };
//! // The second put was sent after the first was acknowledged, yet got a lower revision.
//! let history = [put(1, 10, 0, 100), put(2, 9, 200, 300)];
//! let report = audit::check(&history, None, &|id| format!("{id:x}"));
//! assert_eq!(report.order_violations, 1);
//! assert_eq!(report.violations[0].check, "order");
//! ```

mod check;
mod readback;
mod report;

// The checker and the read-back plan are the driver's (internal, not part of the API); the
// report is the API.
#[doc(hidden)]
pub use check::check;
#[doc(hidden)]
pub use readback::{AtRevision, KeyRef, ReadBack, ReadPlan};
pub use report::{AuditReport, MAX_VIOLATIONS, MemberStaleness, Staleness, Violation};

use crate::op::OpKind;

/// `Entry::key` of a request that names no single key (a fixed range, a delete of a range).
#[doc(hidden)] // internal: the driver's per-request record; not part of the API
pub const NO_KEY: u64 = u64::MAX;

/// What one audited request does to the store, as the checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[doc(hidden)] // internal: the driver's per-request record; not part of the API
pub enum Access {
    /// Sets its key at its revision: a put, txn-mixed's write, the first key of a txn-put.
    Put,
    /// Another key of the transaction of the [`Access::Put`] entry before it: the same
    /// revision, not a write of its own for the order and uniqueness checks.
    PutMore,
    /// Deleted at least one key, at a revision of its own.
    Delete,
    /// A delete that found nothing: nothing was written, and etcd answered at its current
    /// revision, as a linearizable read.
    DeleteNothing,
    /// A linearizable read (range, or txn-mixed's read).
    Read,
    /// A serializable read: answered from the member's own state, perhaps behind.
    SerializableRead,
}

impl Access {
    /// Whether the request wrote at a revision of its own.
    #[must_use]
    pub fn is_write(self) -> bool {
        matches!(self, Self::Put | Self::Delete)
    }
}

/// How an audited request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[doc(hidden)] // internal: the driver's per-request record; not part of the API
pub enum Outcome {
    /// Answered with success.
    Ok,
    /// Refused: etcd said it did not apply it.
    Failed,
    /// Unknown: it may have been applied (a timeout, a lost connection, still in flight
    /// when the run stopped). Every entry starts so, until its answer arrives.
    Unknown,
}

/// One audited request. Times are nanoseconds since the run's audit epoch (the start of
/// measurement); `done_ns` is meaningful once an answer arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)] // internal: the driver's per-request record; not part of the API
pub struct Entry {
    /// When the request was sent, ns since the epoch.
    pub sent_ns: u64,
    /// When its answer arrived, ns since the epoch.
    pub done_ns: u64,
    /// The answer's header revision (0: none).
    pub revision: i64,
    /// A single-key read's: the mod revision of the key it returned (0: none, or not a
    /// single-key read).
    pub mod_revision: i64,
    /// The id of the member that answered (0: unknown).
    pub member: u64,
    /// The key's index in its key space, or [`NO_KEY`].
    pub key: u64,
    /// The key space `key` belongs to, numbered by the driver: equal numbers, equal keys.
    pub space: u16,
    /// The operation kind, to name the request.
    pub op: OpKind,
    /// What it does to the store.
    pub access: Access,
    /// How it ended.
    pub outcome: Outcome,
}

/// Bytes one [`Entry`] takes in a worker's buffer.
#[doc(hidden)] // internal: the driver's per-request record; not part of the API
pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

impl Entry {
    /// An entry of a request just sent: no key, no answer yet (outcome unknown).
    #[must_use]
    pub fn new(op: OpKind, access: Access, sent_ns: u64) -> Self {
        Self {
            sent_ns,
            done_ns: 0,
            revision: 0,
            mod_revision: 0,
            member: 0,
            key: NO_KEY,
            space: 0,
            op,
            access,
            outcome: Outcome::Unknown,
        }
    }

    /// Its key, if it names one.
    #[must_use]
    pub fn key_ref(&self) -> Option<KeyRef> {
        (self.key != NO_KEY).then_some(KeyRef { space: self.space, key: self.key })
    }

    /// Acknowledged with a revision.
    fn acked(&self) -> bool {
        self.outcome == Outcome::Ok && self.revision > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_56_bytes() {
        assert_eq!(ENTRY_BYTES, 56);
    }
}
