//! A watch cache of one resource, as the apiserver's: its objects' revisions, from a list at
//! one revision (pages of 10,000, pinned), then a watch on the resource's prefix from the
//! next revision (prevKV, progress notify), and the revision it has caught up to.
//!
//! One cache per resource per apiserver, as each apiserver has its own: the requests of
//! the logical clients that apiserver serves share it, and etcd sends each event once to
//! each apiserver's watch. A request reads it with one atomic load: no lock, no
//! allocation. Only its watch feeds it (the watch task, on the thread of the worker that
//! filled the cache, writes it event by event): the run's own writes do not write through,
//! so a write's next update compares what the cache has seen, stale while its event is on
//! its way, and conflicts as the apiserver's does. An object's slot holds its mod revision,
//! or minus the revision it was deleted at (0: never seen). Its list streams (RangeStream)
//! from 1.37 on an etcd that has it.
//!
//! The cache also measures its watch ([`WatchRecord`]), from the start of measurement
//! ([`Cache::measure_from`]): how long each own write took from its answer to its event's
//! arrival (matched by revision in a fixed ring, [`SENT`] entries indexed by revision,
//! that the writer and the watch task each swap once, so that neither side allocates or
//! locks), the progress notifications it received and how long consistent reads waited
//! for them, and whether etcd cancelled its watch for a compaction. The record is behind
//! a lock that the watch task takes once per response carrying an own write, consistent
//! reads that waited once each, and the end of the run once: no two threads contend for
//! it but at the end.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcdlat_core::invariant::Invariant;
use etcdlat_core::recorder::kubernetes::WatchRecord;
use etcdlat_core::workload::kubernetes::{object_at, write_key};
use etcdlat_core::workload::prefix_end;
use tokio::sync::{Notify, OnceCell, oneshot};

use super::Layout;
use super::checks::Checks;
use super::list::{self, next_key};
use super::stream::RangeStreamSupport;
use crate::transport::message::{EventView, Malformed, RangeRequest, WatchResponse, WatchView};
use crate::transport::{Conn, Kv, WatchCreate, WatchReceiver, WatchSender};

/// The apiserver's page size for its watch cache's initial list.
const INITIAL_PAGE: i64 = 10_000;

/// How many times, and how far apart, the end-of-run check looks again at a cache that
/// differs from etcd ([`Cache::diverged`]).
const RECHECKS: u32 = 5;
const RECHECK: Duration = Duration::from_millis(200);

/// Entries of the ring of own writes awaiting their events: a write's entry is
/// overwritten by one `SENT` revisions later, so a lag is lost only when that many
/// revisions pass while its event is on its way (at 10,000 writes/s, most of a second).
const SENT: usize = 8192;

/// How often a consistent read waiting for the cache asks etcd for progress again (the
/// apiserver's `progressRequestsSentInterval`).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How long a consistent read waits for the cache, as the apiserver's
/// `waitUntilFreshAndBlock` (3 s), before it fails with `DeadlineExceeded`.
pub(super) const FRESH_WAIT: Duration = Duration::from_secs(3);

/// One resource's watch cache.
pub(crate) struct Cache {
    /// The keys it lists and watches ([`Layout::watched`]).
    prefix: Bytes,
    /// Its objects' layout: other keys under the prefix are not its.
    prefix_text: String,
    namespaces: u64,
    name_prefix: String,
    /// Per object: its mod revision, or minus the revision it was deleted at, 0 unknown.
    slots: Box<[AtomicI64]>,
    /// The revision the watch has delivered up to (events or progress notifications).
    revision: AtomicI64,
    /// The highest event revision delivered, to check their order and progress against
    /// (written by the watch task only).
    last_event: AtomicI64,
    /// Woken whenever `revision` moves, for consistent reads waiting on it.
    moved: Notify,
    /// Tells the watch task to ask etcd for a progress notification (the task holds it, not
    /// the cache).
    progress: Arc<Notify>,
    started: OnceCell<()>,
    /// Dropped with the cache: its watch task then ends.
    end: Mutex<Option<oneshot::Sender<()>>>,
    /// Its apiserver.
    apiserver: u32,
    /// Its initial list is read through RangeStream when this says its apiserver tries.
    streams: Option<Arc<RangeStreamSupport>>,
    /// Events delivered while measured.
    events: AtomicU64,
    checks: Arc<Checks>,
    /// The (resource, `watch`)'s slot its [`WatchRecord`] is recorded under.
    watch_slot: usize,
    /// What the times below count from.
    epoch: Instant,
    /// Nanoseconds from `epoch` that the watch's figures count from (0: all).
    measure_from: AtomicU64,
    /// By revision % [`SENT`]: an own write awaiting its event, or an event that arrived
    /// before its write's answer was read.
    sent: Box<[Sent]>,
    /// Own writes whose events were read before their answers: lags of 0.
    zero_lags: AtomicU64,
    watch: Mutex<WatchRecord>,
}

/// What a writer knows of an object before a `GuaranteedUpdate`: the revision it holds
/// (`None`: none, read from etcd first) and the revision its cache had been sent when it
/// read it, at or before which a conflict with one writer is a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Read {
    /// The object's revision the writer holds.
    pub(super) known: Option<i64>,
    /// What the writer's cache had been sent when it read `known`.
    pub(super) delivered: i64,
}

impl Read {
    /// The revision of the writer's own last write of the object (a life's): no other
    /// writer moves it, so any conflict with one writer is a fault.
    pub(super) fn own(known: Option<i64>) -> Self {
        Self { known, delivered: i64::MAX }
    }
}

/// An entry of [`Cache::sent`]: the revision of an own write whose answer was read (and
/// `at`, when, in nanoseconds from the cache's epoch), or minus the revision of an event
/// that arrived first, or 0.
#[derive(Default)]
struct Sent {
    revision: AtomicI64,
    at: AtomicU64,
}

impl Cache {
    /// Apiserver `apiserver`'s cache of `objects` objects of `layout`'s resource, names and
    /// namespaces, its watch recorded under `watch_slot`; its list streams with `streams`.
    pub(super) fn new(
        layout: &Layout,
        objects: u64,
        watch_slot: usize,
        checks: Arc<Checks>,
        (apiserver, streams): (u32, Option<Arc<RangeStreamSupport>>),
    ) -> Self {
        Self {
            prefix: Bytes::from(layout.watched()),
            prefix_text: layout.prefix.clone(),
            namespaces: layout.namespaces,
            name_prefix: layout.name_prefix.clone(),
            slots: (0..objects).map(|_| AtomicI64::new(0)).collect(),
            revision: AtomicI64::new(0),
            last_event: AtomicI64::new(0),
            moved: Notify::new(),
            progress: Arc::default(),
            started: OnceCell::new(),
            end: Mutex::new(None),
            apiserver,
            streams,
            events: AtomicU64::new(0),
            checks,
            watch_slot,
            epoch: Instant::now(),
            measure_from: AtomicU64::new(0),
            sent: (0..SENT).map(|_| Sent::default()).collect(),
            zero_lags: AtomicU64::new(0),
            watch: Mutex::new(WatchRecord {
                apiserver,
                namespace: layout.namespace().map(str::to_owned),
                ..WatchRecord::default()
            }),
        }
    }

    /// The watch's figures count from `start` (measurement's start; set before the run's
    /// workers start): lags of writes answered before, progress notifications received
    /// before and waits asked before, in warm-up, are not recorded. Compactions are, since
    /// a watch cancelled in warm-up leaves the cache unfed for the measured run too.
    pub(super) fn measure_from(&self, start: Instant) {
        self.measure_from.store(self.nanos(start), Ordering::Relaxed);
    }

    /// `at` in nanoseconds from the cache's epoch (0 before it).
    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether what happened at `at` (nanoseconds from the epoch) is measured.
    fn measured(&self, at: u64) -> bool {
        at >= self.measure_from.load(Ordering::Relaxed)
    }

    fn record(&self) -> MutexGuard<'_, WatchRecord> {
        self.watch.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the watch recorded, and the (resource, `watch`) slot it is recorded under;
    /// taken once, at the end of the run.
    pub(super) fn take_watch(&self) -> (usize, WatchRecord) {
        let mut watch = std::mem::take(&mut *self.record());
        watch.events += self.events.swap(0, Ordering::Relaxed);
        let zero = self.zero_lags.swap(0, Ordering::Relaxed);
        if zero > 0 {
            watch.lag.saturating_record_n(0, zero);
        }
        (self.watch_slot, watch)
    }

    /// Whether the cache is filled and watching.
    pub(super) fn started(&self) -> bool {
        self.started.initialized()
    }

    /// Fills the cache and starts its watch, once: the first client to need it does, on
    /// its worker's thread, and the others wait for it. Unmeasured, before the client's
    /// first request.
    pub(super) async fn start(self: &Arc<Self>, conn: &Conn) -> Result<(), tonic::Status> {
        self.started.get_or_try_init(|| self.fill_and_watch(conn)).await.map(|_| ())
    }

    async fn fill_and_watch(self: &Arc<Self>, conn: &Conn) -> Result<(), tonic::Status> {
        let mut kv = conn.kv.clone();
        let req = RangeRequest { limit: INITIAL_PAGE, ..self.prefix_range() };
        let stream = self.streams.as_deref().map(|support| (support, self.apiserver));
        let saw = |kv: &crate::transport::message::KeyValue| self.saw(&kv.key, kv.mod_revision);
        let listed = list::list(&mut kv, req, stream, &self.checks, saw).await?;
        let listed = listed.header.map_or(0, |h| h.revision);
        self.revision.store(listed, Ordering::Release);
        self.last_event.store(listed, Ordering::Relaxed);
        self.watch_from(conn, listed + 1).await
    }

    /// Starts the cache's watch from `start_revision`, its task spawned on this thread.
    async fn watch_from(
        self: &Arc<Self>,
        conn: &Conn,
        start_revision: i64,
    ) -> Result<(), tonic::Status> {
        let (mut requests, mut responses) = conn.watch().await?;
        let how =
            WatchCreate { start_revision, prev_kv: true, prefix: true, progress_notify: true };
        requests.create(&self.prefix, &how)?;
        match responses.message::<WatchResponse>().await? {
            Some(created) if created.created && !created.canceled => {}
            // Compacted between the list and the watch: the apiserver would list again; a
            // run's cache fails its client instead, named.
            Some(refused) => {
                return Err(tonic::Status::out_of_range(format!(
                    "the watch cache's watch was refused: {}",
                    refused.cancel_reason
                )));
            }
            None => {
                return Err(tonic::Status::unavailable("the watch cache's watch ended at once"));
            }
        }
        let (end, ended) = oneshot::channel();
        *self.end.lock().unwrap_or_else(PoisonError::into_inner) = Some(end);
        tokio::task::spawn_local(watch(
            Arc::downgrade(self),
            Arc::clone(&self.progress),
            requests,
            responses,
            ended,
        ));
        Ok(())
    }

    /// Object `o` as a writer reads it before its write: its revision in the cache, and
    /// what the cache had been sent by then (the revision read first, so that the slot
    /// holds at least what was delivered up to it).
    #[inline]
    pub(super) fn read(&self, o: u64) -> Read {
        let delivered = self.revision();
        Read { known: self.revision_of(o), delivered }
    }

    /// The revision object `o` was last seen at, if it exists as far as the cache knows.
    #[inline]
    pub(super) fn revision_of(&self, o: u64) -> Option<i64> {
        let rev = self.slots.get(o as usize)?.load(Ordering::Relaxed);
        (rev > 0).then_some(rev)
    }

    /// A write of one of the workers was answered at `revision`, now: its event's delivery
    /// is timed from here (of an object the cache has a slot for or not).
    #[inline]
    pub(super) fn answered(&self, revision: i64) {
        let entry = self.sent_entry(revision);
        let now = self.nanos(Instant::now());
        entry.at.store(now, Ordering::Relaxed);
        // Released with the revision: the watch task reads `at` only after it sees it.
        let before = entry.revision.swap(revision, Ordering::AcqRel);
        // Its event was read first (both were ready together): no lag to speak of.
        if before == -revision && self.measured(now) {
            self.zero_lags.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The event at `revision` arrived at `now` (nanoseconds from the epoch): the lag of
    /// the own write there, in microseconds, if it was one whose answer was read and
    /// measured.
    #[inline]
    fn delivered(&self, revision: i64, now: u64) -> Option<u64> {
        let entry = self.sent_entry(revision);
        // Another's write, or an own one whose answer is not read yet: the entry says so
        // for its writer, which then counts no lag.
        let before = entry.revision.swap(-revision, Ordering::AcqRel);
        if before != revision {
            return None;
        }
        let answered = entry.at.load(Ordering::Relaxed);
        self.measured(answered).then(|| now.saturating_sub(answered) / 1_000)
    }

    fn sent_entry(&self, revision: i64) -> &Sent {
        &self.sent[revision.unsigned_abs() as usize % SENT]
    }

    /// The key of the `n`th object the cache holds, in key order (namespaces by name, then
    /// objects by number): where a page of `n` served from the cache ends. `None` with
    /// fewer objects.
    pub(super) fn nth_key(&self, n: u64) -> Option<Vec<u8>> {
        let mut namespaces: Vec<u64> = (0..self.namespaces.max(1)).collect();
        namespaces.sort_by_cached_key(u64::to_string);
        let mut seen = 0;
        for ns in namespaces {
            let held = (ns..self.slots.len() as u64).step_by(self.namespaces.max(1) as usize);
            for o in held {
                if self.slots[o as usize].load(Ordering::Relaxed) > 0 {
                    seen += 1;
                    if seen == n {
                        let mut key = Vec::new();
                        write_key(
                            &mut key,
                            &self.prefix_text,
                            self.namespaces,
                            &self.name_prefix,
                            o,
                        );
                        return Some(key);
                    }
                }
            }
        }
        None
    }

    /// The revision the watch has delivered up to.
    pub(super) fn revision(&self) -> i64 {
        self.revision.load(Ordering::Acquire)
    }

    /// Waits until the watch has delivered `revision`, asking etcd for progress
    /// notifications meanwhile; false when [`FRESH_WAIT`] passed first.
    pub(super) async fn caught_up(&self, revision: i64) -> bool {
        // A cache that keeps up answers with an atomic load; only a wait registers with
        // the `Notify`.
        if self.revision() >= revision {
            return true;
        }
        let asked = Instant::now();
        let wait = async {
            loop {
                let moved = self.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if self.revision() >= revision {
                    return;
                }
                self.progress.notify_one();
                // Asked again every PROGRESS_EVERY while it waits, as the apiserver's
                // progress requester asks: etcd answers a request only once the stream's
                // watchers are synced, and may defer or drop one made before.
                let _ = tokio::time::timeout(PROGRESS_EVERY, moved).await;
            }
        };
        let caught_up = tokio::time::timeout(FRESH_WAIT, wait).await.is_ok();
        if caught_up && self.measured(self.nanos(asked)) {
            let us = u64::try_from(asked.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.record().waited(us);
        }
        caught_up
    }

    /// Checks the cache against etcd at the end of a run: once it has caught up to the
    /// current revision, its objects as they stand (a list at R plus the events from R + 1,
    /// and the workers' own writes) against a fresh list pinned to the revision it holds.
    /// Returns the objects that differ; unmeasured, once per cache.
    ///
    /// Differences are looked at again, a few times [`RECHECK`] apart, before they count:
    /// etcd 3.4 and 3.5 releases before the fix of etcd issue 15220 (pull request 15237;
    /// Debian's 3.4.23 among them) can answer a progress request with a revision whose
    /// events it has not sent yet, so a cache can look caught up while
    /// those events are on their way. Events that arrive late then mend it; lost ones never
    /// do, and count.
    pub(super) async fn diverged(&self, conn: &Conn) -> Result<u64, tonic::Status> {
        let mut kv = conn.kv.clone();
        let limit_one = RangeRequest { limit: 1, ..self.prefix_range() };
        let now = kv.range(limit_one).await?.header.map_or(0, |h| h.revision);
        if !self.caught_up(now).await {
            return Err(tonic::Status::deadline_exceeded("the watch cache did not catch up"));
        }
        let mut diverged = self.differences(&mut kv).await?;
        for _ in 0..RECHECKS {
            if diverged == 0 {
                break;
            }
            tokio::time::sleep(RECHECK).await;
            diverged = self.differences(&mut kv).await?;
        }
        Ok(diverged)
    }

    /// How many objects the cache holds otherwise than a fresh list at its revision.
    async fn differences(&self, kv: &mut Kv) -> Result<u64, tonic::Status> {
        // Read before the slots, and stored by the watch task after the events it covers:
        // the slots are at least as new as it. An event that lands while they are read
        // makes a difference that the next look mends.
        let revision = self.revision();
        let held: Vec<i64> = self.slots.iter().map(|s| s.load(Ordering::Relaxed).max(0)).collect();
        let mut fresh = vec![0; held.len()];
        let mut req = RangeRequest { revision, keys_only: true, ..self.prefix_range() };
        req.limit = INITIAL_PAGE;
        loop {
            let resp = kv.range(req.clone()).await?;
            for found in &resp.kvs {
                if let Some(o) = self.object_at(&found.key).filter(|&o| o < fresh.len() as u64) {
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
    fn slot(&self, key: &[u8]) -> Option<&AtomicI64> {
        self.slots.get(self.object_at(key)? as usize)
    }

    fn object_at(&self, key: &[u8]) -> Option<u64> {
        object_at(key, &self.prefix_text, self.namespaces, &self.name_prefix)
    }

    /// One watch response: events applied in order and checked, or a progress notification.
    fn apply(&self, resp: &WatchView<'_>) -> Result<(), Malformed> {
        if !resp.has_events {
            if resp.canceled {
                // Compacted past what it had delivered: the apiserver would list again;
                // this cache stays where it was, and its consistent reads time out.
                if resp.compact_revision != 0 {
                    self.record().compacted += 1;
                }
                tracing::warn!(
                    compact_revision = resp.compact_revision,
                    reason = resp.cancel_reason(),
                    "a watch cache's watch was cancelled"
                );
            }
            if !resp.created && !resp.canceled {
                if self.measured(self.nanos(Instant::now())) {
                    self.record().progress_notifications += 1;
                }
                self.progressed(resp.revision);
            }
            return Ok(());
        }
        // One clock read per response, not per event: its events arrived together.
        let now = self.nanos(Instant::now());
        let mut record = None;
        let measured = self.measured(now);
        for event in resp.events() {
            let event = event?;
            if measured {
                self.events.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(us) = self.delivered(event.mod_revision, now) {
                record.get_or_insert_with(|| self.record()).lagged(us);
            }
            self.event(&event);
        }
        drop(record);
        self.advance(self.last_event.load(Ordering::Relaxed));
        Ok(())
    }

    /// A progress notification: everything up to `revision` was delivered.
    fn progressed(&self, revision: i64) {
        if revision < self.last_event.load(Ordering::Relaxed) {
            self.checks.violated(Invariant::ProgressRegression);
        }
        self.advance(revision);
    }

    /// One event, checked and applied.
    fn event(&self, e: &EventView<'_>) {
        let last = self.last_event.load(Ordering::Relaxed);
        if e.mod_revision < last {
            self.checks.violated(Invariant::WatchOrder);
        }
        self.last_event.store(last.max(e.mod_revision), Ordering::Relaxed);
        let Some(slot) = self.slot(e.key) else { return };
        if (e.deleted || e.version > 1) && !e.prev_kv {
            self.checks.violated(Invariant::MissingPrevKv);
        }
        // Created (version 1) over an object the cache holds, with no delete between.
        let held = slot.load(Ordering::Relaxed);
        if !e.deleted && e.version == 1 && held > 0 && held < e.mod_revision {
            self.checks.violated(Invariant::DuplicateCreate);
        }
        put_newer(slot, e.mod_revision, e.deleted);
    }

    fn advance(&self, revision: i64) {
        // Only the watch task moves it, so a load and a store do.
        if revision > self.revision.load(Ordering::Relaxed) {
            self.revision.store(revision, Ordering::Release);
            self.moved.notify_waiters();
        }
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        // Ends the watch task, which then drops its stream (and etcd its watcher).
        drop(self.end.get_mut().unwrap_or_else(PoisonError::into_inner).take());
    }
}

/// `slot` takes `revision` (minus it when `deleted`) if that is newer than what it holds:
/// a writer and the watch task may store one object's revision at once, and the newer
/// stands.
fn put_newer(slot: &AtomicI64, revision: i64, deleted: bool) {
    let new = if deleted { -revision } else { revision };
    let _ = slot.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
        (revision > held.abs()).then_some(new)
    });
}

/// The watch task: applies what the stream delivers to the cache and sends the progress
/// requests it asks for, until the cache is dropped or the stream ends. It holds the cache
/// weakly, so the cache and its task do not keep each other alive.
async fn watch(
    cache: Weak<Cache>,
    progress: Arc<Notify>,
    mut requests: WatchSender,
    mut responses: WatchReceiver,
    mut ended: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut ended => return,
            message = responses.raw() => {
                let Ok(Some(message)) = message else {
                    tracing::warn!("a watch cache's watch ended; its consistent reads will time out");
                    return;
                };
                let Some(cache) = cache.upgrade() else { return };
                if let Err(e) = WatchView::parse(&message).and_then(|resp| cache.apply(&resp)) {
                    tracing::warn!("a watch cache's watch stops: {e}");
                    return;
                }
            }
            () = progress.notified() => {
                if requests.request_progress().is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> Cache {
        let layout = Layout {
            prefix: "/registry/pods/".into(),
            namespaces: 1,
            name_prefix: "object-".into(),
        };
        Cache::new(&layout, 10, 0, Arc::default(), (0, None))
    }

    fn put(key: &str, mod_revision: i64, version: i64) -> EventView<'_> {
        EventView {
            key: key.as_bytes(),
            mod_revision,
            version,
            deleted: false,
            prev_kv: version > 1,
        }
    }

    fn violations(cache: &Cache) -> Vec<(Invariant, u64)> {
        let counts = cache.checks.counts();
        Invariant::ALL.into_iter().map(|i| (i, counts[i.index()])).filter(|(_, n)| *n > 0).collect()
    }

    /// Events move an object's revision forward only: a newer one stands, a delete leaves
    /// minus its revision, and names not of the cache's layout are skipped. The run's own
    /// writes do not reach it but through the watch.
    #[test]
    fn events_keep_the_newest_revision_and_own_writes_do_not_write_through() {
        let c = cache();
        let key = "/registry/pods/ns-0/object-00000003";
        c.event(&put(key, 5, 1));
        assert_eq!(c.revision_of(3), Some(5));
        c.answered(9);
        assert_eq!(c.revision_of(3), Some(5), "an own write's answer is not its event");
        c.event(&put(key, 9, 2));
        c.saw(key.as_bytes(), 7);
        assert_eq!(c.revision_of(3), Some(9), "a listed revision older than the event held");
        c.event(&EventView { deleted: true, ..put(key, 10, 3) });
        assert_eq!(c.revision_of(3), None);
        c.saw(key.as_bytes(), 8);
        assert_eq!(c.revision_of(3), None, "a listed revision older than the delete");
        c.event(&put(key, 11, 1));
        assert_eq!(c.revision_of(3), Some(11), "created again after the delete");
        for other in [
            "/registry/pods/ns-0/more-00000004",
            "/registry/pods/object-00000004",
            "/registry/pods/ns-1/object-00000004",
        ] {
            c.event(&put(other, 12, 1));
        }
        assert_eq!(c.revision_of(4), None);
        assert!(violations(&c).is_empty(), "{:?}", violations(&c));
    }

    /// A watch from a revision etcd has compacted is created, then cancelled with the
    /// compact revision: the cache counts it into its resource's watch row as compacted
    /// (an `OutOfRange` failure), and is fed no more.
    #[tokio::test]
    async fn a_watch_from_a_compacted_revision_is_counted_compacted() {
        use crate::transport::{Dialer, Security};
        if etcdlat_testkit::skip() {
            return;
        }
        let etcd = etcdlat_testkit::Etcd::start().await;
        let mut client = etcd.client().await;
        let mut compacted_at = 0;
        for o in 0..5 {
            let key = format!("/registry/pods/ns-0/object-{o:08}");
            let put = client.put(key, "x", None).await.expect("a put");
            compacted_at = put.header().expect("a header").revision();
        }
        client.compact(compacted_at, None).await.expect("a compaction");
        let dialer = Dialer::new(&Security::default(), Duration::from_secs(5)).expect("a dialer");
        let conn = Conn::open(&dialer, &etcd.endpoint()).await.expect("a connection");
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let c = Arc::new(cache());
                c.watch_from(&conn, 2).await.expect("the watch is created first");
                let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
                while c.record().compacted == 0 && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                client.put("/registry/pods/ns-0/object-00000001", "y", None).await.unwrap();
                tokio::time::sleep(Duration::from_millis(200)).await;
                assert_eq!((c.revision(), c.revision_of(1)), (0, None), "fed nothing since");
                let mut recorder = etcdlat_core::recorder::Recorder::new(
                    &[],
                    std::time::Instant::now(),
                    Duration::from_secs(1),
                );
                let (slot, watch) = c.take_watch();
                recorder.record_watch(slot, &watch);
                let (slot, row) = recorder.requests_by_slot().iter().next().expect("its row");
                let out_of_range = row.errors[etcdlat_core::ErrorCode::OutOfRange.index()];
                assert_eq!((slot, row.compacted, out_of_range, row.ok), (0, 1, 1, 0));
            })
            .await;
    }

    /// Each check the watch makes counts what breaks it.
    #[test]
    fn watch_checks_count_what_breaks_them() {
        let c = cache();
        let key = "/registry/pods/ns-0/object-00000001";
        c.event(&put(key, 5, 1));
        // Created again with no delete between.
        c.event(&put(key, 6, 1));
        // Back in revision.
        c.event(&put(key, 4, 2));
        // An update without its previous value.
        c.event(&EventView { prev_kv: false, ..put(key, 7, 2) });
        // Progress behind what was delivered, then ahead of it.
        c.progressed(6);
        c.progressed(9);
        assert_eq!(c.revision(), 9);
        assert_eq!(
            violations(&c),
            [
                (Invariant::DuplicateCreate, 1),
                (Invariant::WatchOrder, 1),
                (Invariant::ProgressRegression, 1),
                (Invariant::MissingPrevKv, 1),
            ]
        );
    }
}
