//! The requests kube-apiserver sends etcd (k8s.io/apiserver's `storage/etcd3`), as request
//! operations: `k8s-create`, `k8s-update`, `k8s-delete`, `k8s-get`, `k8s-list`,
//! `k8s-count`, `k8s-consistent-list` on [`ObjectOp`]'s objects, `k8s-event` on
//! [`EventOp`]'s, and `k8s-pod-lifecycle`, objects' whole lives ([`LifecycleOp`]).
//!
//! Objects live at `/registry/<resource>/<namespace>/<name>`, as the apiserver keeps them:
//! object `o` of `objects` is in namespace `ns-<o % namespaces>` and named
//! `<name-prefix><o>`, its number written in [`NAME_DIGITS`] digits so that a watch event's
//! key names its object without a lookup.
//!
//! Updates and deletes are optimistic as the apiserver's (`GuaranteedUpdate`): the
//! revision they compare comes from a watch cache fed by a real watch, so cache lag causes
//! real conflicts. Which clients write an object is a parameter (`writers-per-object`): with
//! one, each object has one writer and a conflict is a fault (checked while the run goes).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::size::SizeDistribution;
use super::{InvalidParam, check_positive, invalid};
use crate::op::OpKind;
use crate::unit;

/// Digits of an object's number in its name (`object-00000042`).
pub const NAME_DIGITS: usize = 8;

/// The most objects a resource may have: what [`NAME_DIGITS`] digits number.
pub const MAX_OBJECTS: u64 = 100_000_000;

/// The most updates one life of `k8s-pod-lifecycle` may have: more would be a typo, and a
/// run too short to delete a single object.
pub const MAX_UPDATES_PER_LIFE: u64 = 1_000_000;

/// Where the apiserver keeps everything, and the compactor its claim key
/// (`compact_rev_key`) at the root.
pub const REGISTRY: &str = "/registry";

/// Parameters of the apiserver's requests on one resource's objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ObjectOp {
    /// The resource, as in its key (`pods`, `minions`, `leases`, `configmaps`).
    /// Default `pods`.
    #[serde(default = "pods")]
    pub resource: String,
    /// Namespaces the objects are spread over (`ns-0`, `ns-1`, ...). Default 1.
    #[serde(default = "one")]
    pub namespaces: u64,
    /// The one namespace the objects are in, by name (`kube-node-lease`), instead of
    /// `ns-<n>`; `""`: the resource is cluster-scoped, its objects right under its prefix
    /// (`/registry/minions/<node>`). None by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Objects of the resource: create, update, delete and get choose among them.
    /// Default 1000.
    #[serde(default = "thousand")]
    pub objects: u64,
    /// What every name starts with, before its number. Default `object-`.
    #[serde(default = "object_prefix")]
    pub name_prefix: String,
    /// The size of an object's value as written (a pod is 4 to 15 KB, a node 15 KB, a
    /// node lease about 0.5 KB): fixed, or drawn per object from weighted ranges
    /// ([`SizeDistribution`]), the same for every write of the object. Default 1 KiB.
    #[serde(default = "kibibyte")]
    pub object_size: SizeDistribution,
    /// Logical clients that update and delete each object: client `c` writes the objects
    /// of its group, `c % groups`, where `groups = clients / writers-per-object` (at most
    /// `objects`). With 1 (the default) no two clients write one object.
    #[serde(default = "one")]
    pub writers_per_object: u64,
    /// Page size of `k8s-list` (the apiserver's `limit`); 0 lists in one page.
    /// Default 500 (kubectl's chunk size).
    #[serde(default = "five_hundred")]
    pub page_size: u64,
    /// A created object's time to live: `k8s-create` attaches it to a lease reused as the
    /// apiserver reuses them ([`EventOp`]). None by default.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Duration>,
    /// `k8s-list` only: the list is the watch cache's consistency checker's (1.34 on),
    /// pinned to the revision its apiserver's cache of the resource is at, not etcd's
    /// current one. Default false: a client's list that bypasses the cache.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_cache_revision: bool,
}

impl Default for ObjectOp {
    fn default() -> Self {
        Self {
            resource: pods(),
            namespaces: 1,
            namespace: None,
            objects: 1000,
            name_prefix: object_prefix(),
            object_size: kibibyte(),
            writers_per_object: 1,
            page_size: 500,
            ttl: None,
            at_cache_revision: false,
        }
    }
}

impl ObjectOp {
    /// The resource's prefix, `/registry/<resource>/`: what lists, counts and the watch
    /// cache read.
    #[must_use]
    pub fn prefix(&self) -> String {
        resource_prefix(&self.resource)
    }

    /// The key of object `o`: `/registry/<resource>/ns-<o % namespaces>/<name-prefix><o>`,
    /// or in its named namespace, or right under the prefix when cluster-scoped.
    #[must_use]
    pub fn key(&self, o: u64) -> String {
        let mut key = Vec::new();
        let (namespaces, name_prefix) = self.names();
        write_key(&mut key, &self.prefix(), namespaces, &name_prefix, o);
        String::from_utf8(key).expect("written from strings and digits")
    }

    /// The object `key` is the key of, if it is one of this layout's.
    #[must_use]
    pub fn object_at(&self, key: &[u8]) -> Option<u64> {
        let (namespaces, name_prefix) = self.names();
        object_at(key, &self.prefix(), namespaces, &name_prefix)
    }

    /// How [`write_key`] names its objects under the prefix: `namespaces` spread as
    /// `ns-<n>/`, or 0 and a name prefix that starts with the named namespace
    /// (`kube-node-lease/node-`), or with nothing for a cluster-scoped resource.
    #[must_use]
    pub fn names(&self) -> (u64, String) {
        match self.namespace.as_deref() {
            None => (self.namespaces, self.name_prefix.clone()),
            Some("") => (0, self.name_prefix.clone()),
            Some(namespace) => (0, format!("{namespace}/{}", self.name_prefix)),
        }
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_name(at, "resource", &self.resource)?;
        check_name(at, "name-prefix", &self.name_prefix)?;
        check_positive(at, "namespaces", self.namespaces)?;
        if let Some(namespace) = &self.namespace {
            check_name(at, "namespace", namespace)?;
            if self.namespaces != 1 {
                return Err(invalid(at, "namespaces", "more than 1 with a named namespace"));
            }
        }
        check_positive(at, "objects", self.objects)?;
        check_positive(at, "writers-per-object", self.writers_per_object)?;
        if self.objects > MAX_OBJECTS {
            return Err(invalid(at, "objects", format!("more than {MAX_OBJECTS}")));
        }
        if self.namespaces > self.objects {
            return Err(invalid(at, "namespaces", "more than objects: some would be empty"));
        }
        check_object_size(at, &self.object_size)?;
        if let Some(ttl) = self.ttl {
            check_ttl(at, ttl)?;
        }
        Ok(())
    }
}

/// Parameters of `k8s-pod-lifecycle`: objects that live as a pod does, each created, updated
/// `updates` times and deleted by the apiserver, one request at a time. Each logical client
/// runs its own objects one after another (request `k` of its cycle of `updates + 2` is
/// the create of a new one, then its updates, then its delete), each write comparing the
/// revision its own previous write returned: one writer per object, so every request
/// succeeds and a conflict is a fault. Names are never used twice, not even by another run
/// (as `k8s-event`'s); a run that ends in the middle of a life leaves its object behind, as
/// a cluster does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LifecycleOp {
    /// The resource, as in its key. Default `pods`.
    #[serde(default = "pods")]
    pub resource: String,
    /// Namespaces the objects are spread over (`ns-0`, `ns-1`, ...). Default 1.
    #[serde(default = "one")]
    pub namespaces: u64,
    /// What every name starts with, before the run's own part and its number. Default
    /// `object-`.
    #[serde(default = "object_prefix")]
    pub name_prefix: String,
    /// The size of an object's value as written, fixed or drawn per object
    /// ([`SizeDistribution`]). Default 1 KiB.
    #[serde(default = "kibibyte")]
    pub object_size: SizeDistribution,
    /// Updates in an object's life, between its create and its delete (a pod's scheduling,
    /// container states, readiness). Default 6.
    #[serde(default = "six")]
    pub updates: u64,
}

impl Default for LifecycleOp {
    fn default() -> Self {
        Self {
            resource: pods(),
            namespaces: 1,
            name_prefix: object_prefix(),
            object_size: kibibyte(),
            updates: 6,
        }
    }
}

impl LifecycleOp {
    /// The resource's prefix, `/registry/<resource>/`.
    #[must_use]
    pub fn prefix(&self) -> String {
        resource_prefix(&self.resource)
    }

    /// Requests in one object's life: its create, its updates and its delete.
    #[must_use]
    pub fn requests_per_life(&self) -> u64 {
        self.updates + 2
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_name(at, "resource", &self.resource)?;
        check_name(at, "name-prefix", &self.name_prefix)?;
        check_positive(at, "namespaces", self.namespaces)?;
        check_object_size(at, &self.object_size)?;
        if self.updates > MAX_UPDATES_PER_LIFE {
            return Err(invalid(at, "updates", format!("more than {MAX_UPDATES_PER_LIFE}")));
        }
        Ok(())
    }
}

/// Parameters of `k8s-event`: events created as the apiserver creates them, each a new
/// name, with a time to live through a lease it reuses: a lease serves the objects created
/// within `lease-reuse` of its grant, up to `lease-objects` of them, and is granted for the
/// TTL plus that time; nothing keeps it alive, and its expiry deletes its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct EventOp {
    /// Namespaces the events are spread over. Default 1.
    #[serde(default = "one")]
    pub namespaces: u64,
    /// An event's size as written, fixed or drawn per event ([`SizeDistribution`]).
    /// Default 1 KiB.
    #[serde(default = "kibibyte")]
    pub object_size: SizeDistribution,
    /// An event's time to live (the apiserver's `--event-ttl`). Default 1 h.
    #[serde(default = "hour", with = "unit::duration")]
    pub ttl: Duration,
    /// How long a lease is reused for new events. Default 60 s (the apiserver's, at most 5%
    /// of the TTL).
    #[serde(default = "minute", with = "unit::duration")]
    pub lease_reuse: Duration,
    /// The most events one lease carries. Default 1000.
    #[serde(default = "thousand")]
    pub lease_objects: u64,
}

impl Default for EventOp {
    fn default() -> Self {
        Self {
            namespaces: 1,
            object_size: kibibyte(),
            ttl: hour(),
            lease_reuse: minute(),
            lease_objects: 1000,
        }
    }
}

impl EventOp {
    /// The key prefix of events, `/registry/events/`.
    #[must_use]
    pub fn prefix(&self) -> String {
        resource_prefix("events")
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_positive(at, "namespaces", self.namespaces)?;
        check_positive(at, "lease-objects", self.lease_objects)?;
        check_object_size(at, &self.object_size)?;
        check_ttl(at, self.ttl)?;
        if self.lease_reuse > self.ttl {
            return Err(invalid(at, "lease-reuse", "longer than the ttl"));
        }
        Ok(())
    }
}

/// Kubernetes' API call latency SLO a kind of request is held to (sig-scalability's
/// `api_call_latency`, p99 over a day): mutating calls and single-object reads within 1 s,
/// lists within 30 s; with the name of its class. `None` for what the apiserver does on its
/// own (the compactor) and for other kinds.
#[must_use]
pub fn slo(kind: OpKind) -> Option<(&'static str, Duration)> {
    Verb::of(kind).and_then(Verb::slo)
}

/// What an apiserver request does to its resource, as Kubernetes' request metrics name it
/// (`k8s-event` is a create of `events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verb {
    /// `k8s-create`, `k8s-event`.
    Create,
    /// `k8s-update`.
    Update,
    /// `k8s-delete`.
    Delete,
    /// `k8s-get`.
    Get,
    /// `k8s-list`.
    List,
    /// `k8s-count`.
    Count,
    /// `k8s-consistent-list`.
    ConsistentList,
    /// A watch cache's watch delivering the worker's own writes (no request of its own:
    /// its latency is a write's event's delivery lag).
    Watch,
}

impl Verb {
    /// The verb of an apiserver request kind; `None` for other kinds and the compactor.
    #[must_use]
    pub fn of(kind: OpKind) -> Option<Self> {
        Some(match kind {
            OpKind::K8sCreate | OpKind::K8sEvent => Self::Create,
            OpKind::K8sUpdate => Self::Update,
            OpKind::K8sDelete => Self::Delete,
            OpKind::K8sGet => Self::Get,
            OpKind::K8sList => Self::List,
            OpKind::K8sCount => Self::Count,
            OpKind::K8sConsistentList => Self::ConsistentList,
            _ => return None,
        })
    }

    /// Its name, as in the report (`consistent-list`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Get => "get",
            Self::List => "list",
            Self::Count => "count",
            Self::ConsistentList => "consistent-list",
            Self::Watch => "watch",
        }
    }

    /// Whether the verdict holds it to its SLO as an API call: not counts (the apiserver's
    /// storage metrics count objects on their own; no client calls them), consistent lists
    /// (the consistent-read probe and the cache's wait for progress: the apiserver's own
    /// calls before it serves a list from its cache) or watches (no official SLO). Those
    /// are reported, not judged.
    #[must_use]
    pub fn judged(self) -> bool {
        !matches!(self, Self::Count | Self::ConsistentList | Self::Watch)
    }

    /// Kubernetes' latency SLO for it and the name of its class ([`slo`]); `None` for
    /// watches, which Kubernetes holds to no official SLO.
    #[must_use]
    pub fn slo(self) -> Option<(&'static str, Duration)> {
        Some(match self {
            Self::Create | Self::Update | Self::Delete => ("mutating", Duration::from_secs(1)),
            Self::Get => ("single-object read", Duration::from_secs(1)),
            Self::List | Self::Count | Self::ConsistentList => ("list", Duration::from_secs(30)),
            Self::Watch => return None,
        })
    }
}

/// One kind of apiserver request as Kubernetes reports it: a resource and a verb.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKind {
    /// The resource, as in its key (`pods`, `leases`, `minions`, `events`).
    pub resource: String,
    /// What the request does.
    pub verb: Verb,
}

/// The resource whose updates are node lease renewals (`/registry/leases/`): the one whose
/// longest gaps between renewals the report follows.
pub const NODE_LEASES: &str = "leases";

/// Kubernetes' `node-monitor-grace-period`: a node whose lease went this long without a
/// renewal is marked NotReady.
pub const NODE_MONITOR_GRACE: Duration = Duration::from_secs(40);

/// Where a resource's objects live: `/registry/<resource>/`.
fn resource_prefix(resource: &str) -> String {
    format!("{REGISTRY}/{resource}/")
}

/// Writes the key of object `o` into `out` (cleared first): the one place the layout is
/// written, for [`ObjectOp::key`] and the driver's reused buffers. With `namespaces` 0 no
/// `ns-<n>/` is written: the name prefix holds the namespace, or the resource is
/// cluster-scoped ([`ObjectOp::names`]).
pub fn write_key(out: &mut Vec<u8>, prefix: &str, namespaces: u64, name_prefix: &str, o: u64) {
    out.clear();
    out.extend_from_slice(prefix.as_bytes());
    if namespaces > 0 {
        out.extend_from_slice(b"ns-");
        push_decimal(out, o % namespaces, 1);
        out.push(b'/');
    }
    out.extend_from_slice(name_prefix.as_bytes());
    push_decimal(out, o, NAME_DIGITS);
}

/// The object whose key [`write_key`] writes as `key`, if any: its number from the name's
/// [`NAME_DIGITS`] digits, then the whole key checked against the layout (resource prefix,
/// the object's namespace, name prefix), without allocating (a watch cache reads every
/// event's key with it).
#[must_use]
pub fn object_at(key: &[u8], prefix: &str, namespaces: u64, name_prefix: &str) -> Option<u64> {
    let digits = key.get(key.len().checked_sub(NAME_DIGITS)?..)?;
    let o = digits
        .iter()
        .try_fold(0u64, |n, &d| d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0')))?;
    let mut name = key.strip_prefix(prefix.as_bytes())?;
    if namespaces > 0 {
        let (namespace, n) = decimal(o % namespaces, 1);
        name = name.strip_prefix(b"ns-")?.strip_prefix(&namespace[n..])?.strip_prefix(b"/")?;
    }
    let name = name.strip_prefix(name_prefix.as_bytes())?;
    (name.len() == NAME_DIGITS).then_some(o)
}

/// `n` in decimal, zero-padded to `width` digits, without formatting machinery: the digits
/// are `.0[.1..]`.
fn decimal(mut n: u64, width: usize) -> ([u8; 20], usize) {
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    while n > 0 || digits.len() - i < width {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    (digits, i)
}

fn push_decimal(out: &mut Vec<u8>, n: u64, width: usize) {
    let (digits, i) = decimal(n, width);
    out.extend_from_slice(&digits[i..]);
}

fn check_name(at: &str, field: &str, name: &str) -> Result<(), InvalidParam> {
    if name.is_empty() && field == "resource" {
        return Err(invalid(at, field, "must not be empty"));
    }
    if name.bytes().any(|b| b == b'/' || b.is_ascii_control()) {
        return Err(invalid(at, field, "must not hold '/' or control characters"));
    }
    if name.bytes().last().is_some_and(|b| b.is_ascii_digit()) && field == "name-prefix" {
        return Err(invalid(at, field, "must not end in a digit: the object's number follows"));
    }
    Ok(())
}

fn check_object_size(at: &str, size: &SizeDistribution) -> Result<(), InvalidParam> {
    size.validate_at(at, "object-size")
}

fn check_ttl(at: &str, ttl: Duration) -> Result<(), InvalidParam> {
    if ttl < Duration::from_secs(1) {
        return Err(invalid(at, "ttl", "must be at least 1s (a lease's TTL is in seconds)"));
    }
    if ttl.as_secs() > i64::MAX as u64 / 2 {
        return Err(invalid(at, "ttl", "is too large"));
    }
    Ok(())
}

fn pods() -> String {
    "pods".to_owned()
}
fn object_prefix() -> String {
    "object-".to_owned()
}
fn one() -> u64 {
    1
}
fn thousand() -> u64 {
    1000
}
fn six() -> u64 {
    6
}
fn five_hundred() -> u64 {
    500
}
fn kibibyte() -> SizeDistribution {
    SizeDistribution::Fixed(1024)
}
fn hour() -> Duration {
    Duration::from_secs(3600)
}
fn minute() -> Duration {
    Duration::from_secs(60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_apiserver_layout_and_name_their_object() {
        let op = ObjectOp { namespaces: 3, ..ObjectOp::default() };
        assert_eq!(op.key(42), "/registry/pods/ns-0/object-00000042");
        assert_eq!(op.key(7), "/registry/pods/ns-1/object-00000007");
        assert_eq!(op.prefix(), "/registry/pods/");
        for o in [0, 7, 42, MAX_OBJECTS - 1] {
            assert_eq!(op.object_at(op.key(o).as_bytes()), Some(o));
        }
        for other in [
            &b"/registry/pods/ns-0/x"[..],
            b"/registry/pods/ns-0/object-0000004x",
            b"/registry/pods/ns-1/object-00000042",
            b"/registry/pods/object-00000042",
            b"/registry/pods/ns-0/more-00000042",
            b"/registry/pods/ns-0/object-000000042",
            b"/registry/pods2/ns-0/object-00000042",
        ] {
            assert_eq!(op.object_at(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    /// The apiserver's operations are read from a scenario like any, mixed by weight, with
    /// thresholds on their kinds and the apiserver's compactor; a bad value is named with
    /// its place.
    #[test]
    fn scenarios_mix_them_like_any_operation() {
        use crate::{CompactionStyle, OpKind, Operation, Scenario};
        let text = "thresholds = ['k8s-update.p99 < \"1s\"', 'k8s-list.p99 < \"30s\"']\n\
            [load]\nclients = 4\ntotal = 10\n\
            [[mix]]\nweight = 6\n[mix.op.k8s-update]\nresource = \"minions\"\nobjects = 5000\nobject-size = \"15KiB\"\n\
            [[mix]]\nweight = 1\n[mix.op.k8s-list]\npage-size = 10000\n\
            [[mix]]\nweight = 3\n[mix.op.k8s-event]\nttl = \"30m\"\n\
            [compaction]\ninterval = \"5m\"\nstyle = \"apiserver\"\n";
        let s = Scenario::from_toml_str(text).unwrap();
        let ops: Vec<_> = s.workload().into_iter().map(|(w, op)| (w, op.clone())).collect();
        let Operation::K8sUpdate(update) = &ops[0].1 else { panic!("{ops:?}") };
        assert_eq!(
            (ops[0].0, update.object_size.clone(), update.key(3).as_str()),
            (6, SizeDistribution::Fixed(15 * 1024), "/registry/minions/ns-0/object-00000003")
        );
        assert_eq!(ops[1].1.kinds(), &[OpKind::K8sList]);
        let Operation::K8sEvent(event) = &ops[2].1 else { panic!("{ops:?}") };
        assert_eq!((event.ttl, event.lease_objects), (Duration::from_secs(1800), 1000));
        assert!(ops.iter().all(|(_, op)| op.is_kubernetes()));
        assert_eq!(s.compaction.unwrap().style, CompactionStyle::Apiserver);

        let err = Scenario::from_toml_str(&text.replace("objects = 5000", "objects = 0"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("line 9, column 11: mix.0.op.k8s-update.objects"), "{err}");
        let err = Scenario::from_toml_str(&text.replace("page-size", "page-sise")).unwrap_err();
        assert!(err.to_string().contains("page-sise"), "{err}");
    }

    /// `k8s-pod-lifecycle` takes the keys of a life (no object count: its names are new)
    /// and reports as the three kinds its requests are; an absurd `updates` is refused in
    /// one line naming the key, where it stands.
    #[test]
    fn a_pod_lifecycle_is_read_with_its_updates_and_refuses_absurd_ones() {
        use crate::{OpKind, Operation, Scenario};
        let with = |params: &str| {
            Scenario::from_toml_str(&format!(
                "[load]\nclients = 2\ntotal = 16\n[op.k8s-pod-lifecycle]\n{params}\n"
            ))
        };
        let s = with("").unwrap();
        let Some(Operation::K8sPodLifecycle(life)) = &s.op else { panic!("{:?}", s.op) };
        assert_eq!(*life, LifecycleOp::default());
        assert_eq!(
            (life.resource.as_str(), life.updates, life.requests_per_life()),
            ("pods", 6, 8)
        );
        let op = Operation::K8sPodLifecycle(life.clone());
        assert_eq!(op.kinds(), &[OpKind::K8sCreate, OpKind::K8sUpdate, OpKind::K8sDelete]);
        assert!(op.is_kubernetes() && op.objects().is_none());

        let s = with("resource = \"configmaps\"\nnamespaces = 3\nname-prefix = \"cm-\"\nobject-size = \"4KiB\"\nupdates = 0")
            .unwrap();
        let Some(Operation::K8sPodLifecycle(life)) = &s.op else { panic!("{:?}", s.op) };
        assert_eq!(
            (
                life.prefix().as_str(),
                life.namespaces,
                life.object_size.clone(),
                life.requests_per_life()
            ),
            ("/registry/configmaps/", 3, 4096.into(), 2)
        );

        with("updates = 1000000").unwrap();
        let err = with("updates = 1000001").unwrap_err().to_string();
        assert_eq!(
            err, "line 5, column 11: op.k8s-pod-lifecycle.updates: more than 1000000",
            "one line, naming the key"
        );
        let err = with("updates = -1").unwrap_err().to_string();
        assert!(err.starts_with("line 5, column 11: ") && !err.contains('\n'), "{err}");
        let err = with("objects = 10").unwrap_err().to_string();
        assert!(err.contains("unknown field `objects`"), "{err}");
        let err = with("namespaces = 0").unwrap_err().to_string();
        assert!(err.contains("op.k8s-pod-lifecycle.namespaces"), "{err}");
    }

    #[test]
    fn bad_parameters_are_named() {
        let bad = |op: ObjectOp| op.validate_at("op.k8s-update").unwrap_err().field;
        assert_eq!(bad(ObjectOp { objects: 0, ..ObjectOp::default() }), "op.k8s-update.objects");
        assert_eq!(
            bad(ObjectOp { resource: "a/b".into(), ..ObjectOp::default() }),
            "op.k8s-update.resource"
        );
        assert_eq!(
            bad(ObjectOp { name_prefix: "p1".into(), ..ObjectOp::default() }),
            "op.k8s-update.name-prefix"
        );
        assert_eq!(
            bad(ObjectOp { ttl: Some(Duration::from_millis(10)), ..ObjectOp::default() }),
            "op.k8s-update.ttl"
        );
        let event = EventOp { lease_reuse: Duration::from_secs(7200), ..EventOp::default() };
        assert_eq!(
            event.validate_at("op.k8s-event").unwrap_err().field,
            "op.k8s-event.lease-reuse"
        );
    }
}
