//! Request operations: prepared once per run ([`Work`]), instantiated once per worker
//! ([`Ops`]), executed once per request.
//!
//! A weighted mix picks one operation per request; each operation reports under its own
//! [`OpKind`]. State a logical client carries between requests (its leases, its keep-alive
//! stream) lives in its [`ClientState`], created lazily so that clients of operations that
//! need none cost nothing.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use etcdlat_core::audit::{Access, NO_KEY};
use etcdlat_core::workload::keyspace::{KeyGen, KeySpace, random_value};
use etcdlat_core::workload::kubernetes::RequestKind;
use etcdlat_core::workload::{Consistency, KeyTarget, Operation};
use etcdlat_core::{OpKind, Scenario};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::audit_log::{Recording, Spaces};
use super::completion::Done;
use super::{kubernetes, stm};
use crate::transport::frame::{decode, frame, frame_put};
use crate::transport::message::{
    DELETE_RANGE, DeleteRangeRequest, DeleteRangeResponse, Key, PUT, PutRequest, PutResponse,
    RANGE, RangeRequest, RangeResponse, Request, Response, ResponseHeader, TxnRequest,
};
use crate::transport::{Conn, Kv, status};

/// Leases a client remembers for later revocation; older ones are left to expire.
const MAX_HELD_LEASES: usize = 1024;

/// One operation, prepared from the scenario.
#[derive(Debug)]
/// `space` is the audit's number of the operation's key space ([`Spaces`]).
enum Prepared {
    Put { keys: KeySpace, value: Vec<u8>, space: u16 },
    Range { target: KeyTarget, template: RangeRequest, mode: RangeMode, space: u16 },
    Delete { target: KeyTarget, space: u16 },
    TxnPut { keys: KeySpace, ops: u64, value: Vec<u8>, space: u16 },
    TxnMixed { read: RangeRequest, keys: KeySpace, value: Vec<u8>, p_read: f64, space: u16 },
    LeaseGrant { ttl: i64 },
    LeaseRevoke { ttl: i64 },
    LeaseKeepalive { ttl: i64 },
    Stm(Arc<stm::Workload>),
    K8s(Arc<kubernetes::Workload>),
}

/// How a range is read: one Range, one RangeStream, or Ranges a page at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RangeMode {
    Unary,
    Stream,
    /// Pages of this many keys, each at the first one's revision.
    Paginate(i64),
}

/// The request operations of a run and their weights, shared read-only by the workers.
#[derive(Debug)]
pub(crate) struct Work {
    ops: Vec<(u32, Prepared)>,
    seed: u64,
    /// The key spaces the operations use and the values they write, for the audit.
    spaces: Spaces,
    /// The apiserver's (resource, verb)s the operations send, by slot.
    requests: Vec<RequestKind>,
    /// The watch caches and checks the apiserver's operations share, when it has any.
    k8s: Option<Arc<kubernetes::Shared>>,
}

fn range_template(key: Bytes, range_end: Bytes, consistency: Consistency) -> RangeRequest {
    RangeRequest {
        key,
        range_end,
        serializable: consistency == Consistency::Serializable,
        ..RangeRequest::default()
    }
}

impl Work {
    /// Prepares the request operations of `scenario` (not its stream workload); the
    /// apiserver's lists try RangeStream as `streams` says (the driver's).
    pub(crate) fn prepare(
        scenario: &Scenario,
        seed: u64,
        streams: &Arc<kubernetes::RangeStreamSupport>,
    ) -> Self {
        let mut spaces = Spaces::default();
        let (mut requests, mut lives) = (Vec::new(), 0);
        let ops = scenario
            .workload()
            .into_iter()
            .filter(|(_, op)| !op.is_stream())
            .map(|(weight, op)| {
                let k8s = kubernetes::Workload::new(op, scenario, seed, &mut requests, &mut lives);
                let prepared = match k8s {
                    Some(k8s) => Prepared::K8s(Arc::new(k8s)),
                    None => Self::prepare_one(op, seed, &mut spaces),
                };
                (weight, prepared)
            })
            .collect::<Vec<_>>();
        let plans: Vec<&kubernetes::Workload> = ops
            .iter()
            .filter_map(|(_, p)| match p {
                Prepared::K8s(plan) => Some(&**plan),
                _ => None,
            })
            .collect();
        let k8s = (!plans.is_empty())
            .then(|| Arc::new(kubernetes::Shared::new(plans, scenario, streams)));
        Self { ops, seed, spaces, requests, k8s }
    }

    /// Whether the apiserver's operations have watch caches to fill before the run.
    pub(crate) fn has_caches(&self) -> bool {
        self.k8s.as_ref().is_some_and(|k| k.has_caches())
    }

    /// Fills the apiserver's operations' watch caches on `conn`, their watches started on
    /// this thread ([`kubernetes::Shared::fill`]).
    pub(crate) async fn fill_caches(&self, conn: &Conn) -> Result<(), tonic::Status> {
        match &self.k8s {
            Some(k8s) => k8s.fill(conn).await,
            None => Ok(()),
        }
    }

    /// The run starts on `workers` workers, measured from `measure_from`: the apiserver's
    /// operations count their workers' ends, and their watch caches measure from then.
    pub(crate) fn begin(&self, workers: usize, measure_from: std::time::Instant) {
        if let Some(k8s) = &self.k8s {
            k8s.begin(workers, measure_from);
        }
    }

    /// The apiserver's (resource, verb)s the operations send, by the slot their requests
    /// are recorded under.
    pub(crate) fn request_kinds(&self) -> &[RequestKind] {
        &self.requests
    }

    /// The most audit entries one request makes: a txn-put's keys, else 1.
    pub(crate) fn parts(&self) -> u64 {
        self.ops
            .iter()
            .map(|(_, p)| match p {
                Prepared::TxnPut { ops, .. } => *ops,
                _ => 1,
            })
            .max()
            .unwrap_or(1)
    }

    /// The key spaces of the operations, numbered as the audit's entries number them.
    pub(crate) fn spaces(&self) -> &Spaces {
        &self.spaces
    }

    fn prepare_one(op: &Operation, seed: u64, spaces: &mut Spaces) -> Prepared {
        let ttl = |t: u64| i64::try_from(t).unwrap_or(i64::MAX);
        let mut target_space = |target: &KeyTarget| match target {
            KeyTarget::Space(keys) => spaces.number(keys),
            KeyTarget::Fixed { .. } => 0,
        };
        match op {
            Operation::Put(p) => {
                let (keys, value) = (p.key_space(), random_value(p.val_size as usize, seed));
                let space = spaces.number(&keys);
                spaces.writes(space, &value);
                Prepared::Put { keys, value, space }
            }
            Operation::Range(r) => {
                let mut template = range_template(Bytes::new(), Bytes::new(), r.consistency);
                template.limit = i64::try_from(r.limit).unwrap_or(i64::MAX);
                template.keys_only = r.keys_only;
                template.count_only = r.count_only;
                let target = r.target();
                let mode = if r.stream {
                    RangeMode::Stream
                } else if r.paginate {
                    RangeMode::Paginate(i64::try_from(r.page_size).unwrap_or(i64::MAX))
                } else {
                    RangeMode::Unary
                };
                Prepared::Range { space: target_space(&target), target, template, mode }
            }
            Operation::Delete(d) => {
                let target = d.target();
                Prepared::Delete { space: target_space(&target), target }
            }
            Operation::TxnPut(t) => {
                let (keys, value) = (t.key_space(), random_value(t.val_size as usize, seed));
                let space = spaces.number(&keys);
                spaces.writes(space, &value);
                Prepared::TxnPut { keys, ops: t.txn_ops, value, space }
            }
            Operation::TxnMixed(t) => {
                let mut read = range_template(
                    Bytes::from(t.read_start()),
                    Bytes::from(t.read_end()),
                    t.consistency,
                );
                read.limit = i64::try_from(t.limit).unwrap_or(i64::MAX);
                let (keys, value) = (t.key_space(), random_value(t.val_size as usize, seed));
                let space = spaces.number(&keys);
                spaces.writes(space, &value);
                Prepared::TxnMixed { read, keys, value, p_read: t.read_probability(), space }
            }
            Operation::LeaseGrant(l) => Prepared::LeaseGrant { ttl: ttl(l.ttl) },
            Operation::LeaseRevoke(l) => Prepared::LeaseRevoke { ttl: ttl(l.ttl) },
            Operation::LeaseKeepalive(l) => Prepared::LeaseKeepalive { ttl: ttl(l.ttl) },
            Operation::Stm(s) => Prepared::Stm(Arc::new(stm::Workload::new(s, seed))),
            // Stream workloads are filtered out before, the apiserver's prepared by
            // `kubernetes::Workload`.
            op => unreachable!("{} is not prepared here", op.name()),
        }
    }

    /// Every kind the operations report.
    pub(crate) fn kinds(&self) -> Vec<OpKind> {
        let mut kinds: Vec<OpKind> = self
            .ops
            .iter()
            .flat_map(|(_, p)| match p {
                Prepared::Put { .. } => &[OpKind::Put][..],
                Prepared::Range { mode: RangeMode::Stream, .. } => {
                    &[OpKind::Range, OpKind::RangeFirst][..]
                }
                Prepared::Range { .. } => &[OpKind::Range],
                Prepared::Delete { .. } => &[OpKind::Delete],
                Prepared::TxnPut { .. } => &[OpKind::TxnPut],
                Prepared::TxnMixed { .. } => &[OpKind::TxnRead, OpKind::TxnWrite],
                Prepared::LeaseGrant { .. } => &[OpKind::LeaseGrant],
                Prepared::LeaseRevoke { .. } => &[OpKind::LeaseRevoke],
                Prepared::LeaseKeepalive { .. } => &[OpKind::LeaseKeepalive],
                Prepared::Stm(_) => &[OpKind::Stm],
                Prepared::K8s(k8s) => k8s.kinds(),
            })
            .copied()
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// This worker's instance of the operations; `worker_seed` gives it its own random
    /// streams.
    pub(crate) fn instantiate(self: &Arc<Self>, worker_seed: u64) -> Ops {
        let mut total = 0;
        let items: Vec<(u32, Instance)> = self
            .ops
            .iter()
            .enumerate()
            .map(|(n, (weight, p))| {
                total += weight;
                let seed = worker_seed.wrapping_add(n as u64 * 0x9E37_79B9);
                let keygen = |keys: &KeySpace| RefCell::new(KeyGen::new(keys, seed));
                let target_keygen = |t: &KeyTarget| match t {
                    KeyTarget::Space(keys) => Some(keygen(keys)),
                    KeyTarget::Fixed { .. } => None,
                };
                let instance = match p {
                    Prepared::Put { keys, value, space } => Instance::Put {
                        keygen: keygen(keys),
                        value: Bytes::copy_from_slice(value),
                        space: *space,
                    },
                    Prepared::Range { target, template, mode, space } => {
                        let mut template = template.clone();
                        if let KeyTarget::Fixed { key, range_end } = target {
                            template.key = Bytes::copy_from_slice(key);
                            template.range_end = Bytes::copy_from_slice(range_end);
                        }
                        Instance::Range {
                            keygen: target_keygen(target),
                            template,
                            mode: *mode,
                            space: *space,
                        }
                    }
                    Prepared::Delete { target, space } => {
                        let template = match target {
                            KeyTarget::Fixed { key, range_end } => DeleteRangeRequest {
                                key: Bytes::copy_from_slice(key),
                                range_end: Bytes::copy_from_slice(range_end),
                            },
                            KeyTarget::Space(_) => DeleteRangeRequest::default(),
                        };
                        Instance::Delete { keygen: target_keygen(target), template, space: *space }
                    }
                    Prepared::TxnPut { keys, ops, value, space } => Instance::TxnPut {
                        keygen: keygen(keys),
                        ops: *ops,
                        value: Bytes::copy_from_slice(value),
                        space: *space,
                    },
                    Prepared::TxnMixed { read, keys, value, p_read, space } => Instance::TxnMixed {
                        read: read.clone(),
                        keygen: keygen(keys),
                        value: Bytes::copy_from_slice(value),
                        p_read: *p_read,
                        space: *space,
                    },
                    Prepared::LeaseGrant { ttl } => Instance::LeaseGrant { ttl: *ttl },
                    Prepared::LeaseRevoke { ttl } => Instance::LeaseRevoke { ttl: *ttl },
                    Prepared::LeaseKeepalive { ttl } => Instance::LeaseKeepalive { ttl: *ttl },
                    Prepared::Stm(plan) => Instance::Stm(stm::Runner::new(Arc::clone(plan), seed)),
                    Prepared::K8s(plan) => Instance::K8s(kubernetes::Runner::new(
                        Arc::clone(plan),
                        self.k8s.as_deref().expect("the apiserver's operations share a cache"),
                        worker_seed,
                    )),
                };
                (total, instance)
            })
            .collect();
        Ops {
            items,
            total,
            rng: RefCell::new(StdRng::seed_from_u64(worker_seed ^ self.seed ^ 0x4D49_5845)),
            k8s: self.k8s.clone(),
        }
    }
}

/// One operation as one worker runs it.
enum Instance {
    Put { keygen: RefCell<KeyGen>, value: Bytes, space: u16 },
    Range { keygen: Option<RefCell<KeyGen>>, template: RangeRequest, mode: RangeMode, space: u16 },
    Delete { keygen: Option<RefCell<KeyGen>>, template: DeleteRangeRequest, space: u16 },
    TxnPut { keygen: RefCell<KeyGen>, ops: u64, value: Bytes, space: u16 },
    TxnMixed { read: RangeRequest, keygen: RefCell<KeyGen>, value: Bytes, p_read: f64, space: u16 },
    LeaseGrant { ttl: i64 },
    LeaseRevoke { ttl: i64 },
    LeaseKeepalive { ttl: i64 },
    Stm(stm::Runner),
    K8s(kubernetes::Runner),
}

/// The operations of one worker: a weighted choice per request.
pub(crate) struct Ops {
    /// Cumulative weight and instance.
    items: Vec<(u32, Instance)>,
    total: u32,
    rng: RefCell<StdRng>,
    /// The run's watch caches and checks of the apiserver's operations, when it has any.
    k8s: Option<Arc<kubernetes::Shared>>,
}

/// What a logical client keeps between requests: its number, and nothing more (one
/// pointer) until an operation that needs state (leases, keep-alives, STM, the apiserver's
/// updates) first runs.
pub(crate) struct ClientState {
    /// The client's number in the run ([`super::worker::Client::id`]).
    id: u32,
    state: Option<Box<State>>,
}

impl ClientState {
    /// The state of logical client `id`.
    pub(crate) fn new(id: u32) -> Self {
        Self { id, state: None }
    }

    fn get(&mut self) -> &mut State {
        self.state.get_or_insert_with(Box::default)
    }

    /// The apiserver's operations' state of the client, once one has made it.
    fn k8s(&self) -> Option<&kubernetes::ClientState> {
        self.state.as_deref().map(|s| &s.k8s)
    }
}

#[derive(Default)]
struct State {
    lease_client: Option<etcd_client::LeaseClient>,
    /// Leases granted and not yet revoked, oldest first; revoke takes the newest.
    leases: VecDeque<i64>,
    keepalive: Option<(etcd_client::LeaseKeeper, etcd_client::LeaseKeepAliveStream)>,
    stm: stm::ClientState,
    k8s: kubernetes::ClientState,
}

impl State {
    async fn leases(
        &mut self,
        conn: &Conn,
    ) -> Result<&mut etcd_client::LeaseClient, tonic::Status> {
        let client = match self.lease_client.take() {
            Some(client) => client,
            None => conn.client().await.map_err(status)?.lease_client(),
        };
        Ok(self.lease_client.insert(client))
    }
}

/// The member id in an etcd-client response header.
fn member_of_ec(header: Option<&etcd_client::ResponseHeader>) -> u64 {
    header.map_or(0, etcd_client::ResponseHeader::member_id)
}

/// What the audit is told of a request's key: its kind, access and key space.
type Audited<'r, 'a> = Option<(&'r Recording<'a>, OpKind, Access, u16)>;

/// The key of request `i`, its index recorded for the audit when there is one.
fn key_index(keygen: &RefCell<KeyGen>, i: u64, audit: Audited<'_, '_>) -> u64 {
    let index = keygen.borrow_mut().index(i);
    if let Some((rec, kind, access, space)) = audit {
        rec.begin(kind, access, space, index);
    }
    index
}

fn key_of(keygen: &RefCell<KeyGen>, i: u64, audit: Audited<'_, '_>) -> Key {
    let index = key_index(keygen, i, audit);
    Key::new(keygen.borrow_mut().key_at(index))
}

fn bytes_of(keygen: &RefCell<KeyGen>, i: u64, audit: Audited<'_, '_>) -> Bytes {
    let index = key_index(keygen, i, audit);
    Bytes::copy_from_slice(keygen.borrow_mut().key_at(index))
}

/// A request on a fixed key or range, recorded for the audit without a key.
fn keyless(audit: Audited<'_, '_>) {
    if let Some((rec, kind, access, space)) = audit {
        rec.begin(kind, access, space, NO_KEY);
    }
}

/// A range's access: linearizable or serializable read.
fn read_access(req: &RangeRequest) -> Access {
    if req.serializable { Access::SerializableRead } else { Access::Read }
}

/// A range read a page of `page_size` keys at a time, every page at the revision the first
/// was answered at (how Kubernetes' watch cache lists, and etcd's tool's `--paginate`): the
/// next page starts just after the last key of the one before. A page that shows the range
/// anywhere but at that revision (a key modified after it, or a header before it) fails the
/// request, as etcd's pinning would be broken.
async fn paginated(
    kv: &mut Kv,
    mut req: RangeRequest,
    page_size: i64,
) -> Result<Done, tonic::Status> {
    req.limit = page_size;
    let (mut keys, mut value_bytes) = (0, 0);
    let mut pinned: Option<ResponseHeader> = None;
    for page in 1u64.. {
        let resp = kv.range(req.clone()).await?;
        let revision = resp.header.as_ref().map_or(0, |h| h.revision);
        let rev = *pinned.get_or_insert(resp.header.unwrap_or_default());
        if let Some(late) = resp.kvs.iter().find(|kv| kv.mod_revision > rev.revision) {
            return Err(tonic::Status::data_loss(format!(
                "page {page} of a range pinned to revision {} holds a key modified at revision {}",
                rev.revision, late.mod_revision
            )));
        }
        if revision < rev.revision {
            return Err(tonic::Status::data_loss(format!(
                "page {page} of a range pinned to revision {} was answered at revision {revision}",
                rev.revision
            )));
        }
        keys += if req.count_only { resp.count.max(0) as u64 } else { resp.kvs.len() as u64 };
        value_bytes += resp.kvs.iter().map(|kv| kv.value.len() as u64).sum::<u64>();
        let Some(last) = resp.kvs.last().filter(|_| resp.more) else { break };
        let mut next = Vec::with_capacity(last.key.len() + 1);
        next.extend_from_slice(&last.key);
        next.push(0);
        req.key = Bytes::from(next);
        req.revision = rev.revision;
    }
    Ok(Done::answered(pinned.as_ref(), keys, value_bytes))
}

impl Ops {
    /// This worker's part of the run ended: if it is the last worker to end, what the
    /// apiserver's operations recorded over the run, their caches checked against etcd on
    /// `conn` first ([`kubernetes::Shared::end`]).
    pub(crate) async fn end(&self, conn: Option<&Conn>) -> Option<kubernetes::Ended> {
        match &self.k8s {
            Some(k8s) => k8s.end(conn).await,
            None => None,
        }
    }

    /// Which operation request `i` runs.
    #[inline]
    pub(crate) fn pick(&self) -> usize {
        if self.items.len() == 1 {
            return 0;
        }
        let r = self.rng.borrow_mut().random_range(0..self.total);
        self.items.iter().position(|(cum, _)| r < *cum).unwrap_or(0)
    }

    /// The kind operation `op` reports the next request of the client in `state` under
    /// (txn-mixed decides here whether it reads or writes; a pod lifecycle's is the
    /// request's place in the client's current life).
    #[inline]
    pub(crate) fn kind(&self, op: usize, state: &ClientState) -> OpKind {
        match &self.items[op].1 {
            Instance::Put { .. } => OpKind::Put,
            Instance::Range { .. } => OpKind::Range,
            Instance::Delete { .. } => OpKind::Delete,
            Instance::TxnPut { .. } => OpKind::TxnPut,
            Instance::TxnMixed { p_read, .. } => {
                if self.rng.borrow_mut().random_bool(p_read.clamp(0.0, 1.0)) {
                    OpKind::TxnRead
                } else {
                    OpKind::TxnWrite
                }
            }
            Instance::LeaseGrant { .. } => OpKind::LeaseGrant,
            Instance::LeaseRevoke { .. } => OpKind::LeaseRevoke,
            Instance::LeaseKeepalive { .. } => OpKind::LeaseKeepalive,
            Instance::Stm(_) => OpKind::Stm,
            Instance::K8s(k8s) => k8s.kind(state.k8s()),
        }
    }

    /// What the worker records of operation `op`'s next request from the client in
    /// `state` by resource and verb, when it is one of the apiserver's.
    #[inline]
    pub(crate) fn request(&self, op: usize, state: &ClientState) -> Option<kubernetes::Recorded> {
        match &self.items[op].1 {
            Instance::K8s(k8s) => Some(k8s.request(state.k8s())),
            _ => None,
        }
    }

    /// Unmeasured preparation before a request: a lease to revoke, a keep-alive stream.
    pub(crate) async fn prepare(
        &self,
        op: usize,
        conn: &Conn,
        state: &mut ClientState,
    ) -> Result<(), tonic::Status> {
        let needed = match &self.items[op].1 {
            Instance::LeaseRevoke { .. } => state.get().leases.is_empty(),
            Instance::LeaseKeepalive { .. } => state.get().keepalive.is_none(),
            Instance::Stm(_) => true,
            Instance::K8s(k8s) => k8s.needs_start(),
            _ => false,
        };
        if !needed {
            return Ok(());
        }
        // Boxed: these futures (etcd-client's) are kilobytes, and every logical client's
        // own future would otherwise be as large.
        Box::pin(self.prepare_state(op, conn, state.get())).await
    }

    async fn prepare_state(
        &self,
        op: usize,
        conn: &Conn,
        state: &mut State,
    ) -> Result<(), tonic::Status> {
        match &self.items[op].1 {
            Instance::LeaseRevoke { ttl } if state.leases.is_empty() => {
                let lease = state.leases(conn).await?.grant(*ttl, None).await.map_err(status)?;
                state.leases.push_back(lease.id());
            }
            Instance::LeaseKeepalive { ttl } if state.keepalive.is_none() => {
                let lc = state.leases(conn).await?;
                let lease = lc.grant(*ttl, None).await.map_err(status)?;
                let stream = lc.keep_alive(lease.id()).await.map_err(status)?;
                state.keepalive = Some(stream);
            }
            Instance::Stm(runner) => runner.prepare(conn, &mut state.stm).await?,
            Instance::K8s(runner) => runner.start(conn).await?,
            _ => {}
        }
        Ok(())
    }

    /// Sends request `i` of operation `op` as kind `kind` (from [`Ops::kind`]); with
    /// `audit`, records its keys there before it is sent.
    #[allow(clippy::too_many_arguments, reason = "the request's parts, borrowed from its client")]
    pub(crate) async fn execute(
        &self,
        op: usize,
        kind: OpKind,
        i: u64,
        kv: &mut Kv,
        conn: &Conn,
        state: &mut ClientState,
        audit: Option<&Recording<'_>>,
    ) -> Result<Done, tonic::Status> {
        // Put, range and delete share one await of one future type (`Kv::call`): the
        // request is framed before it and the answer read after it, so a logical client's
        // future is no larger than one call.
        let (path, body) = match &self.items[op].1 {
            Instance::Put { keygen, value, space } => {
                let key = key_of(keygen, i, audit.map(|r| (r, kind, Access::Put, *space)));
                (PUT, frame_put(&PutRequest { key, value: value.clone(), lease: 0 }))
            }
            Instance::Range { keygen, template, mode: RangeMode::Unary, space } => {
                let mut req = template.clone();
                let audit = audit.map(|r| (r, kind, read_access(template), *space));
                match keygen {
                    Some(keygen) => req.key = bytes_of(keygen, i, audit),
                    None => keyless(audit),
                }
                (RANGE, frame(&req))
            }
            Instance::Delete { keygen, template, space } => {
                let mut req = template.clone();
                let audit = audit.map(|r| (r, kind, Access::Delete, *space));
                match keygen {
                    Some(keygen) => req.key = bytes_of(keygen, i, audit),
                    None => keyless(audit),
                }
                (DELETE_RANGE, frame(&req))
            }
            _ => {
                let id = state.id;
                return Box::pin(self.execute_other(op, kind, i, kv, conn, id, state.get(), audit))
                    .await;
            }
        };
        let answer = kv.call(path, body).await?;
        match &self.items[op].1 {
            Instance::Put { value, .. } => {
                let resp: PutResponse = decode(&answer)?;
                Ok(Done::answered(resp.header.as_ref(), 1, value.len() as u64))
            }
            Instance::Range { template, .. } => {
                let resp: RangeResponse = decode(&answer)?;
                let keys = if template.count_only {
                    resp.count.max(0) as u64
                } else {
                    resp.kvs.len() as u64
                };
                let value_bytes = resp.kvs.iter().map(|kv| kv.value.len() as u64).sum();
                // One key asked for: what it was found at, for the audit's freshness check.
                let mod_revision = match resp.kvs.as_slice() {
                    [kv] if template.range_end.is_empty() => kv.mod_revision,
                    _ => 0,
                };
                Ok(Done { mod_revision, ..Done::answered(resp.header.as_ref(), keys, value_bytes) })
            }
            _ => {
                let resp: DeleteRangeResponse = decode(&answer)?;
                Ok(Done::answered(resp.header.as_ref(), resp.deleted.max(0) as u64, 0))
            }
        }
    }

    /// The operations other than put, range and delete: boxed, so that their larger
    /// futures (transactions, etcd-client's lease and STM calls) do not size every logical
    /// client's future, which 100,000 clients hold at once.
    #[allow(clippy::too_many_arguments, reason = "as execute's")]
    async fn execute_other(
        &self,
        op: usize,
        kind: OpKind,
        i: u64,
        kv: &mut Kv,
        conn: &Conn,
        id: u32,
        state: &mut State,
        audit: Option<&Recording<'_>>,
    ) -> Result<Done, tonic::Status> {
        match &self.items[op].1 {
            Instance::Put { .. }
            | Instance::Range { mode: RangeMode::Unary, .. }
            | Instance::Delete { .. } => {
                unreachable!("sent by execute")
            }
            Instance::Range { keygen, template, mode, space } => {
                let mut req = template.clone();
                let audit = audit.map(|r| (r, kind, read_access(template), *space));
                match keygen {
                    Some(keygen) => req.key = bytes_of(keygen, i, audit),
                    None => keyless(audit),
                }
                match *mode {
                    RangeMode::Paginate(page_size) => paginated(kv, req, page_size).await,
                    _ => {
                        let got = kv.range_stream(&req).await?;
                        Ok(Done {
                            first_message: got.first,
                            ..Done::answered(got.header.as_ref(), got.keys, got.value_bytes)
                        })
                    }
                }
            }
            Instance::TxnPut { keygen, ops, value, space } => {
                let puts = (0..*ops).map(|j| {
                    let access = if j == 0 { Access::Put } else { Access::PutMore };
                    let audit = audit.map(|r| (r, kind, access, *space));
                    Request::Put(PutRequest {
                        key: key_of(keygen, i * ops + j, audit),
                        value: value.clone(),
                        lease: 0,
                    })
                });
                let resp = kv.txn(TxnRequest::unconditional(puts)).await?;
                Ok(Done::answered(resp.header.as_ref(), *ops, ops * value.len() as u64))
            }
            Instance::TxnMixed { read, keygen, value, space, .. } => {
                if kind == OpKind::TxnRead {
                    keyless(audit.map(|r| (r, kind, read_access(read), *space)));
                    let read = Request::Range(read.clone());
                    let resp = kv.txn(TxnRequest::unconditional([read])).await?;
                    let (keys, value_bytes) = resp
                        .responses
                        .iter()
                        .filter_map(|r| match &r.response {
                            Some(Response::Range(range)) => Some(range),
                            _ => None,
                        })
                        .fold((0, 0), |(k, b), range| {
                            (
                                k + range.kvs.len() as u64,
                                b + range.kvs.iter().map(|kv| kv.value.len() as u64).sum::<u64>(),
                            )
                        });
                    Ok(Done::answered(resp.header.as_ref(), keys, value_bytes))
                } else {
                    let key = key_of(keygen, i, audit.map(|r| (r, kind, Access::Put, *space)));
                    let put = Request::Put(PutRequest { key, value: value.clone(), lease: 0 });
                    let resp = kv.txn(TxnRequest::unconditional([put])).await?;
                    Ok(Done::answered(resp.header.as_ref(), 1, value.len() as u64))
                }
            }
            Instance::LeaseGrant { ttl } => {
                let lease = state.leases(conn).await?.grant(*ttl, None).await.map_err(status)?;
                if state.leases.len() == MAX_HELD_LEASES {
                    state.leases.pop_front();
                }
                state.leases.push_back(lease.id());
                Ok(Done { keys: 1, member: member_of_ec(lease.header()), ..Done::default() })
            }
            Instance::LeaseRevoke { .. } => {
                // The newest: older leases may have expired (a short TTL, a slow client),
                // and revoking those would measure NotFound instead of a revoke.
                let id = state
                    .leases
                    .pop_back()
                    .ok_or_else(|| tonic::Status::failed_precondition("no lease to revoke"))?;
                let resp = state.leases(conn).await?.revoke(id).await.map_err(status)?;
                Ok(Done { keys: 1, member: member_of_ec(resp.header()), ..Done::default() })
            }
            Instance::LeaseKeepalive { .. } => {
                let (keeper, stream) = state
                    .keepalive
                    .as_mut()
                    .ok_or_else(|| tonic::Status::failed_precondition("no keep-alive stream"))?;
                keeper.keep_alive().await.map_err(status)?;
                match stream.message().await.map_err(status)? {
                    Some(resp) if resp.ttl() > 0 => {
                        Ok(Done { keys: 1, member: member_of_ec(resp.header()), ..Done::default() })
                    }
                    Some(_) => {
                        // The lease is gone (expired, or revoked by someone else): the next
                        // request grants a new one instead of failing for the rest of the run.
                        state.keepalive = None;
                        Err(tonic::Status::not_found("lease expired"))
                    }
                    None => {
                        state.keepalive = None;
                        Err(tonic::Status::unavailable("keep-alive stream closed"))
                    }
                }
            }
            Instance::Stm(runner) => runner.execute(kv, conn, &mut state.stm).await,
            Instance::K8s(runner) => runner.execute(kv, conn, i, id, &mut state.k8s).await,
        }
    }
}
