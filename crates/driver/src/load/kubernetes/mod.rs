//! The apiserver's requests (`k8s-*`, [`etcdlat_core::workload::kubernetes`]) as
//! k8s.io/apiserver's `storage/etcd3` sends them: prepared once per run ([`Workload`]), run
//! by one [`Runner`] per worker, executed once per request.
//!
//! - create: `Txn(If mod_revision(key) == 0, Then Put [lease])`; not succeeded is the
//!   apiserver's AlreadyExists.
//! - update (`GuaranteedUpdate`): `Txn(If mod_revision(key) == r, Then Put, Else Get)`, `r`
//!   from the run's watch cache ([`cache`]), or from a Get when the cache does not hold
//!   the object (as the apiserver reads etcd when it has no cached object); on a conflict
//!   it retries with the revision the Else's Get returned. Conflicts and retries are
//!   counted.
//! - delete: as update, with Delete in Then.
//! - get: a linearizable Range of the key, limit 1; absent is NotFound.
//! - list: Range with `page-size`, the first page at the current revision and the others
//!   pinned to it, each from the last key + `\0`; one sample, its pages counted, and each
//!   page timed as the API call it is (those over the list SLO and the slowest).
//! - count: a count-only Range of the resource's prefix.
//! - consistent list: a Get of the resource's own key (`/registry/<resource>`, limit 1) for
//!   the current revision, then the watch cache caught up to it (progress requests
//!   meanwhile), as a consistent read from the apiserver's cache.
//! - event: a create of a new name on a lease reused as the apiserver reuses them ([`lease`]).
//! - pod lifecycle: a logical client's objects' lives one after another, each a create of a
//!   new name, its updates and its delete, each write comparing the revision its own
//!   previous write returned (the client's [`ClientState`] holds where it is); the kind a
//!   request is reported under is its place in the life.
//!
//! The run plays one apiserver: one watch cache per resource ([`Shared`]), which every
//! worker's requests read and write through and etcd feeds by one watch; one lease in use
//! per operation per worker. Which object a request writes: creates and gets take object
//! `i % objects` of request `i`; updates and deletes take the next of their client's
//! group's objects (`writers-per-object`), so that with one writer per object no two
//! clients write one; node lease renewals (one writer per object) take the nodes in turn,
//! all workers' clients together, so that each node is renewed at the lease interval as its
//! kubelet renews it, not whenever its client happens to draw a renewal; events and lives'
//! objects are named by the run, their worker and a
//! count of its own, and are in no cache's slots (their names are without bound): a cache
//! of their resource passes over their events. Lives' writes are timed by their resource's
//! cache all the same, as every write the apiserver makes reaches its watch cache (one made
//! for them, holding no object, when no other operation needs one). The checks
//! of [`etcdlat_core::invariant`] are counted in the run's [`Checks`], and its caches are
//! checked against a fresh list when the run ends.

mod cache;
mod checks;
mod lease;
mod list;
mod shared;
mod steady;
mod stream;
mod write;

pub(crate) use checks::Checks;
pub(crate) use shared::{Ended, Shared};
pub(crate) use steady::{Expiry, observe_expiry, preload_events};
pub(crate) use stream::RangeStreamSupport;

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use bytes::Bytes;
use etcdlat_core::invariant::Invariant;
use etcdlat_core::workload::apiserver::ApiserverVersion;
use etcdlat_core::workload::keyspace::random_value;
use etcdlat_core::workload::kubernetes::{
    EventOp, LifecycleOp, NODE_LEASES, ObjectOp, RequestKind, Verb, write_key,
};
use etcdlat_core::workload::size::{SizeDistribution, draw, name_seed};
use etcdlat_core::workload::{Operation, prefix_end};
use etcdlat_core::{OpKind, Scenario};

use super::completion::Done;
use crate::transport::message::RangeRequest;
use crate::transport::{Conn, Kv};
use cache::Cache;
use lease::Leases;
use list::next_key;

/// What an operation's requests do: one of the apiserver's verbs on objects of the
/// scenario's names, a create of events of new names, or the lives of objects (a create,
/// updates, a delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Verb(Verb),
    Event,
    Lifecycle,
}

/// A `k8s-pod-lifecycle`'s lives: how long each is, and where its requests are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lifecycle {
    /// Updates between an object's create and its delete.
    updates: u64,
    /// Its number among the run's lifecycles: its place in each client's [`ClientState`].
    index: usize,
    /// The (resource, create), (resource, update) and (resource, delete) slots.
    slots: [usize; 3],
}

impl Lifecycle {
    /// The kinds of its requests, in the order of `slots`.
    const KINDS: [OpKind; 3] = [OpKind::K8sCreate, OpKind::K8sUpdate, OpKind::K8sDelete];

    /// What the request at `step` of a life is: 0 the create, 1 an update, 2 the delete
    /// (an index into [`Lifecycle::KINDS`] and `slots`).
    fn verb_at(&self, step: u64) -> usize {
        match step {
            0 => 0,
            s if s <= self.updates => 1,
            _ => 2,
        }
    }
}

/// Where a resource's objects are: `/registry/<resource>/ns-<n>/<name-prefix><o>`, or with
/// `namespaces` 0 `/registry/<resource>/<name-prefix><o>`, the name prefix holding a named
/// namespace ([`ObjectOp::names`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Layout {
    /// `/registry/<resource>/`.
    prefix: String,
    namespaces: u64,
    name_prefix: String,
}

impl Layout {
    fn of(o: &ObjectOp) -> Self {
        let (namespaces, name_prefix) = o.names();
        Self { prefix: o.prefix(), namespaces, name_prefix }
    }

    /// The named namespace all its objects are in (node leases' `kube-node-lease`, the
    /// apiservers' identity leases' `kube-system`), held in its name prefix; `None` when
    /// they are spread over namespaces or cluster-scoped.
    pub(super) fn namespace(&self) -> Option<&str> {
        let named = self.namespaces == 0;
        named.then(|| self.name_prefix.rsplit_once('/')).flatten().map(|(namespace, _)| namespace)
    }

    /// The keys a watch cache of its objects lists and watches: its named namespace's
    /// (`/registry/leases/kube-node-lease/`), as the apiserver's cache of the resource
    /// receives each of them once, or else the resource's.
    pub(super) fn watched(&self) -> String {
        match self.namespace() {
            Some(namespace) => format!("{}{namespace}/", self.prefix),
            None => self.prefix.clone(),
        }
    }
}

/// One `k8s-*` operation, prepared from the scenario.
#[derive(Debug)]
pub(crate) struct Workload {
    action: Action,
    layout: Layout,
    objects: u64,
    /// The objects of its names the scenario's operations use, all together: its cache's.
    cached_objects: u64,
    /// Random bytes of the largest size its objects may have: each write's value is the
    /// first of them, as many as its object's size ([`Runner::value`]).
    value: Bytes,
    /// Its objects' sizes, drawn per object.
    sizes: SizeDistribution,
    /// Writer groups: client `c` updates and deletes the objects `o` with
    /// `o % groups == c % groups`.
    groups: u64,
    /// No other client writes an object this operation writes: a conflict is a fault.
    single_writer: bool,
    page_size: i64,
    /// Lease time to live and reuse, when objects are created with a TTL.
    lease: Option<lease::Plan>,
    /// Its (resource, verb)'s number among the run's ([`Request`]).
    slot: usize,
    /// Its updates renew node leases: the recorder follows each object's renewals.
    renews: bool,
    /// Renewals taken in turn by every worker's clients together: the next renews node
    /// `turn % objects`, so each node's lease is renewed once every `objects` renewals, at
    /// the node-lease interval as a kubelet renews it. `None` for other operations, and for
    /// renewals with several writers per object (racing them is their point).
    turns: Option<AtomicU64>,
    /// The (resource, `watch`)'s slot, for its cache's delivery of the worker's own writes.
    watch_slot: usize,
    /// A `k8s-pod-lifecycle`'s lives.
    life: Option<Lifecycle>,
    /// A list pinned to its apiserver's cache's revision (the consistency checker's).
    at_cache_revision: bool,
}

/// What the worker records of an apiserver request besides its kind: its (resource, verb)'s
/// slot ([`etcdlat_core::recorder::kubernetes`]) and, for node lease renewals, how many
/// objects the renewals are of.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recorded {
    /// The (resource, verb)'s slot.
    pub slot: usize,
    /// For node lease renewals, the leases' objects: the size of the renewal table.
    pub renewed_of: Option<u64>,
}

/// The slot of `kind` in `slots`, added when new: numbered in the order the scenario's
/// operations first name them, the same on every worker.
fn slot_of(kind: RequestKind, slots: &mut Vec<RequestKind>) -> usize {
    match slots.iter().position(|k| *k == kind) {
        Some(slot) => slot,
        None => {
            slots.push(kind);
            slots.len() - 1
        }
    }
}

impl Workload {
    /// The operation `op` of `scenario` if it is one of the apiserver's; `seed` tells this
    /// run's event and lifecycle names from another's; its (resource, verb)s get their
    /// numbers in `slots`, and a lifecycle its number among the run's from `lives`.
    pub(crate) fn new(
        op: &Operation,
        scenario: &Scenario,
        seed: u64,
        slots: &mut Vec<RequestKind>,
        lives: &mut usize,
    ) -> Option<Self> {
        let verb = match op {
            Operation::K8sEvent(e) => {
                let kind = RequestKind { resource: "events".to_owned(), verb: Verb::Create };
                return Some(Self::events(e, seed, slot_of(kind, slots)));
            }
            Operation::K8sPodLifecycle(l) => {
                *lives += 1;
                return Some(Self::lives(l, seed, slots, *lives - 1));
            }
            // The other apiserver operations report under one kind each, of one verb.
            _ => Verb::of(*op.kinds().first()?)?,
        };
        let o = op.objects()?;
        let clients = u64::from(scenario.load.clients);
        let layout = Layout::of(o);
        let same_names = |other: &ObjectOp| Layout::of(other) == layout;
        // One cache holds every object of these names that any operation writes or reads.
        let cached_objects = scenario
            .workload()
            .iter()
            .filter_map(|(_, other)| other.objects().filter(|other| same_names(other)))
            .map(|other| other.objects)
            .max()
            .unwrap_or(o.objects);
        let groups = (clients / o.writers_per_object).clamp(1, o.objects);
        // Creates of the same resource write objects whatever client owns them.
        let created = scenario
            .workload()
            .iter()
            .any(|(_, other)| matches!(other, Operation::K8sCreate(c) if same_names(c)));
        // The apiservers' identity leases are leases too, but not nodes'.
        let renews = verb == Verb::Update
            && o.resource == NODE_LEASES
            && o.namespace.as_deref() != Some(etcdlat_core::scenario::kubernetes::KUBE_SYSTEM);
        let slot = slot_of(RequestKind { resource: o.resource.clone(), verb }, slots);
        let watch_slot =
            slot_of(RequestKind { resource: o.resource.clone(), verb: Verb::Watch }, slots);
        Some(Self {
            action: Action::Verb(verb),
            layout,
            objects: o.objects,
            cached_objects,
            value: Bytes::from(random_value(o.object_size.max() as usize, seed)),
            sizes: o.object_size.clone(),
            groups,
            // Two renewals of one node in turn are out together only when one is out
            // longer than the lease interval: then they may conflict, and retry.
            single_writer: o.writers_per_object == 1 && groups == clients && !created && !renews,
            page_size: i64::try_from(o.page_size).unwrap_or(i64::MAX),
            // Objects with a TTL share leases as events do, on the apiserver's defaults.
            lease: o.ttl.map(|ttl| lease::Plan::new(ttl, &EventOp::default())),
            slot,
            renews,
            turns: (renews && o.writers_per_object == 1).then(AtomicU64::default),
            watch_slot,
            life: None,
            at_cache_revision: verb == Verb::List && o.at_cache_revision,
        })
    }

    fn events(e: &EventOp, seed: u64, slot: usize) -> Self {
        Self {
            lease: Some(lease::Plan::new(e.ttl, e)),
            ..Self::named(
                Action::Event,
                e.prefix(),
                e.namespaces,
                "event-",
                &e.object_size,
                seed,
                slot,
            )
        }
    }

    /// Lifecycle `index` of the run: each of its objects has one writer, the client whose
    /// life it is.
    fn lives(l: &LifecycleOp, seed: u64, slots: &mut Vec<RequestKind>, index: usize) -> Self {
        let mut slot = |verb| slot_of(RequestKind { resource: l.resource.clone(), verb }, slots);
        let slots = [slot(Verb::Create), slot(Verb::Update), slot(Verb::Delete)];
        let watch_slot = slot(Verb::Watch);
        let life = Lifecycle { updates: l.updates, index, slots };
        let (prefix, size) = (l.prefix(), &l.object_size);
        Self {
            single_writer: true,
            life: Some(life),
            watch_slot,
            ..Self::named(
                Action::Lifecycle,
                prefix,
                l.namespaces,
                &l.name_prefix,
                size,
                seed,
                slots[0],
            )
        }
    }

    /// An operation on objects of new names, the run's own: never created twice, not even
    /// by another run (each worker adds its own part, see `Runner::new`), and in no watch
    /// cache's slots (their names are without bound).
    fn named(
        action: Action,
        prefix: String,
        namespaces: u64,
        name_prefix: &str,
        object_size: &SizeDistribution,
        seed: u64,
        slot: usize,
    ) -> Self {
        Self {
            action,
            layout: Layout {
                prefix,
                namespaces,
                name_prefix: format!("{name_prefix}{seed:016x}-"),
            },
            objects: u64::MAX,
            cached_objects: 0,
            value: Bytes::from(random_value(object_size.max() as usize, seed)),
            sizes: object_size.clone(),
            groups: 1,
            single_writer: false,
            page_size: 0,
            lease: None,
            slot,
            renews: false,
            turns: None,
            // Never used by events: no watch cache watches them, as kube-apiserver's
            // `DefaultWatchCacheSizes` gives events a cache of 0, which disables it.
            watch_slot: slot,
            life: None,
            at_cache_revision: false,
        }
    }

    /// The kinds its requests are reported under: one, or a lifecycle's three.
    pub(crate) fn kinds(&self) -> &'static [OpKind] {
        match self.action {
            Action::Verb(Verb::Create) => &[OpKind::K8sCreate],
            Action::Verb(Verb::Update) => &[OpKind::K8sUpdate],
            Action::Verb(Verb::Delete) => &[OpKind::K8sDelete],
            Action::Verb(Verb::Get) => &[OpKind::K8sGet],
            Action::Verb(Verb::List) => &[OpKind::K8sList],
            Action::Verb(Verb::Count) => &[OpKind::K8sCount],
            Action::Verb(Verb::ConsistentList) => &[OpKind::K8sConsistentList],
            Action::Verb(Verb::Watch) => unreachable!("no operation's requests are watches"),
            Action::Event => &[OpKind::K8sEvent],
            Action::Lifecycle => &Lifecycle::KINDS,
        }
    }

    /// Whether its requests need the apiservers' watch caches of its resource.
    fn cached(&self) -> bool {
        matches!(self.action, Action::Verb(Verb::Update | Verb::Delete | Verb::ConsistentList))
            || self.at_cache_revision
    }
}

/// One `k8s-*` operation as one worker runs it.
pub(crate) struct Runner {
    plan: Arc<Workload>,
    /// Each apiserver's cache of its objects, by apiserver (empty when it needs none).
    caches: Vec<Arc<Cache>>,
    /// The release whose read path it follows.
    release: ApiserverVersion,
    /// Whether its apiservers try RangeStream for their lists from etcd (when the release
    /// does).
    streams: Option<Arc<RangeStreamSupport>>,
    /// Apiservers: client `c` is served by apiserver `c % apiservers`.
    apiservers: u32,
    leases: Option<Leases>,
    checks: Arc<Checks>,
    /// The key being built, reused from request to request.
    key: RefCell<Vec<u8>>,
    /// What its names start with: the plan's, and for new names (events, lives' objects)
    /// the worker's own besides.
    name_prefix: String,
    /// Objects of new names this worker created: the next one's number.
    named: Cell<u64>,
    /// What draws its objects' sizes: its names' ([`name_seed`] of the prefix and name
    /// prefix), so that an object has one size in every write of every run, the preload's
    /// and the history's too; the run's and the worker's own for new names.
    size_seed: u64,
}

/// A logical client's place in its group's objects, and in its lives.
#[derive(Default)]
pub(crate) struct ClientState {
    next: u64,
    /// Its life in each of the run's lifecycles, by [`Lifecycle::index`]; made at its first
    /// request of one.
    lives: Vec<Life>,
}

impl ClientState {
    /// The request of lifecycle `life` the client sends next: 0 the create, then the updates,
    /// then the delete.
    fn step(state: Option<&Self>, life: &Lifecycle) -> u64 {
        state.and_then(|s| s.lives.get(life.index)).map_or(0, |l| l.step)
    }
}

/// Where a logical client is in the life of its current object of one lifecycle.
#[derive(Debug, Clone, Copy, Default)]
struct Life {
    /// The object's number among its worker's.
    object: u64,
    /// Its next request's place: 0 the create, 1 to `updates` the updates, then the delete.
    step: u64,
    /// The revision its last write returned; 0 when not known (that write failed): the next
    /// write reads it from etcd first.
    revision: i64,
}

impl Runner {
    /// The worker's runner of `plan`, on the apiservers' caches of its resource;
    /// `worker_seed` tells its events' and lives' names from other workers'. Creates and
    /// lives time their events' delivery on their apiserver's cache of their resource,
    /// when it has one (their writes reach it through its watch only).
    pub(crate) fn new(plan: Arc<Workload>, shared: &Shared, worker_seed: u64) -> Self {
        let caches = match plan.action {
            Action::Lifecycle => shared.caches_of_resource(&plan.layout.prefix),
            action if plan.cached() || action == Action::Verb(Verb::Create) => {
                shared.caches_of(&plan.layout)
            }
            _ => Vec::new(),
        };
        let leases = plan.lease.map(Leases::new);
        // Request indices repeat from warm-up to measurement and, in a timed run, from one
        // worker to the next: an event or a life's object is named by its worker and its
        // number there.
        let name_prefix = match plan.action {
            Action::Event | Action::Lifecycle => {
                format!("{}{worker_seed:016x}-", plan.layout.name_prefix)
            }
            _ => plan.layout.name_prefix.clone(),
        };
        let size_seed = name_seed(&format!("{}{name_prefix}", plan.layout.prefix));
        Self {
            plan,
            caches,
            release: shared.release,
            streams: shared.streams.clone(),
            apiservers: shared.apiservers.max(1),
            leases,
            checks: Arc::clone(&shared.checks),
            key: RefCell::default(),
            size_seed,
            name_prefix,
            named: Cell::new(0),
        }
    }

    /// The kind the next request of a client in `state` (`None`: it has none yet) is
    /// reported under: the operation's, or in a lifecycle its place in the client's life.
    pub(crate) fn kind(&self, state: Option<&ClientState>) -> OpKind {
        match &self.plan.life {
            Some(life) => Lifecycle::KINDS[life.verb_at(ClientState::step(state, life))],
            None => self.plan.kinds()[0],
        }
    }

    /// What the worker records of the next request of a client in `state` besides its kind.
    pub(crate) fn request(&self, state: Option<&ClientState>) -> Recorded {
        let p = &self.plan;
        let slot = match &p.life {
            Some(life) => life.slots[life.verb_at(ClientState::step(state, life))],
            None => p.slot,
        };
        Recorded { slot, renewed_of: p.renews.then_some(p.objects) }
    }

    /// Whether the client must wait for the caches to be filled before its request.
    pub(crate) fn needs_start(&self) -> bool {
        self.caches.iter().any(|c| !c.started())
    }

    /// Fills the apiservers' caches and starts their watches (once per run), unmeasured.
    pub(crate) async fn start(&self, conn: &Conn) -> Result<(), tonic::Status> {
        for cache in &self.caches {
            cache.start(conn).await?;
        }
        Ok(())
    }

    /// How client `id`'s apiserver reads a list from etcd.
    fn streaming(&self, id: u32) -> list::Streaming<'_> {
        self.streams.as_deref().map(|support| (support, id % self.apiservers))
    }

    /// The cache of the apiserver that serves logical client `id`, if the operation has
    /// caches.
    fn cache(&self, id: u32) -> Option<&Arc<Cache>> {
        self.caches.get(id as usize % self.caches.len().max(1))
    }

    /// The key of object `o`.
    fn key(&self, o: u64) -> Bytes {
        let mut key = self.key.borrow_mut();
        let p = &self.plan;
        write_key(&mut key, &p.layout.prefix, p.layout.namespaces, &self.name_prefix, o);
        Bytes::copy_from_slice(&key)
    }

    /// The value written to object `o`: its size's first bytes of the plan's buffer, the
    /// same size every time, drawn from the operation's distribution by the object's
    /// number and names.
    fn value(&self, o: u64) -> &[u8] {
        let size = self.plan.sizes.at(draw(self.size_seed, o));
        &self.plan.value[..size as usize]
    }

    /// The object client `id` writes next.
    fn owned(&self, id: u32, state: &mut ClientState) -> u64 {
        let groups = self.plan.groups;
        let group = u64::from(id) % groups;
        let in_group = (self.plan.objects - group).div_ceil(groups);
        let o = group + groups * (state.next % in_group);
        state.next += 1;
        o
    }

    /// A list with no resourceVersion served from the watch cache (1.31 on): the probe for
    /// etcd's current revision, the cache caught up to it (progress requests meanwhile),
    /// the first page from the cache; before 1.34 the continue pages from etcd, pinned to
    /// the revision the cache served at, from the key after the first page's last. A
    /// cache that did not catch up in 3 s hands the list to etcd (the cacher's fallback).
    /// Its keys are those etcd sent (the probe's count and the pages from etcd), its
    /// pages all of them (the cache's first among them).
    async fn consistent_list(&self, kv: &mut Kv, id: u32) -> Result<Done, tonic::Status> {
        let resp = kv.range(self.resource_get()).await?;
        let revision = resp.header.map_or(0, |h| h.revision);
        let cache = self.cache(id).expect("a consistent list has its cache");
        let page_size = self.plan.page_size;
        if !cache.caught_up(revision).await {
            tracing::debug!(
                cache = cache.revision(),
                revision,
                "a watch cache did not catch up in {:?}: the list goes to etcd",
                cache::FRESH_WAIT
            );
            let req = RangeRequest { limit: page_size, ..self.prefix_range() };
            let listed = list::list(kv, req, self.streaming(id), &self.checks, |_| {}).await?;
            let done = Done::answered(listed.header.as_ref(), listed.keys, listed.value_bytes);
            return Ok(Done { pages: listed.pages, ..done });
        }
        let probed = Done::answered(resp.header.as_ref(), resp.count.max(0) as u64, 0);
        let first_page_end = match page_size {
            _ if self.release.continues_from_cache() => None,
            0 => None,
            n => cache.nth_key(n as u64),
        };
        let Some(last) = first_page_end else { return Ok(Done { pages: 1, ..probed }) };
        let continued = RangeRequest {
            key: next_key(&last),
            limit: page_size,
            revision: cache.revision(),
            ..self.prefix_range()
        };
        // Before 1.34, so before RangeStream: Range pages.
        let listed = list::list(kv, continued, None, &self.checks, |_| {}).await?;
        Ok(Done {
            pages: 1 + listed.pages,
            keys: probed.keys + listed.keys,
            value_bytes: listed.value_bytes,
            ..probed
        })
    }

    fn prefix_range(&self) -> RangeRequest {
        let prefix = self.plan.layout.prefix.as_bytes();
        RangeRequest {
            key: Bytes::copy_from_slice(prefix),
            range_end: Bytes::from(prefix_end(prefix)),
            ..RangeRequest::default()
        }
    }

    /// The apiserver's consistent-read probe (`GetCurrentResourceVersion`): a Get of the
    /// resource's own key, `/registry/<resource>` (no object has it), for the current
    /// revision without counting the objects under the prefix.
    fn resource_get(&self) -> RangeRequest {
        let prefix = self.plan.layout.prefix.as_bytes();
        get(Bytes::copy_from_slice(prefix.strip_suffix(b"/").unwrap_or(prefix)))
    }

    /// A list from etcd in pages of `page-size` (RangeStream pages where the release and
    /// etcd stream): at etcd's current revision, a client's list that bypasses the cache;
    /// or the consistency checker's, pinned to the revision client `id`'s apiserver's
    /// cache is at. A list of Range pages from the prefix is checked to read as many keys
    /// as its first page counted ([`Invariant::ListCount`]).
    async fn list(&self, kv: &mut Kv, id: u32) -> Result<Done, tonic::Status> {
        let revision = match self.plan.at_cache_revision {
            true => self.cache(id).expect("a checker's list has its cache").revision(),
            false => 0,
        };
        let req = RangeRequest { limit: self.plan.page_size, revision, ..self.prefix_range() };
        let listed = list::list(kv, req, self.streaming(id), &self.checks, |_| {}).await?;
        if listed.count.is_some_and(|count| count != listed.keys) {
            self.checks.violated(Invariant::ListCount);
        }
        let done = Done::answered(listed.header.as_ref(), listed.keys, listed.value_bytes);
        Ok(Done {
            pages: listed.pages,
            slow_pages: listed.slow_pages,
            slowest_page_us: listed.slowest_page_us,
            ..done
        })
    }
}

/// What etcd answers a request for a revision it has compacted (`ErrCompacted`).
const COMPACTED: &str = "required revision has been compacted";

/// Whether etcd failed `status`'s request because the revision it asked for was compacted
/// (a list pinned to it, a watch from it): a scan of the message of a failure, never of a
/// success.
pub(crate) fn compacted(status: &tonic::Status) -> bool {
    status.message().contains(COMPACTED)
}

/// A linearizable Range of one key, with limit 1 as the apiserver's Get
/// (`kubernetes.Client.Get` in etcd's client).
fn get(key: Bytes) -> RangeRequest {
    RangeRequest { key, limit: 1, ..RangeRequest::default() }
}

fn not_found() -> tonic::Status {
    tonic::Status::not_found("the object does not exist")
}

#[cfg(test)]
mod tests;
