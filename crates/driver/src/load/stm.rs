//! Software transactional memory, as etcd's `concurrency` STM and `benchmark stm` do it.
//!
//! A transaction reads `keys-per-txn` distinct keys and writes the first
//! `keys-per-txn * txn-wr-percent / 100` of them, then commits with one Txn whose compares
//! depend on the isolation level; on a conflict it starts again, and the retry is counted.
//! Each write stores the key's counter plus one (8 bytes little endian, padded to val-size),
//! so the final state can be checked: under repeatable reads or stronger the counters add up
//! to the writes committed.
//!
//! - read committed (`c`): no compares; never retries, and may lose updates.
//! - repeatable reads (`r`): every key read must still have the mod revision it was read at.
//! - serializable (`s`): reads after the first are made at the first read's revision; the
//!   same compares as `r`.
//! - serializable snapshot (`ss`): as `s`, and every key written must not have changed
//!   since that revision.
//!
//! With `stm-locker` set, the transaction runs under a lock: etcd's Lock RPC (`lock-rpc`) or
//! a client-side mutex (`lock-client`: a key per waiter under `stmlock/`, each waiting for
//! the deletion of the one ahead of it), both tied to a lease of the logical client. The
//! lease is revoked when the client's loop ends, so that neither it nor a lock key on it
//! outlives the run.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use etcd_client::{
    Compare as EcCompare, CompareOp, EventType, GetOptions, LockOptions, PutOptions, SortOrder,
    SortTarget, Txn, TxnOp, WatchOptions,
};
use etcdlat_core::workload::keyspace::{KeyDist, KeyGen, KeySpace};
use etcdlat_core::workload::{Isolation, StmLocker, StmOp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::oneshot;

use super::completion::{Done, member_of};
use crate::transport::message::{
    Compare, Key, PutRequest, RangeRequest, Request, RequestOp, TxnRequest,
};
use crate::transport::{Conn, Kv, status};

/// Key bytes after the prefix, as etcd's tool makes STM keys.
const STM_KEY_SIZE: u64 = 16;
/// Time to live of the lease a locking client holds, seconds.
const SESSION_TTL: i64 = 60;
/// Prefix of the client-side mutex's keys.
const LOCK_PREFIX: &str = "stmlock/";

/// An STM workload, prepared once per run.
#[derive(Debug)]
pub(crate) struct Workload {
    keys: Vec<Bytes>,
    keys_per_txn: usize,
    writes: usize,
    isolation: Isolation,
    locker: StmLocker,
    val_size: usize,
}

impl Workload {
    pub(crate) fn new(op: &StmOp, _seed: u64) -> Self {
        let space = KeySpace {
            prefix: etcdlat_core::key_bytes(&op.prefix),
            key_size: STM_KEY_SIZE,
            space: op.keys,
            start: 0,
            dist: KeyDist::Sequential,
        };
        let mut keygen = KeyGen::new(&space, 0);
        let keys = (0..op.keys).map(|i| Bytes::copy_from_slice(keygen.key(i))).collect();
        let keys_per_txn = op.keys_per_txn as usize;
        Self {
            keys,
            keys_per_txn,
            writes: keys_per_txn * op.txn_wr_percent as usize / 100,
            isolation: op.isolation,
            locker: op.stm_locker,
            val_size: (op.val_size as usize).max(8),
        }
    }
}

/// A worker's STM runner: the plan and its random key choice.
pub(crate) struct Runner {
    plan: Arc<Workload>,
    rng: RefCell<StdRng>,
}

/// A logical client's locking state: its session, when a locker needs one.
#[derive(Default)]
pub(crate) struct ClientState {
    session: Option<Session>,
}

/// A session lease, kept alive by a task of its own until the session is dropped with the
/// client's state; the task then revokes it.
struct Session {
    lease: i64,
    /// Dropping it tells the keep-alive task to revoke the lease and end.
    _end: oneshot::Sender<()>,
}

/// A key read by the transaction: its mod revision (0 when absent) and counter.
struct Read {
    key: Bytes,
    mod_revision: i64,
    counter: u64,
}

impl Runner {
    pub(crate) fn new(plan: Arc<Workload>, seed: u64) -> Self {
        Self { plan, rng: RefCell::new(StdRng::seed_from_u64(seed)) }
    }

    /// Grants the client's session lease (kept alive for the run) when a locker needs one.
    pub(crate) async fn prepare(
        &self,
        conn: &Conn,
        state: &mut ClientState,
    ) -> Result<(), tonic::Status> {
        if self.plan.locker == StmLocker::Stm || state.session.is_some() {
            return Ok(());
        }
        let mut leases = conn.client().await.map_err(status)?.lease_client();
        let lease = leases.grant(SESSION_TTL, None).await.map_err(status)?.id();
        let (mut keeper, mut stream) = leases.keep_alive(lease).await.map_err(status)?;
        let (end, mut ended) = oneshot::channel::<()>();
        tokio::task::spawn_local(async move {
            let mut tick =
                tokio::time::interval(std::time::Duration::from_secs(SESSION_TTL as u64 / 3));
            loop {
                tokio::select! {
                    _ = &mut ended => break,
                    _ = tick.tick() => {
                        if keeper.keep_alive().await.is_err()
                            || !matches!(stream.message().await, Ok(Some(_)))
                        {
                            return;
                        }
                    }
                }
            }
            // Also deletes a lock key left behind by a transaction abandoned at a stop.
            let _ = leases.revoke(lease).await;
        });
        state.session = Some(Session { lease, _end: end });
        Ok(())
    }

    /// Distinct key indices for one transaction.
    fn choose(&self) -> Vec<usize> {
        let n = self.plan.keys.len();
        let mut rng = self.rng.borrow_mut();
        let mut chosen = Vec::with_capacity(self.plan.keys_per_txn);
        while chosen.len() < self.plan.keys_per_txn {
            let k = rng.random_range(0..n);
            if !chosen.contains(&k) {
                chosen.push(k);
            }
        }
        chosen
    }

    /// One transaction, under the lock if the plan says so; retries are counted in `Done`.
    pub(crate) async fn execute(
        &self,
        kv: &mut Kv,
        conn: &Conn,
        state: &mut ClientState,
    ) -> Result<Done, tonic::Status> {
        let chosen = self.choose();
        let lease = state.session.as_ref().map_or(0, |s| s.lease);
        let guard = match self.plan.locker {
            StmLocker::Stm => None,
            StmLocker::LockRpc => Some(lock_rpc(conn, lease).await?),
            StmLocker::LockClient => Some(lock_client(conn, lease).await?),
        };
        let result = self.transact(kv, &chosen).await;
        if let Some(key) = guard {
            let client = conn.client().await.map_err(status)?;
            match self.plan.locker {
                StmLocker::LockRpc => {
                    client.lock_client().unlock(key).await.map_err(status)?;
                }
                _ => {
                    client.kv_client().delete(key, None).await.map_err(status)?;
                }
            }
        }
        result
    }

    async fn transact(&self, kv: &mut Kv, chosen: &[usize]) -> Result<Done, tonic::Status> {
        let plan = &self.plan;
        let mut retries = 0;
        loop {
            let mut reads = Vec::with_capacity(chosen.len());
            let mut snapshot = 0;
            for &k in chosen {
                let key = plan.keys[k].clone();
                let serial = matches!(
                    plan.isolation,
                    Isolation::Serializable | Isolation::SerializableSnapshot
                );
                let req = RangeRequest {
                    key: key.clone(),
                    revision: if serial { snapshot } else { 0 },
                    ..RangeRequest::default()
                };
                let resp = kv.range(req).await?;
                if snapshot == 0 {
                    snapshot = resp.header.map_or(0, |h| h.revision);
                }
                let (mod_revision, counter) = resp.kvs.first().map_or((0, 0), |kv| {
                    let mut c = [0u8; 8];
                    let n = kv.value.len().min(8);
                    c[..n].copy_from_slice(&kv.value[..n]);
                    (kv.mod_revision, u64::from_le_bytes(c))
                });
                reads.push(Read { key, mod_revision, counter });
            }

            let mut compare = Vec::new();
            if plan.isolation != Isolation::ReadCommitted {
                compare.extend(
                    reads
                        .iter()
                        .map(|r| Compare::mod_revision(r.key.clone(), r.mod_revision, false)),
                );
            }
            if plan.isolation == Isolation::SerializableSnapshot {
                compare.extend(
                    reads[..plan.writes]
                        .iter()
                        .map(|r| Compare::mod_revision(r.key.clone(), snapshot + 1, true)),
                );
            }
            let success = reads[..plan.writes]
                .iter()
                .map(|r| {
                    let mut value = BytesMut::with_capacity(plan.val_size);
                    value.put_u64_le(r.counter + 1);
                    value.resize(plan.val_size, 0);
                    RequestOp {
                        request: Some(Request::Put(PutRequest {
                            key: Key::new(&r.key),
                            value: value.freeze(),
                            lease: 0,
                        })),
                    }
                })
                .collect();
            let resp = kv.txn(TxnRequest { compare, success, failure: Vec::new() }).await?;
            if resp.succeeded {
                return Ok(Done {
                    keys: chosen.len() as u64,
                    value_bytes: (plan.writes * plan.val_size) as u64,
                    retries,
                    member: member_of(resp.header.as_ref()),
                    ..Done::default()
                });
            }
            retries += 1;
        }
    }
}

/// Takes the lock with etcd's Lock RPC; returns the key to unlock with.
async fn lock_rpc(conn: &Conn, lease: i64) -> Result<Vec<u8>, tonic::Status> {
    let resp = conn
        .client()
        .await
        .map_err(status)?
        .lock_client()
        .lock("stmlock", Some(LockOptions::new().with_lease(lease)))
        .await
        .map_err(status)?;
    Ok(resp.key().to_vec())
}

/// Takes the client-side mutex: creates this client's key under [`LOCK_PREFIX`], then waits
/// until no key created before it remains. Returns the key to delete to unlock.
async fn lock_client(conn: &Conn, lease: i64) -> Result<Vec<u8>, tonic::Status> {
    let client = conn.client().await.map_err(status)?;
    let mut kv = client.kv_client();
    let key = format!("{LOCK_PREFIX}{lease:x}").into_bytes();
    let txn = Txn::new()
        .when([EcCompare::create_revision(key.clone(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(key.clone(), "", Some(PutOptions::new().with_lease(lease)))])
        .or_else([TxnOp::get(key.clone(), None)]);
    let resp = kv.txn(txn).await.map_err(status)?;
    let my_rev = if resp.succeeded() {
        resp.header().map_or(0, etcd_client::ResponseHeader::revision)
    } else {
        resp.op_responses()
            .into_iter()
            .find_map(|r| match r {
                etcd_client::TxnOpResponse::Get(g) => {
                    g.kvs().first().map(|kv| kv.create_revision())
                }
                _ => None,
            })
            .unwrap_or(0)
    };
    loop {
        // The newest waiter created before us; we hold the lock when there is none.
        let opts = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(my_rev - 1)
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1);
        let ahead = kv.get(LOCK_PREFIX, Some(opts)).await.map_err(status)?;
        let Some(prev) = ahead.kvs().first() else { return Ok(key) };
        let from = ahead.header().map_or(0, etcd_client::ResponseHeader::revision) + 1;
        let mut stream = client
            .watch_client()
            .watch(prev.key().to_vec(), Some(WatchOptions::new().with_start_revision(from)))
            .await
            .map_err(status)?;
        'wait: while let Some(resp) = stream.message().await.map_err(status)? {
            if resp.events().iter().any(|e| e.event_type() == EventType::Delete) {
                break 'wait;
            }
        }
    }
}
