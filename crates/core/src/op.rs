//! Operation kinds ([`OpKind`]) and per-request outcomes ([`ErrorCode`], mapped from the
//! gRPC code and counted in a fixed array, never turned into a string per request).

use serde::{Deserialize, Serialize};

/// The kind of request a measurement is about. Each kind gets its own histograms and
/// error counts in a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum OpKind {
    /// A Put request.
    Put,
    /// A Range request; with a streamed range (RangeStream, etcd 3.7+), from the request to
    /// its last response message.
    Range,
    /// A streamed range's first response message: from the request to the first message
    /// (its last is [`OpKind::Range`]).
    RangeFirst,
    /// A DeleteRange request.
    Delete,
    /// A transaction of puts (txn-put).
    TxnPut,
    /// A single-read transaction (txn-mixed).
    TxnRead,
    /// A single-write transaction (txn-mixed).
    TxnWrite,
    /// A LeaseGrant request.
    LeaseGrant,
    /// A LeaseRevoke request.
    LeaseRevoke,
    /// One lease keep-alive round trip.
    LeaseKeepalive,
    /// An STM transaction, from first attempt to commit (retries included).
    Stm,
    /// A Compact request (background compaction).
    Compact,
    /// Creating a watch: request sent to `created` confirmation.
    WatchCreate,
    /// A watch event: from the put's send to the event's arrival.
    WatchEvent,
    /// A watch event: from the put's acknowledgement to the event's arrival.
    WatchEventAcked,
    /// The apiserver's create (a Txn on mod revision 0), its lease grant when one is due.
    K8sCreate,
    /// The apiserver's optimistic update, from the first attempt to the one that wrote
    /// (conflicts and retries included).
    K8sUpdate,
    /// The apiserver's optimistic delete, retries included.
    K8sDelete,
    /// The apiserver's get of one object from etcd.
    K8sGet,
    /// The apiserver's paginated list from etcd, every page in one sample.
    K8sList,
    /// The apiserver's count of a resource's objects.
    K8sCount,
    /// The apiserver's consistent read: the revision, then the watch cache caught up to it.
    K8sConsistentList,
    /// The apiserver's event create on a reused lease, its lease grant when one is due.
    K8sEvent,
    /// The apiserver's compactor's claim: a Txn on `compact_rev_key`'s version.
    K8sCompactor,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 24] = [
        OpKind::Put,
        OpKind::Range,
        OpKind::RangeFirst,
        OpKind::Delete,
        OpKind::TxnPut,
        OpKind::TxnRead,
        OpKind::TxnWrite,
        OpKind::LeaseGrant,
        OpKind::LeaseRevoke,
        OpKind::LeaseKeepalive,
        OpKind::Stm,
        OpKind::Compact,
        OpKind::WatchCreate,
        OpKind::WatchEvent,
        OpKind::WatchEventAcked,
        OpKind::K8sCreate,
        OpKind::K8sUpdate,
        OpKind::K8sDelete,
        OpKind::K8sGet,
        OpKind::K8sList,
        OpKind::K8sCount,
        OpKind::K8sConsistentList,
        OpKind::K8sEvent,
        OpKind::K8sCompactor,
    ];

    /// Number of kinds, for fixed-size per-kind arrays.
    pub const COUNT: usize = Self::ALL.len();

    /// The name used in reports and JSON (`put`, `range`, `txn-read`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Put => "put",
            Self::Range => "range",
            Self::RangeFirst => "range-first",
            Self::Delete => "delete",
            Self::TxnPut => "txn-put",
            Self::TxnRead => "txn-read",
            Self::TxnWrite => "txn-write",
            Self::LeaseGrant => "lease-grant",
            Self::LeaseRevoke => "lease-revoke",
            Self::LeaseKeepalive => "lease-keepalive",
            Self::Stm => "stm",
            Self::Compact => "compact",
            Self::WatchCreate => "watch-create",
            Self::WatchEvent => "watch-event",
            Self::WatchEventAcked => "watch-event-acked",
            Self::K8sCreate => "k8s-create",
            Self::K8sUpdate => "k8s-update",
            Self::K8sDelete => "k8s-delete",
            Self::K8sGet => "k8s-get",
            Self::K8sList => "k8s-list",
            Self::K8sCount => "k8s-count",
            Self::K8sConsistentList => "k8s-consistent-list",
            Self::K8sEvent => "k8s-event",
            Self::K8sCompactor => "k8s-compactor",
        }
    }

    /// Position in [`OpKind::ALL`].
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a request failed: the gRPC status code the server (or the client library on its
/// behalf) returned. Counted per kind in a fixed array; never turned into a string per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request was cancelled, typically because the run stopped while it was in flight.
    Cancelled = 0,
    /// Unknown error.
    Unknown,
    /// The request was invalid (for etcd: too large, bad range, ...).
    InvalidArgument,
    /// The deadline passed before the request completed.
    DeadlineExceeded,
    /// Not found.
    NotFound,
    /// Already exists.
    AlreadyExists,
    /// Permission denied (auth).
    PermissionDenied,
    /// Out of resources (for etcd: too many requests, or no space).
    ResourceExhausted,
    /// Failed precondition (for etcd: compacted revision, ...).
    FailedPrecondition,
    /// Aborted.
    Aborted,
    /// Out of range (for etcd: future revision).
    OutOfRange,
    /// Unimplemented.
    Unimplemented,
    /// Internal error.
    Internal,
    /// The server could not be reached or is unavailable (no leader, connection lost, ...).
    Unavailable,
    /// Data loss.
    DataLoss,
    /// Not authenticated.
    Unauthenticated,
}

impl ErrorCode {
    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 16] = [
        Self::Cancelled,
        Self::Unknown,
        Self::InvalidArgument,
        Self::DeadlineExceeded,
        Self::NotFound,
        Self::AlreadyExists,
        Self::PermissionDenied,
        Self::ResourceExhausted,
        Self::FailedPrecondition,
        Self::Aborted,
        Self::OutOfRange,
        Self::Unimplemented,
        Self::Internal,
        Self::Unavailable,
        Self::DataLoss,
        Self::Unauthenticated,
    ];

    /// Number of codes, for fixed-size count arrays.
    pub const COUNT: usize = Self::ALL.len();

    /// The code for a numeric gRPC status (1..=16); 0 (OK) and unknown numbers map to `Unknown`.
    #[must_use]
    pub fn from_grpc(code: i32) -> Self {
        usize::try_from(code)
            .ok()
            .and_then(|c| c.checked_sub(1))
            .and_then(|i| Self::ALL.get(i).copied())
            .unwrap_or(Self::Unknown)
    }

    /// The gRPC name, as used in reports (`InvalidArgument`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Cancelled => "Cancelled",
            Self::Unknown => "Unknown",
            Self::InvalidArgument => "InvalidArgument",
            Self::DeadlineExceeded => "DeadlineExceeded",
            Self::NotFound => "NotFound",
            Self::AlreadyExists => "AlreadyExists",
            Self::PermissionDenied => "PermissionDenied",
            Self::ResourceExhausted => "ResourceExhausted",
            Self::FailedPrecondition => "FailedPrecondition",
            Self::Aborted => "Aborted",
            Self::OutOfRange => "OutOfRange",
            Self::Unimplemented => "Unimplemented",
            Self::Internal => "Internal",
            Self::Unavailable => "Unavailable",
            Self::DataLoss => "DataLoss",
            Self::Unauthenticated => "Unauthenticated",
        }
    }

    /// The code for a name written by [`ErrorCode::name`].
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Position in [`ErrorCode::ALL`].
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_codes_map_by_number() {
        assert_eq!(ErrorCode::from_grpc(1), ErrorCode::Cancelled);
        assert_eq!(ErrorCode::from_grpc(3), ErrorCode::InvalidArgument);
        assert_eq!(ErrorCode::from_grpc(14), ErrorCode::Unavailable);
        assert_eq!(ErrorCode::from_grpc(16), ErrorCode::Unauthenticated);
        assert_eq!(ErrorCode::from_grpc(0), ErrorCode::Unknown);
        assert_eq!(ErrorCode::from_grpc(99), ErrorCode::Unknown);
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_name(c.name()), Some(c));
            assert_eq!(ErrorCode::from_grpc(c as i32 + 1), c);
        }
    }
}
