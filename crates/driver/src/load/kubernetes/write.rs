//! The apiserver's writes, and the dispatch of a request to its operation
//! ([`Runner::execute`]): create, `GuaranteedUpdate` (update and the conditional delete,
//! with its conflicts and retries) and the steps of a pod's life.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use etcdlat_core::invariant::Invariant;
use etcdlat_core::workload::kubernetes::Verb;

use super::cache::Read;
use super::{Action, ClientState, Life, Runner, get, not_found};
use crate::load::completion::Done;
use crate::transport::message::{GuardedWrite, RangeRequest, Response, TxnResponse, Write};
use crate::transport::{Conn, Kv};

/// The most attempts an update or delete makes before it gives up with `Aborted` (the
/// apiserver retries without bound; a run that needs this many is measuring a livelock).
const MAX_ATTEMPTS: u64 = 1000;

impl Runner {
    /// Request `i` of logical client `id`.
    pub(crate) async fn execute(
        &self,
        kv: &mut Kv,
        conn: &Conn,
        i: u64,
        id: u32,
        state: &mut ClientState,
    ) -> Result<Done, tonic::Status> {
        let p = &self.plan;
        match p.action {
            Action::Verb(Verb::Create) => self.create(kv, conn, i % p.objects, id).await,
            Action::Event => self.create(kv, conn, self.next_name(), id).await,
            Action::Lifecycle => self.live(kv, conn, id, state).await,
            Action::Verb(Verb::Update) => {
                let o = match &p.turns {
                    Some(turns) => turns.fetch_add(1, Ordering::Relaxed) % p.objects,
                    None => self.owned(id, state),
                };
                self.update(kv, conn, o, id, false).await
            }
            Action::Verb(Verb::Delete) => {
                self.update(kv, conn, self.owned(id, state), id, true).await
            }
            Action::Verb(Verb::Get) => {
                let resp = kv.range(get(self.key(i % p.objects))).await?;
                let found = resp.kvs.first().ok_or_else(not_found)?;
                Ok(Done::answered(resp.header.as_ref(), 1, found.value.len() as u64))
            }
            Action::Verb(Verb::List) => self.list(kv, id).await,
            Action::Verb(Verb::Count) => {
                let req = RangeRequest { count_only: true, ..self.prefix_range() };
                let resp = kv.range(req).await?;
                Ok(Done::answered(resp.header.as_ref(), resp.count.max(0) as u64, 0))
            }
            Action::Verb(Verb::ConsistentList) => self.consistent_list(kv, id).await,
            Action::Verb(Verb::Watch) => unreachable!("no operation's requests are watches"),
        }
    }

    async fn create(
        &self,
        kv: &mut Kv,
        conn: &Conn,
        o: u64,
        id: u32,
    ) -> Result<Done, tonic::Status> {
        let key = self.key(o);
        let lease = match &self.leases {
            Some(leases) => leases.lease(conn).await?,
            None => 0,
        };
        let value = self.value(o);
        let write = Write::Put { value, lease };
        let txn = GuardedWrite { key: &key, expected: 0, write, else_get: false };
        let resp = kv.guarded(&txn).await?;
        if !resp.succeeded {
            return Err(tonic::Status::already_exists("the object exists"));
        }
        self.written(id, resp.header.map_or(0, |h| h.revision));
        Ok(Done::answered(resp.header.as_ref(), 1, value.len() as u64))
    }

    /// A write of client `id` was answered at `revision`: its apiserver's cache of the
    /// resource, if it has one, times its event's delivery (and learns of it only from
    /// that event).
    pub(super) fn written(&self, id: u32, revision: i64) {
        if let Some(cache) = self.cache(id) {
            cache.answered(revision);
        }
    }

    /// The number of the next object of a new name this worker creates.
    fn next_name(&self) -> u64 {
        let n = self.named.get();
        self.named.set(n + 1);
        n
    }

    /// The next request of the client's current life: the create of a new object, one of
    /// its updates or its delete. A create that failed ends the life before it began, and
    /// an update that found its object gone ends it too: the next request creates a new
    /// one. An update that failed otherwise leaves the object's revision unknown, read from
    /// etcd by the next write.
    async fn live(
        &self,
        kv: &mut Kv,
        conn: &Conn,
        id: u32,
        state: &mut ClientState,
    ) -> Result<Done, tonic::Status> {
        let cycle = self.plan.life.expect("a lifecycle's plan");
        if state.lives.len() <= cycle.index {
            state.lives.resize(cycle.index + 1, Life::default());
        }
        let life = &mut state.lives[cycle.index];
        let (result, next) = match cycle.verb_at(life.step) {
            0 => {
                life.object = self.next_name();
                let created = self.create(kv, conn, life.object, id).await;
                let next = u64::from(created.is_ok());
                (created, next)
            }
            verb => {
                let delete = verb == 2;
                let read = Read::own((life.revision > 0).then_some(life.revision));
                let key = self.key(life.object);
                let written = self.guaranteed(kv, &key, life.object, read, delete, 0).await;
                if let Ok(done) = &written {
                    self.written(id, done.revision);
                }
                let next = match &written {
                    _ if delete => 0,
                    Err(e) if e.code() == tonic::Code::NotFound => 0,
                    _ => life.step + 1,
                };
                (written, next)
            }
        };
        life.revision = result.as_ref().map_or(0, |done| done.revision);
        life.step = next;
        result
    }

    /// GuaranteedUpdate (or the conditional delete with `delete`) of object `o` by client
    /// `id`, from the revision its apiserver's cache holds: stale while the event of the
    /// object's last write is on its way, which conflicts as the apiserver's does. An update
    /// of objects with a TTL puts the object on a lease, as the apiserver's (`ttlOpts`), a
    /// new one or one reused.
    async fn update(
        &self,
        kv: &mut Kv,
        conn: &Conn,
        o: u64,
        id: u32,
        delete: bool,
    ) -> Result<Done, tonic::Status> {
        let cache = self.cache(id).expect("an update has its cache");
        let key = self.key(o);
        let lease = match &self.leases {
            Some(leases) if !delete => leases.lease(conn).await?,
            _ => 0,
        };
        let done = self.guaranteed(kv, &key, o, cache.read(o), delete, lease).await?;
        self.written(id, done.revision);
        Ok(done)
    }

    /// GuaranteedUpdate (or the conditional delete with `delete`) of object `o` at `key`,
    /// comparing the revision its writer holds (`read.known`, of its cache or its own last
    /// write), or when it holds none the one a Get reads first (as the apiserver reads etcd
    /// when it has no cached object); retried on the revision etcd's Else returned. With
    /// one writer, a conflict on a revision at or before `read.delivered` (what the
    /// writer's cache had been sent when it read `known`) is a fault: the cache held an
    /// older one than it was sent. A put is on `lease` (0: none).
    async fn guaranteed(
        &self,
        kv: &mut Kv,
        key: &Bytes,
        o: u64,
        read: Read,
        delete: bool,
        lease: i64,
    ) -> Result<Done, tonic::Status> {
        let Read { known, delivered } = read;
        // An object with a TTL (a put on a lease) whose lease expired is written again, as
        // the master lease reconciler's GuaranteedUpdate with ignoreNotFound creates it.
        let recreate = lease != 0;
        let (mut expected, delivered) = match known {
            Some(rev) => (rev, delivered),
            None => {
                let resp = kv.range(get(key.clone())).await?;
                match resp.kvs.first() {
                    Some(found) => (found.mod_revision, i64::MAX),
                    None if recreate => (0, i64::MAX),
                    None => return Err(not_found()),
                }
            }
        };
        let value = self.value(o);
        let write = if delete { Write::Delete } else { Write::Put { value, lease } };
        let mut conflicts = 0;
        loop {
            let txn = GuardedWrite { key, expected, write, else_get: true };
            let resp = kv.guarded(&txn).await?;
            if resp.succeeded {
                let value_bytes = if delete { 0 } else { value.len() as u64 };
                return Ok(Done {
                    retries: conflicts,
                    conflicts,
                    object: o,
                    ..Done::answered(resp.header.as_ref(), 1, value_bytes)
                });
            }
            conflicts += 1;
            let current = match else_revision(&resp) {
                Some(current) => current,
                // Its lease expired meanwhile: created again, comparing its absence.
                None if recreate && expected != 0 => 0,
                // Deleted by someone else meanwhile.
                None => return Err(not_found()),
            };
            // One writer compared what it last wrote, so nobody else can have moved it; and
            // a compare that failed on the revision the object still has is etcd's fault.
            // An expiry is neither.
            if current != 0
                && ((self.plan.single_writer && current <= delivered) || current == expected)
            {
                self.checks.violated(Invariant::UnexpectedConflict);
            }
            expected = current;
            if conflicts >= MAX_ATTEMPTS {
                return Err(tonic::Status::aborted(format!(
                    "{conflicts} conflicts in a row on one object"
                )));
            }
        }
    }
}

/// The mod revision of the object a failed transaction's Else read, if it exists.
fn else_revision(resp: &TxnResponse) -> Option<i64> {
    resp.responses.iter().find_map(|r| match &r.response {
        Some(Response::Range(range)) => range.kvs.first().map(|kv| kv.mod_revision),
        _ => None,
    })
}
