//! A worker's watch cache of one resource, as the apiserver's: its objects' revisions, from
//! a list at one revision (pages of 10,000, pinned), then a watch on the resource's prefix
//! from the next revision (prevKV, progress notify), and the revision it has caught up to.
//!
//! One cache per resource per worker, shared by that worker's operations on it, so a
//! request reads it with a `Cell` read: no lock, no allocation. The watch task on the
//! worker's thread writes it, event by event; the worker's own successful writes write
//! through (a revision only ever replaces an older one), as the apiserver's GuaranteedUpdate
//! keeps the object its last write returned. An object's slot holds its mod revision, or
//! minus the revision it was deleted at (0: never seen).

use std::cell::Cell;
use std::rc::{Rc, Weak};
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{EventType, WatchOptions, WatchResponse};
use etcdlat_core::invariant::Invariant;
use etcdlat_core::workload::kubernetes::{NAME_DIGITS, object_of};
use etcdlat_core::workload::prefix_end;
use tokio::sync::{Notify, OnceCell, oneshot};

use super::Checks;
use crate::transport::message::RangeRequest;
use crate::transport::{Conn, status};

/// The apiserver's page size for its watch cache's initial list.
const INITIAL_PAGE: i64 = 10_000;

/// How long a consistent read waits for the cache, as the apiserver's
/// `waitUntilFreshAndBlock` (3 s), before it fails with `DeadlineExceeded`.
pub(super) const FRESH_WAIT: Duration = Duration::from_secs(3);

/// One resource's watch cache on one worker.
pub(crate) struct Cache {
    prefix: Bytes,
    /// What the names of its objects start with: other names under the prefix are not its.
    name_prefix: Box<[u8]>,
    /// Per object: its mod revision, or minus the revision it was deleted at, 0 unknown.
    slots: Box<[Cell<i64>]>,
    /// The revision the watch has delivered up to (events or progress notifications).
    revision: Cell<i64>,
    /// The highest event revision delivered, to check their order and progress against.
    last_event: Cell<i64>,
    /// Woken whenever `revision` moves, for consistent reads waiting on it.
    moved: Notify,
    /// Tells the watch task to ask etcd for a progress notification (the task holds it, not
    /// the cache).
    progress: Rc<Notify>,
    started: OnceCell<()>,
    /// Dropped with the cache: its watch task then ends.
    end: Cell<Option<oneshot::Sender<()>>>,
    checks: Rc<Checks>,
}

impl Cache {
    pub(super) fn new(prefix: &str, name_prefix: &str, objects: u64, checks: Rc<Checks>) -> Self {
        Self {
            prefix: Bytes::copy_from_slice(prefix.as_bytes()),
            name_prefix: name_prefix.as_bytes().into(),
            slots: (0..objects).map(|_| Cell::new(0)).collect(),
            revision: Cell::new(0),
            last_event: Cell::new(0),
            moved: Notify::new(),
            progress: Rc::default(),
            started: OnceCell::new(),
            end: Cell::new(None),
            checks,
        }
    }

    /// Whether the cache is filled and watching.
    pub(super) fn started(&self) -> bool {
        self.started.initialized()
    }

    /// Fills the cache and starts its watch, once: the first of the worker's clients does,
    /// the others wait for it. Unmeasured, before the client's first request.
    pub(super) async fn start(self: &Rc<Self>, conn: &Conn) -> Result<(), tonic::Status> {
        self.started.get_or_try_init(|| self.fill_and_watch(conn)).await.map(|_| ())
    }

    async fn fill_and_watch(self: &Rc<Self>, conn: &Conn) -> Result<(), tonic::Status> {
        let mut kv = conn.kv.clone();
        let mut req = RangeRequest { limit: INITIAL_PAGE, ..self.prefix_range() };
        loop {
            let resp = kv.range(req.clone()).await?;
            if req.revision == 0 {
                req.revision = resp.header.map_or(0, |h| h.revision);
            }
            for kv in &resp.kvs {
                self.saw(&kv.key, kv.mod_revision);
            }
            match resp.kvs.last() {
                Some(last) if resp.more => req.key = next_key(&last.key),
                _ => break,
            }
        }
        let listed = req.revision;
        self.revision.set(listed);
        self.last_event.set(listed);
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(listed + 1)
            .with_prev_key()
            .with_progress_notify();
        let mut client = conn.client().await.map_err(status)?.watch_client();
        let stream = client.watch(self.prefix.to_vec(), Some(options)).await.map_err(status)?;
        let (end, ended) = oneshot::channel();
        self.end.set(Some(end));
        tokio::task::spawn_local(watch(
            Rc::downgrade(self),
            Rc::clone(&self.progress),
            stream,
            ended,
        ));
        Ok(())
    }

    /// The revision object `o` was last seen at, if it exists as far as the cache knows.
    #[inline]
    pub(super) fn revision_of(&self, o: u64) -> Option<i64> {
        let rev = self.slots.get(o as usize)?.get();
        (rev > 0).then_some(rev)
    }

    /// Object `o` was written (`deleted` false) or deleted at `revision` by this worker.
    #[inline]
    pub(super) fn wrote(&self, o: u64, revision: i64, deleted: bool) {
        if let Some(slot) = self.slots.get(o as usize) {
            put_newer(slot, revision, deleted);
        }
    }

    /// The revision the watch has delivered up to.
    pub(super) fn revision(&self) -> i64 {
        self.revision.get()
    }

    /// Waits until the watch has delivered `revision`, asking etcd for progress
    /// notifications meanwhile; false when [`FRESH_WAIT`] passed first.
    pub(super) async fn caught_up(&self, revision: i64) -> bool {
        // A cache that keeps up answers with a Cell read; only a wait registers with the
        // `Notify` (whose list of waiters is behind a lock, uncontended on this thread).
        if self.revision.get() >= revision {
            return true;
        }
        let wait = async {
            loop {
                let moved = self.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if self.revision.get() >= revision {
                    return;
                }
                self.progress.notify_one();
                moved.await;
            }
        };
        tokio::time::timeout(FRESH_WAIT, wait).await.is_ok()
    }

    /// Checks the cache against etcd at the end of a run: once it has caught up to the
    /// current revision, its objects as they stand (a list at R plus the events from R + 1,
    /// and the worker's own writes) against a fresh list pinned to the revision it holds.
    /// Returns the objects that differ; unmeasured, once per cache.
    pub(super) async fn diverged(&self, conn: &Conn) -> Result<u64, tonic::Status> {
        let mut kv = conn.kv.clone();
        let limit_one = RangeRequest { limit: 1, ..self.prefix_range() };
        let now = kv.range(limit_one).await?.header.map_or(0, |h| h.revision);
        if !self.caught_up(now).await {
            return Err(tonic::Status::deadline_exceeded("the watch cache did not catch up"));
        }
        // Taken at once, with no await between: the events after it do not move it.
        let revision = self.revision.get();
        let held: Vec<i64> = self.slots.iter().map(|s| s.get().max(0)).collect();
        let mut fresh = vec![0; held.len()];
        let mut req = RangeRequest { revision, keys_only: true, ..self.prefix_range() };
        req.limit = INITIAL_PAGE;
        loop {
            let resp = kv.range(req.clone()).await?;
            for found in &resp.kvs {
                if let Some(o) = self.slot(&found.key).and(object_of(&found.key)) {
                    fresh[o as usize] = found.mod_revision;
                }
            }
            match resp.kvs.last() {
                Some(last) if resp.more => req.key = next_key(&last.key),
                _ => break,
            }
        }
        Ok(held.iter().zip(&fresh).filter(|(held, fresh)| held != fresh).count() as u64)
    }

    fn prefix_range(&self) -> RangeRequest {
        RangeRequest {
            key: self.prefix.clone(),
            range_end: Bytes::from(prefix_end(&self.prefix)),
            ..RangeRequest::default()
        }
    }

    /// The initial list's object `key` at `mod_revision`.
    fn saw(&self, key: &[u8], mod_revision: i64) {
        if let Some(slot) = self.slot(key) {
            put_newer(slot, mod_revision, false);
        }
    }

    /// The slot of the object `key` names, if it is one of the cache's.
    fn slot(&self, key: &[u8]) -> Option<&Cell<i64>> {
        let name_end = key.len().checked_sub(NAME_DIGITS)?;
        let name_start = name_end.checked_sub(self.name_prefix.len())?;
        let after_namespace = name_start.checked_sub(1).and_then(|i| key.get(i));
        if key[name_start..name_end] != *self.name_prefix || after_namespace != Some(&b'/') {
            return None;
        }
        self.slots.get(object_of(key)? as usize)
    }

    /// One watch response: events applied in order and checked, or a progress notification.
    fn apply(&self, resp: &WatchResponse) {
        let header = resp.header().map_or(0, etcd_client::ResponseHeader::revision);
        if resp.events().is_empty() {
            if resp.canceled() {
                // Compacted past what it had delivered: the apiserver would list again;
                // this cache stays where it was, and its consistent reads time out.
                tracing::warn!(
                    compact_revision = resp.compact_revision(),
                    reason = resp.cancel_reason(),
                    "a watch cache's watch was cancelled"
                );
            }
            if resp.created() || resp.canceled() {
                return;
            }
            // A progress notification: everything up to its revision was delivered.
            if header < self.last_event.get() {
                self.checks.violated(Invariant::ProgressRegression);
            }
            self.advance(header);
            return;
        }
        for event in resp.events() {
            let Some(kv) = event.kv() else { continue };
            let rev = kv.mod_revision();
            if rev < self.last_event.get() {
                self.checks.violated(Invariant::WatchOrder);
            }
            self.last_event.set(self.last_event.get().max(rev));
            let Some(slot) = self.slot(kv.key()) else { continue };
            let deleted = event.event_type() == EventType::Delete;
            if (deleted || kv.version() > 1) && event.prev_kv().is_none() {
                self.checks.violated(Invariant::MissingPrevKv);
            }
            // Created (version 1) over an object the cache holds, with no delete between.
            if !deleted && kv.version() == 1 && slot.get() > 0 && slot.get() < rev {
                self.checks.violated(Invariant::DuplicateCreate);
            }
            put_newer(slot, rev, deleted);
        }
        self.advance(self.last_event.get());
    }

    fn advance(&self, revision: i64) {
        if revision > self.revision.get() {
            self.revision.set(revision);
            self.moved.notify_waiters();
        }
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        // Ends the watch task, which then drops its stream (and etcd its watcher).
        drop(self.end.take());
    }
}

/// `slot` takes `revision` (minus it when `deleted`) if that is newer than what it holds.
fn put_newer(slot: &Cell<i64>, revision: i64, deleted: bool) {
    if revision > slot.get().abs() {
        slot.set(if deleted { -revision } else { revision });
    }
}

/// The key after `key`: `key + "\0"`, where the apiserver's next page starts.
pub(super) fn next_key(key: &[u8]) -> Bytes {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    Bytes::from(next)
}

/// The watch task: applies what the stream delivers to the cache and sends the progress
/// requests it asks for, until the cache is dropped or the stream ends. It holds the cache
/// weakly, so the cache and its task do not keep each other alive.
async fn watch(
    cache: Weak<Cache>,
    progress: Rc<Notify>,
    stream: etcd_client::WatchStream,
    mut ended: oneshot::Receiver<()>,
) {
    let (mut requests, mut responses) = stream.split();
    loop {
        tokio::select! {
            _ = &mut ended => return,
            message = responses.message() => {
                let Ok(Some(resp)) = message else {
                    tracing::warn!("a watch cache's watch ended; its consistent reads will time out");
                    return;
                };
                let Some(cache) = cache.upgrade() else { return };
                cache.apply(&resp);
            }
            () = progress.notified() => {
                if requests.request_progress().await.is_err() {
                    return;
                }
            }
        }
    }
}
