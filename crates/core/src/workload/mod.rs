//! Workloads: the operations a scenario runs, with their parameters, the keys they choose
//! and how they are checked.
//!
//! Request operations (`put`, `range`, `delete`, `txn-put`, `txn-mixed`, `lease-*`, `stm`,
//! and the apiserver's `k8s-*`) run in the request loop of every logical client and can be mixed by weight; stream
//! workloads (`watch`, `watch-get`, `watch-latency`) organise a run of their own.
//! Names, flags and defaults follow etcd's benchmark tool.
//!
//! One file per family: `kv` (put, range, delete), `txn`, `lease`, `stm`, `watch` and
//! [`kubernetes`] (kube-apiserver's requests); [`keyspace`] makes their keys.

#[doc(hidden)] // internal: the driver's key and value generators; not part of the API
pub mod apiserver;
pub mod keyspace;
pub mod kubernetes;
mod kv;
mod lease;
pub mod size;
mod stm;
mod txn;
mod watch;

use serde::{Deserialize, Serialize};

use crate::op::OpKind;

pub use keyspace::{KeyTarget, escape_key, key_bytes, prefix_end, range_start};
pub use kubernetes::{EventOp, LifecycleOp, ObjectOp};
pub use kv::{Consistency, DEFAULT_PAGE_SIZE, DeleteOp, PutOp, RangeOp};
pub use lease::LeaseOp;
pub use size::{SizeDistribution, SizeRange};
pub use stm::{Isolation, StmLocker, StmOp};
pub use txn::{TxnMixedOp, TxnPutOp};
pub use watch::{WatchGetOp, WatchLatencyOp, WatchOp};

/// The largest value size a scenario may ask for. etcd rejects requests over its
/// `--max-request-bytes` (1.5 MiB by default); larger values are allowed so that the
/// rejection itself can be measured, but not without bound.
pub const MAX_VALUE_SIZE: u64 = 256 << 20;

/// What a scenario runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Operation {
    /// Put a key, as etcd's `benchmark put`.
    Put(PutOp),
    /// Read a key or a range, as etcd's `benchmark range`.
    Range(RangeOp),
    /// Delete a key or a range (DeleteRange).
    Delete(DeleteOp),
    /// Transactions of `txn-ops` puts each, as etcd's `benchmark txn-put`.
    TxnPut(TxnPutOp),
    /// Single-op transactions, reads or writes by `rw-ratio`, as etcd's `benchmark txn-mixed`.
    TxnMixed(TxnMixedOp),
    /// Grant a lease.
    LeaseGrant(LeaseOp),
    /// Revoke a lease (granted beforehand, unmeasured, when the client holds none).
    LeaseRevoke(LeaseOp),
    /// One keep-alive round trip on the client's lease, as etcd's `benchmark lease-keepalive`.
    LeaseKeepalive(LeaseOp),
    /// Software transactional memory transactions, as etcd's `benchmark stm`.
    Stm(StmOp),
    /// Watchers on streams, then puts on the watched keys, as etcd's `benchmark watch`.
    Watch(WatchOp),
    /// Serializable gets while many unsynced watchers catch up, as `benchmark watch-get`.
    WatchGet(WatchGetOp),
    /// Put-to-event latency on many watchers of one key, as `benchmark watch-latency`.
    WatchLatency(WatchLatencyOp),
    /// The apiserver's create: `Txn(If mod_revision(key) == 0, Then Put)`, the put on a
    /// reused lease when the objects have a TTL.
    K8sCreate(ObjectOp),
    /// The apiserver's `GuaranteedUpdate`: `Txn(If mod_revision == r, Then Put, Else Get)`
    /// with `r` from the watch cache, retried with the object from `Else` on a conflict.
    K8sUpdate(ObjectOp),
    /// The apiserver's delete: `Txn(If mod_revision == r, Then Delete, Else Get)`, retried as
    /// an update.
    K8sDelete(ObjectOp),
    /// The apiserver's get from etcd: a linearizable Range of one key.
    K8sGet(ObjectOp),
    /// The apiserver's list from etcd: pages of `page-size`, the first at the current
    /// revision, the others pinned to it, each from the last key + `\0`; one sample.
    K8sList(ObjectOp),
    /// The apiserver's object count: a count-only Range of the resource's prefix.
    K8sCount(ObjectOp),
    /// The apiserver's consistent read from its cache: a Get of the resource's own key
    /// (`/registry/<resource>`, limit 1) for the current revision, then watch progress
    /// requests until the cache has caught up.
    K8sConsistentList(ObjectOp),
    /// The apiserver's event create: a new name each, on a reused lease of the event TTL.
    K8sEvent(EventOp),
    /// A pod's life as the apiserver writes it, one request at a time: each logical client
    /// creates a new object (as `k8s-create`), updates it `updates` times and deletes it
    /// (as `k8s-update` and `k8s-delete`, comparing the revision its own last write
    /// returned), then starts the next; reported as those three kinds.
    K8sPodLifecycle(LifecycleOp),
}

impl Operation {
    /// The operation's name, as in TOML and on the command line.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Put(_) => "put",
            Self::Range(_) => "range",
            Self::Delete(_) => "delete",
            Self::TxnPut(_) => "txn-put",
            Self::TxnMixed(_) => "txn-mixed",
            Self::LeaseGrant(_) => "lease-grant",
            Self::LeaseRevoke(_) => "lease-revoke",
            Self::LeaseKeepalive(_) => "lease-keepalive",
            Self::Stm(_) => "stm",
            Self::Watch(_) => "watch",
            Self::WatchGet(_) => "watch-get",
            Self::WatchLatency(_) => "watch-latency",
            Self::K8sCreate(_) => "k8s-create",
            Self::K8sUpdate(_) => "k8s-update",
            Self::K8sDelete(_) => "k8s-delete",
            Self::K8sGet(_) => "k8s-get",
            Self::K8sList(_) => "k8s-list",
            Self::K8sCount(_) => "k8s-count",
            Self::K8sConsistentList(_) => "k8s-consistent-list",
            Self::K8sEvent(_) => "k8s-event",
            Self::K8sPodLifecycle(_) => "k8s-pod-lifecycle",
        }
    }

    /// The kinds of measurement this operation reports.
    #[must_use]
    pub fn kinds(&self) -> &'static [OpKind] {
        match self {
            Self::Put(_) => &[OpKind::Put],
            Self::Range(r) if r.stream => &[OpKind::Range, OpKind::RangeFirst],
            Self::Range(_) => &[OpKind::Range],
            Self::Delete(_) => &[OpKind::Delete],
            Self::TxnPut(_) => &[OpKind::TxnPut],
            Self::TxnMixed(_) => &[OpKind::TxnRead, OpKind::TxnWrite],
            Self::LeaseGrant(_) => &[OpKind::LeaseGrant],
            Self::LeaseRevoke(_) => &[OpKind::LeaseRevoke],
            Self::LeaseKeepalive(_) => &[OpKind::LeaseKeepalive],
            Self::Stm(_) => &[OpKind::Stm],
            Self::Watch(_) => &[OpKind::Put, OpKind::WatchCreate, OpKind::WatchEvent],
            Self::WatchGet(_) => &[OpKind::Range, OpKind::WatchCreate],
            Self::WatchLatency(_) => {
                &[OpKind::Put, OpKind::WatchCreate, OpKind::WatchEvent, OpKind::WatchEventAcked]
            }
            Self::K8sCreate(_) => &[OpKind::K8sCreate],
            Self::K8sUpdate(_) => &[OpKind::K8sUpdate],
            Self::K8sDelete(_) => &[OpKind::K8sDelete],
            Self::K8sGet(_) => &[OpKind::K8sGet],
            Self::K8sList(_) => &[OpKind::K8sList],
            Self::K8sCount(_) => &[OpKind::K8sCount],
            Self::K8sConsistentList(_) => &[OpKind::K8sConsistentList],
            Self::K8sEvent(_) => &[OpKind::K8sEvent],
            Self::K8sPodLifecycle(_) => &[OpKind::K8sCreate, OpKind::K8sUpdate, OpKind::K8sDelete],
        }
    }

    /// Whether this is a stream workload (watch family) that runs on its own rather than in
    /// the request loop; such operations cannot be mixed.
    #[must_use]
    pub fn is_stream(&self) -> bool {
        matches!(self, Self::Watch(_) | Self::WatchGet(_) | Self::WatchLatency(_))
    }

    /// The apiserver's objects this operation works on, if it is one of its (`k8s-*` but
    /// `k8s-event` and `k8s-pod-lifecycle`, whose objects are new names of the run's).
    #[must_use]
    pub fn objects(&self) -> Option<&ObjectOp> {
        match self {
            Self::K8sCreate(o)
            | Self::K8sUpdate(o)
            | Self::K8sDelete(o)
            | Self::K8sGet(o)
            | Self::K8sList(o)
            | Self::K8sCount(o)
            | Self::K8sConsistentList(o) => Some(o),
            _ => None,
        }
    }

    /// Whether this is one of the apiserver's operations (`k8s-*`).
    #[must_use]
    pub fn is_kubernetes(&self) -> bool {
        self.objects().is_some() || matches!(self, Self::K8sEvent(_) | Self::K8sPodLifecycle(_))
    }

    /// Whether `[checks] audit` records its requests ([`crate::audit`]): the key-value
    /// operations, not leases, STM or watches.
    #[must_use]
    pub fn is_audited(&self) -> bool {
        matches!(
            self,
            Self::Put(_) | Self::Range(_) | Self::Delete(_) | Self::TxnPut(_) | Self::TxnMixed(_)
        )
    }

    /// The seed the operation asks for, if any.
    #[must_use]
    pub fn seed(&self) -> Option<u64> {
        match self {
            Self::Put(p) => p.seed,
            Self::TxnPut(t) => t.seed,
            Self::TxnMixed(t) => t.seed,
            Self::Stm(s) => s.seed,
            _ => None,
        }
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        let at = format!("{at}.{}", self.name());
        match self {
            Self::Put(p) => p.validate_at(&at),
            Self::Range(r) => r.validate_at(&at),
            Self::Delete(d) => d.validate_at(&at),
            Self::TxnPut(t) => t.validate_at(&at),
            Self::TxnMixed(t) => t.validate_at(&at),
            Self::LeaseGrant(l) | Self::LeaseRevoke(l) | Self::LeaseKeepalive(l) => {
                l.validate_at(&at)
            }
            Self::Stm(s) => s.validate_at(&at),
            Self::Watch(w) => w.validate_at(&at),
            Self::WatchGet(w) => w.validate_at(&at),
            Self::WatchLatency(w) => w.validate_at(&at),
            Self::K8sEvent(e) => e.validate_at(&at),
            Self::K8sPodLifecycle(l) => l.validate_at(&at),
            // The apiserver's operations on objects, all of one parameter type.
            _ => self.objects().expect("the other operations have objects").validate_at(&at),
        }
    }
}

/// One operation of a weighted mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Weighted {
    /// Relative share of requests (80, 15, 5 for an 80/15/5 mix).
    pub weight: u32,
    /// The operation.
    pub op: Operation,
}

/// A parameter of an operation that cannot be run. The scenario reports it as
/// `ScenarioError::Invalid`, with its place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidParam {
    /// Dotted path of the field, as written in TOML (`op.put.key-size`).
    pub(crate) field: String,
    /// What is wrong with it.
    pub(crate) message: String,
}

fn invalid(at: &str, field: &str, message: impl Into<String>) -> InvalidParam {
    InvalidParam { field: format!("{at}.{field}"), message: message.into() }
}

fn check_val_size(at: &str, val_size: u64) -> Result<(), InvalidParam> {
    if val_size > MAX_VALUE_SIZE {
        return Err(invalid(
            at,
            "val-size",
            format!("{val_size} bytes is more than the supported {MAX_VALUE_SIZE}"),
        ));
    }
    Ok(())
}

fn check_positive(at: &str, field: &str, value: u64) -> Result<(), InvalidParam> {
    if value == 0 {
        return Err(invalid(at, field, "must be more than 0"));
    }
    Ok(())
}

// Defaults shared by the families' serde attributes.
fn one() -> u64 {
    1
}
fn eight() -> u64 {
    8
}
fn hundred() -> u64 {
    100
}
fn thousand() -> u64 {
    1000
}
