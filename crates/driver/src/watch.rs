//! The watch family of workloads: `watch`, `watch-get` and `watch-latency`, with etcd
//! benchmark's flags and defaults, measured the way etcdlat measures everything else.
//!
//! # How a run goes
//!
//! Everything runs on the worker threads, over the workers' connections: watch stream `s`
//! is opened on connection `s % conns` by the worker that owns it, putter `p` (one per
//! logical client for `watch`, one for `watch-latency`) sends on connection `p % conns`, and
//! the getter of `watch-get` on connection 0. The calling task steps the workers through
//! phases and looks at their progress a few hundred times a second, never per event:
//!
//! 1. every worker creates its watchers (measurement starts here); `watch-get` first puts
//!    `events` values to key `watchkey`, unmeasured, and its watchers start from the first
//!    of them, so they are unsynced and catch up;
//! 2. once all are created, the puts start, `put-rate` a second for the whole run (0:
//!    unlimited, each putter one put in flight);
//! 3. once every put is acknowledged, the run waits until every expected event has arrived,
//!    or until none arrived for [`EVENT_GRACE`], and stops. Measurement ends with the last
//!    event, put or get.
//!
//! A stop (the driver's shutdown) ends the run at any phase: requests in flight get the
//! driver's stop grace to finish, the report holds what was measured and is marked
//! interrupted. The load section's `rate`, `duration` and `warmup` do not apply here; its
//! `clients` is the number of `watch` putters, as etcd's tool uses `--clients`.
//!
//! # What is recorded
//!
//! - `watch-create`: from sending a create request to its `created` response. Creates are
//!   pipelined on a stream and etcd answers them in order, so the `k`th `created` response
//!   of a stream answers its `k`th create. Every workload records it. (etcd's tool times
//!   only the client library's call, which does not wait for the server.)
//! - `watch-event`: from the moment the put was sent to the moment its event arrived, for
//!   every event on every watcher. Every put's value starts with its send time (8 bytes,
//!   little-endian nanoseconds since an instant all worker threads share), so the event
//!   itself says when its put was sent. etcd's tool times an event from the previous one,
//!   about 0 by construction. Values of `watch` are those 8 bytes; `watch-latency` values
//!   are `val-size` bytes, at least 8.
//! - `watch-event-acked` (`watch-latency`): from the put's acknowledgement (its response
//!   arriving at the putter) to the event's arrival. Events are matched to puts by revision:
//!   the put response's header revision is the event's mod revision (the putter publishes
//!   each acknowledgement in a lock-free table by revision that watchers read). An event
//!   that arrives before its put's response is counted in the accounting's `before_ack` and
//!   recorded nothing here: it is never clamped to 0, as etcd's tool does. An event that
//!   arrives more than [`ACK_SLOTS`] revisions after its put was acknowledged can no longer
//!   be matched and is recorded only from the send.
//! - `put` (`watch`, `watch-latency`): the puts that make the events, like any put.
//! - `range` (`watch-get`): serializable gets of key `abc`, back to back from one client,
//!   from the start of watch creation until every watcher has caught up.
//!
//! Only an event's first arrival, in revision order, is recorded.
//!
//! # Accounting
//!
//! Every watcher checks that its events arrive once each and in revision order: an event of
//! the revision it saw last is a duplicate, one older than that is out of order (it may also
//! be a late duplicate; the two cannot be told apart without remembering every revision).
//! `expected` is, over the acknowledged puts, the number of watchers of each put's key
//! (`watch-get`: watchers times events); `missing` is `expected - (received - duplicate)`.
//! Events of writes this run did not make (a value of another length on a watched key) are
//! left out of every figure.
//!
//! A put can fail and still have been applied: under overload etcd answers "request timed
//! out" for proposals it may yet commit, and a lost connection or a stop leaves a put's
//! outcome unknown ([`outcome_unknown`]). Such puts are counted in `uncertain_puts`, and
//! the watchers of their keys in `uncertain_events`, the most events they can have made;
//! events seen beyond `expected + uncertain_events` are `unexplained`. The run waits for
//! the `expected` events only.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering, fence};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use etcd_client::{Event, WatchOptions, WatchResponseStream};
use etcdlat_core::keyspace::{KeyGen, random_value};
use etcdlat_core::{
    ErrorCode, OpKind, Operation, Recorder, Scenario, WatchAccounting, WatchGetOp, WatchLatencyOp,
    WatchOp,
};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use crate::driver::Measured;
use crate::error::DriverError;
use crate::transport::frame::MAX_RESPONSE_BYTES;
use crate::transport::message::{Key, PutRequest, PutResponse, RangeRequest};
use crate::transport::{Conn, Kv, status};
use crate::worker::{STOP_GRACE, Worker};

/// Once every put is acknowledged, how long the run waits for expected events while none
/// arrives; what has not arrived by then is missing.
const EVENT_GRACE: Duration = Duration::from_secs(5);

/// How often a worker publishes how many events it has seen (never per event).
const PUBLISH_EVERY: Duration = Duration::from_millis(10);

/// How often the calling task looks at the workers' progress.
const POLL_EVERY: Duration = Duration::from_millis(5);

/// Bytes of the send time at the start of every put's value.
const STAMP_LEN: usize = 8;

/// Bytes of value buffer allocated at once; each put's value is split off it.
const STAMP_ARENA: usize = 64 << 10;

/// Slots of watch-latency's acknowledgement table, indexed by revision: an event that
/// arrives more than this many revisions after its put was acknowledged is not matched.
const ACK_SLOTS: u64 = 1 << 16;

/// The key watch-get's watchers watch, and the key its gets read (etcd's tool's).
const WATCH_GET_KEY: &[u8] = b"watchkey";
const WATCH_GET_RANGE_KEY: &[u8] = b"abc";

/// Runs a watch-family scenario on the workers.
pub(crate) async fn run(
    workers: &[Worker],
    scenario: &Scenario,
    seed: u64,
    stop: watch::Receiver<bool>,
) -> Result<Measured, DriverError> {
    let layout = Layout::of(workers).await?;
    let plan = match &scenario.op {
        Some(Operation::Watch(op)) => Plan::watch(op, scenario, seed, layout),
        Some(Operation::WatchLatency(op)) => Plan::latency(op, scenario, seed, layout),
        Some(Operation::WatchGet(op)) => {
            let Some(first) = workers.first() else {
                return Err(DriverError::Worker { index: 0, reason: "no workers".into() });
            };
            let revisions = fill(first, op.events, &stop).await?;
            Plan::get(op, scenario, revisions, layout)
        }
        other => {
            return Err(DriverError::Unsupported {
                what: other.as_ref().map_or("mix", |o| o.name()).to_owned(),
            });
        }
    };
    orchestrate(workers, Arc::new(plan), stop).await
}

/// Where connections live: connection `c` on worker `c % workers`, at its index
/// `c / workers` (as the driver's pool places them).
#[derive(Debug, Clone, Copy)]
struct Layout {
    conns: u64,
    workers: u64,
}

impl Layout {
    async fn of(workers: &[Worker]) -> Result<Self, DriverError> {
        let mut conns = 0;
        for worker in workers {
            let count = worker.exec(|conns| async move { conns.len() })?;
            conns += count.await.map_err(|_| gone(worker))? as u64;
        }
        if conns == 0 {
            return Err(DriverError::Worker { index: 0, reason: "no connections".into() });
        }
        Ok(Self { conns, workers: workers.len() as u64 })
    }

    /// The worker and the worker's connection index of connection `c % conns`.
    fn place(self, c: u64) -> (usize, usize) {
        let c = c % self.conns;
        ((c % self.workers) as usize, (c / self.workers) as usize)
    }
}

fn gone(worker: &Worker) -> DriverError {
    DriverError::Worker { index: worker.index(), reason: "worker stopped mid-run".into() }
}

/// Everything the workers need to know about a run, shared read-only.
struct Plan {
    /// Kinds whose histograms are allocated up front.
    kinds: Vec<OpKind>,
    interval: Duration,
    layout: Layout,
    streams: u64,
    watchers: u64,
    /// The distinct watched keys.
    keys: Vec<Bytes>,
    /// The distinct key of each watched key; watcher `w` watches, and put `i` writes,
    /// watched key `w % len`, `i % len`.
    watched: Vec<usize>,
    /// Watchers of each distinct key.
    watchers_of_key: Vec<u64>,
    options: WatchOptions,
    events: Events,
    puts: Option<Puts>,
    /// Whether a getter runs (watch-get).
    get: bool,
    /// Events expected, when known before the run (watch-get); otherwise counted per
    /// acknowledged put.
    expected: Option<u64>,
    /// Puts made before measuring (watch-get).
    setup_puts: u64,
    /// The instant put values count nanoseconds from.
    base: Instant,
    /// Start of measurement: watch creation.
    start: Instant,
}

/// What an event tells and how it is checked.
enum Events {
    /// Its value starts with its put's send time (watch).
    Stamped { value_len: usize },
    /// That, and it is matched by revision to its put's acknowledgement (watch-latency).
    Acked { value_len: usize, acks: Acks },
    /// Watchers catch up on revisions `first..=last` (watch-get).
    CatchUp { first: i64, last: i64 },
}

/// The put phase.
struct Puts {
    putters: u64,
    total: u64,
    /// Per second, for the whole run; 0 = unlimited.
    rate: u64,
    /// The value; its first [`STAMP_LEN`] bytes are replaced by the send time.
    filler: Bytes,
}

impl Plan {
    fn watch(op: &WatchOp, scenario: &Scenario, seed: u64, layout: Layout) -> Self {
        let mut keygen = KeyGen::new(&op.key_space(), seed);
        let watchers = op.streams * op.watch_per_stream;
        let (keys, watched, watchers_of_key) =
            group_keys((0..op.watched_key_total).map(|i| keygen.key(i).to_vec()), watchers);
        let base = Instant::now();
        Self {
            kinds: vec![OpKind::WatchCreate, OpKind::WatchEvent, OpKind::Put],
            interval: scenario.report.interval,
            layout,
            streams: op.streams,
            watchers,
            keys,
            watched,
            watchers_of_key,
            options: WatchOptions::new(),
            events: Events::Stamped { value_len: STAMP_LEN },
            puts: Some(Puts {
                putters: u64::from(scenario.load.clients.max(1)),
                total: op.put_total,
                rate: op.put_rate,
                filler: Bytes::from_static(&[0; STAMP_LEN]),
            }),
            get: false,
            expected: None,
            setup_puts: 0,
            base,
            start: base,
        }
    }

    fn latency(op: &WatchLatencyOp, scenario: &Scenario, seed: u64, layout: Layout) -> Self {
        let key = random_value(op.key_size as usize, seed.wrapping_add(1));
        let watchers = op.streams * op.watchers_per_stream;
        let (keys, watched, watchers_of_key) = group_keys(std::iter::once(key), watchers);
        let value_len = (op.val_size as usize).max(STAMP_LEN);
        let mut options = WatchOptions::new();
        if op.prevkv {
            options = options.with_prev_key();
        }
        let base = Instant::now();
        Self {
            kinds: vec![
                OpKind::WatchEvent,
                OpKind::WatchEventAcked,
                OpKind::Put,
                OpKind::WatchCreate,
            ],
            interval: scenario.report.interval,
            layout,
            streams: op.streams,
            watchers,
            keys,
            watched,
            watchers_of_key,
            options,
            events: Events::Acked { value_len, acks: Acks::new(op.put_total) },
            puts: Some(Puts {
                putters: 1,
                total: op.put_total,
                rate: op.put_rate,
                filler: random_value(value_len, seed).into(),
            }),
            get: false,
            expected: None,
            setup_puts: 0,
            base,
            start: base,
        }
    }

    fn get(
        op: &WatchGetOp,
        scenario: &Scenario,
        (first, last): (i64, i64),
        layout: Layout,
    ) -> Self {
        let (keys, watched, watchers_of_key) =
            group_keys(std::iter::once(WATCH_GET_KEY.to_vec()), op.watchers);
        let base = Instant::now();
        Self {
            kinds: vec![OpKind::Range, OpKind::WatchCreate],
            interval: scenario.report.interval,
            layout,
            streams: op.streams,
            watchers: op.watchers,
            keys,
            watched,
            watchers_of_key,
            options: WatchOptions::new().with_start_revision(first),
            events: Events::CatchUp { first, last },
            puts: None,
            get: true,
            expected: Some(op.watchers * op.events),
            setup_puts: op.events,
            base,
            start: base,
        }
    }

    /// The watchers of stream `s`: the watchers split evenly over the streams, in order.
    fn stream_watchers(&self, s: u64) -> Range<u64> {
        let each = self.watchers / self.streams;
        let rest = self.watchers % self.streams;
        let start = s * each + s.min(rest);
        start..start + each + u64::from(s < rest)
    }

    /// The distinct key of watcher or put `i`.
    fn key_of(&self, i: u64) -> usize {
        self.watched[(i % self.watched.len() as u64) as usize]
    }

    fn since_base(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    fn at(&self, nanos: u64) -> Instant {
        self.base + Duration::from_nanos(nanos)
    }
}

/// Groups watched keys (`keys`, possibly repeating) into distinct keys: returns the
/// distinct keys, the distinct key of each watched key, and how many of `watchers` watch
/// each distinct key (watcher `w` watches watched key `w % watched`).
fn group_keys(
    keys: impl Iterator<Item = Vec<u8>>,
    watchers: u64,
) -> (Vec<Bytes>, Vec<usize>, Vec<u64>) {
    let mut ids: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut distinct = Vec::new();
    let watched: Vec<usize> = keys
        .map(|k| {
            *ids.entry(k).or_insert_with_key(|k| {
                distinct.push(Bytes::copy_from_slice(k));
                distinct.len() - 1
            })
        })
        .collect();
    let total = watched.len() as u64;
    let mut of_key = vec![0; distinct.len()];
    for (j, &id) in watched.iter().enumerate() {
        of_key[id] += watchers / total + u64::from((j as u64) < watchers % total);
    }
    (distinct, watched, of_key)
}

/// Puts watch-get's `events` values to its key, unmeasured; returns the first and last
/// revision written.
async fn fill(
    worker: &Worker,
    events: u64,
    stop: &watch::Receiver<bool>,
) -> Result<(i64, i64), DriverError> {
    let stop = stop.clone();
    let done = worker.exec(move |conns| async move {
        let mut kv = conns[0].kv.clone();
        let mut revisions: Option<(i64, i64)> = None;
        let mut failed = 0;
        for i in 0..events {
            if *stop.borrow() {
                return Err(DriverError::Interrupted);
            }
            let request =
                PutRequest { key: Key::new(WATCH_GET_KEY), value: Bytes::from(i.to_string()) };
            match kv.put(request).await {
                Ok(response) => {
                    let rev = response.header.map_or(0, |h| h.revision);
                    revisions = Some((revisions.map_or(rev, |r| r.0), rev));
                }
                Err(_) => failed += 1,
            }
        }
        match revisions {
            Some(r) if failed == 0 => Ok(r),
            _ => Err(DriverError::Setup { failed, total: events }),
        }
    })?;
    done.await.map_err(|_| gone(worker))?
}

/// The phase the calling task has moved the run to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Create the watchers.
    Create,
    /// Put, slots counted from this instant.
    Put(Instant),
    /// Stop everything and hand back what was measured.
    Finish,
}

/// What a worker tells the calling task, a few times a phase.
#[derive(Debug, Clone, Copy, Default)]
struct Status {
    /// Its watchers are created (or failed).
    ready: bool,
    /// Its puts are over.
    puts_done: bool,
    /// Events its acknowledged puts made, over every watcher.
    expected: u64,
    /// Events its watchers have seen (received less duplicates).
    seen: u64,
}

/// Counts of one worker.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    watchers: u64,
    puts: u64,
    expected: u64,
    received: u64,
    duplicate: u64,
    out_of_order: u64,
    before_ack: u64,
    /// Puts whose outcome is unknown, and the watchers of their keys.
    uncertain_puts: u64,
    uncertain_events: u64,
}

impl Tally {
    fn seen(&self) -> u64 {
        self.received - self.duplicate
    }

    fn add(&mut self, other: &Tally) {
        self.watchers += other.watchers;
        self.puts += other.puts;
        self.expected += other.expected;
        self.received += other.received;
        self.duplicate += other.duplicate;
        self.out_of_order += other.out_of_order;
        self.before_ack += other.before_ack;
        self.uncertain_puts += other.uncertain_puts;
        self.uncertain_events += other.uncertain_events;
    }
}

/// What a worker hands back once, at the end.
struct Outcome {
    recorder: Recorder,
    tally: Tally,
    /// Its last event, put, get or create.
    last: Instant,
}

/// Steps the workers through the phases and gathers what they measured.
async fn orchestrate(
    workers: &[Worker],
    plan: Arc<Plan>,
    stop: watch::Receiver<bool>,
) -> Result<Measured, DriverError> {
    let (ctl, ctl_rx) = watch::channel(Phase::Create);
    let mut statuses = Vec::with_capacity(workers.len());
    let mut outcomes = Vec::with_capacity(workers.len());
    for (index, worker) in workers.iter().enumerate() {
        let (status, status_rx) = watch::channel(Status::default());
        let plan = Arc::clone(&plan);
        let ctl = ctl_rx.clone();
        outcomes.push(worker.exec(move |conns| work(index, plan, conns, ctl, status))?);
        statuses.push(status_rx);
    }
    drop(ctl_rx);

    let mut stopped = wait(workers, &statuses, &stop, |s| s.ready).await?;
    if !stopped {
        let _ = ctl.send(Phase::Put(Instant::now()));
        stopped = wait(workers, &statuses, &stop, |s| s.puts_done).await?;
    }
    if !stopped {
        let expected =
            plan.expected.unwrap_or_else(|| statuses.iter().map(|s| s.borrow().expected).sum());
        stopped = drain(workers, &statuses, &stop, expected).await?;
    }
    let _ = ctl.send(Phase::Finish);

    let mut recorder = Recorder::new(&[], plan.start, plan.interval);
    let mut tally = Tally::default();
    let mut last = plan.start;
    for (worker, outcome) in workers.iter().zip(outcomes) {
        let outcome = outcome.await.map_err(|_| gone(worker))?;
        recorder.merge(outcome.recorder);
        tally.add(&outcome.tally);
        last = last.max(outcome.last);
    }
    let expected = plan.expected.unwrap_or(tally.expected);
    let watch = WatchAccounting {
        streams: plan.streams,
        watchers: tally.watchers,
        puts: tally.puts + plan.setup_puts,
        expected,
        received: tally.received,
        missing: expected.saturating_sub(tally.seen()),
        duplicate: tally.duplicate,
        out_of_order: tally.out_of_order,
        before_ack: tally.before_ack,
        uncertain_puts: tally.uncertain_puts,
        uncertain_events: tally.uncertain_events,
        unexplained: tally.seen().saturating_sub(expected + tally.uncertain_events),
    };
    Ok(Measured {
        recorder,
        measure_start: plan.start,
        last_done: last,
        interrupted: stopped,
        watch: Some(watch),
        worker_cpu: None,
    })
}

/// Waits until every worker's status is `done`; true when the run was stopped first.
async fn wait(
    workers: &[Worker],
    statuses: &[watch::Receiver<Status>],
    stop: &watch::Receiver<bool>,
    done: impl Fn(&Status) -> bool,
) -> Result<bool, DriverError> {
    loop {
        if *stop.borrow() {
            return Ok(true);
        }
        alive(workers, statuses)?;
        if statuses.iter().all(|s| done(&s.borrow())) {
            return Ok(false);
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Waits until the workers have seen `expected` events, or none for [`EVENT_GRACE`]; true
/// when the run was stopped first.
async fn drain(
    workers: &[Worker],
    statuses: &[watch::Receiver<Status>],
    stop: &watch::Receiver<bool>,
    expected: u64,
) -> Result<bool, DriverError> {
    let mut seen_before = u64::MAX;
    let mut progress_at = Instant::now();
    loop {
        if *stop.borrow() {
            return Ok(true);
        }
        alive(workers, statuses)?;
        let seen: u64 = statuses.iter().map(|s| s.borrow().seen).sum();
        if seen >= expected {
            return Ok(false);
        }
        let now = Instant::now();
        if seen != seen_before {
            seen_before = seen;
            progress_at = now;
        } else if now.duration_since(progress_at) >= EVENT_GRACE {
            return Ok(false);
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Fails when a worker's task ended before the run did (it panicked: a bug).
fn alive(workers: &[Worker], statuses: &[watch::Receiver<Status>]) -> Result<(), DriverError> {
    match workers.iter().zip(statuses).find(|(_, s)| s.has_changed().is_err()) {
        Some((worker, _)) => Err(gone(worker)),
        None => Ok(()),
    }
}

/// A worker's share of the run: its streams, putters and getter, their recorder and counts.
struct Local {
    plan: Arc<Plan>,
    recorder: RefCell<Recorder>,
    issued: [Cell<u64>; OpKind::COUNT],
    tally: Cell<Tally>,
    /// Watchers of the keys of the puts sent and not answered yet: what the puts a stop
    /// abandons could have made.
    in_flight_events: Cell<u64>,
    last: Cell<Instant>,
    /// Streams whose watchers are all created (or failed).
    ready: Cell<usize>,
    ready_changed: Notify,
}

/// What a watcher remembers.
#[derive(Debug, Clone, Copy, Default)]
struct Watcher {
    /// Revision of the last event in order.
    revision: i64,
}

impl Local {
    fn new(plan: Arc<Plan>) -> Self {
        Self {
            recorder: RefCell::new(Recorder::new(&plan.kinds, plan.start, plan.interval)),
            issued: Default::default(),
            tally: Cell::new(Tally::default()),
            in_flight_events: Cell::new(0),
            last: Cell::new(plan.start),
            ready: Cell::new(0),
            ready_changed: Notify::new(),
            plan,
        }
    }

    fn issue(&self, kind: OpKind, n: u64) {
        let issued = &self.issued[kind.index()];
        issued.set(issued.get() + n);
    }

    fn count(&self, f: impl FnOnce(&mut Tally)) {
        let mut tally = self.tally.get();
        f(&mut tally);
        self.tally.set(tally);
    }

    fn stream_ready(&self) {
        self.ready.set(self.ready.get() + 1);
        self.ready_changed.notify_one();
    }

    fn created(&self, sent: Instant, now: Instant, ok: bool) {
        let mut rec = self.recorder.borrow_mut();
        if ok {
            rec.record_ok(OpKind::WatchCreate, sent, sent, now);
            self.count(|t| t.watchers += 1);
        } else {
            // etcd answers a create it refuses with `created` and `canceled`.
            rec.record_error(OpKind::WatchCreate, ErrorCode::FailedPrecondition, now);
        }
        self.last.set(now);
    }

    fn creates_failed(&self, n: usize, code: ErrorCode, now: Instant) {
        self.recorder.borrow_mut().record_errors(OpKind::WatchCreate, code, n as u64, now);
    }

    fn on_events(&self, watcher: &mut Watcher, events: &[Event], arrival: Instant) {
        let plan = &*self.plan;
        let arrival_ns = plan.since_base(arrival);
        let mut tally = self.tally.get();
        let mut rec = self.recorder.borrow_mut();
        for event in events {
            let Some(kv) = event.kv() else { continue };
            let revision = kv.mod_revision();
            let sent_ns = match &plan.events {
                Events::CatchUp { first, last } => {
                    if revision < *first || revision > *last {
                        continue;
                    }
                    None
                }
                Events::Stamped { value_len } | Events::Acked { value_len, .. } => {
                    match stamp_of(kv.value(), *value_len) {
                        Some(ns) => Some(ns),
                        None => continue,
                    }
                }
            };
            tally.received += 1;
            if revision <= watcher.revision {
                if revision == watcher.revision {
                    tally.duplicate += 1;
                } else {
                    tally.out_of_order += 1;
                }
                continue;
            }
            watcher.revision = revision;
            let Some(sent_ns) = sent_ns else { continue };
            let sent = plan.at(sent_ns);
            rec.record_ok(OpKind::WatchEvent, sent, sent, arrival);
            if let Events::Acked { acks, .. } = &plan.events {
                match acks.lookup(revision) {
                    Ack::At(acked_ns) if acked_ns <= arrival_ns => {
                        let acked = plan.at(acked_ns);
                        rec.record_ok(OpKind::WatchEventAcked, acked, acked, arrival);
                    }
                    Ack::At(_) | Ack::Pending => tally.before_ack += 1,
                    Ack::Forgotten => {}
                }
            }
        }
        drop(rec);
        self.tally.set(tally);
        self.last.set(arrival);
    }

    /// A put to distinct key `key` is about to be sent.
    fn put_sent(&self, key: usize) {
        self.issue(OpKind::Put, 1);
        let watchers = self.plan.watchers_of_key[key];
        self.in_flight_events.set(self.in_flight_events.get() + watchers);
    }

    fn put_done(
        &self,
        result: Result<PutResponse, tonic::Status>,
        key: usize,
        sent: Instant,
        done: Instant,
        value_bytes: u64,
    ) {
        let watchers = self.plan.watchers_of_key[key];
        self.in_flight_events.set(self.in_flight_events.get() - watchers);
        let mut rec = self.recorder.borrow_mut();
        match result {
            Ok(response) => {
                if let (Events::Acked { acks, .. }, Some(header)) =
                    (&self.plan.events, response.header)
                {
                    acks.publish(header.revision, self.plan.since_base(done));
                }
                rec.record_ok(OpKind::Put, sent, sent, done);
                rec.record_payload(OpKind::Put, 1, value_bytes);
                self.count(|t| {
                    t.puts += 1;
                    t.expected += watchers;
                });
            }
            Err(status) => {
                rec.record_error(OpKind::Put, code(&status), done);
                rec.record_error_message(OpKind::Put, code(&status), status.message());
                if outcome_unknown(&status) {
                    self.count(|t| {
                        t.uncertain_puts += 1;
                        t.uncertain_events += watchers;
                    });
                }
            }
        }
        self.last.set(done);
    }

    /// Hands back the recorder and counts; requests issued and never completed (abandoned
    /// at a stop) are counted as cancelled, and abandoned puts as of unknown outcome.
    fn finish(&self) -> Outcome {
        let plan = &self.plan;
        let mut recorder = self.recorder.replace(Recorder::new(&[], plan.start, plan.interval));
        let last = self.last.get();
        for kind in [OpKind::WatchCreate, OpKind::Put, OpKind::Range] {
            let abandoned =
                self.issued[kind.index()].get().saturating_sub(recorder.requests_of(kind));
            recorder.record_errors(kind, ErrorCode::Cancelled, abandoned, last);
            if kind == OpKind::Put {
                // Sent, perhaps applied, and their events perhaps seen.
                self.count(|t| {
                    t.uncertain_puts += abandoned;
                    t.uncertain_events += self.in_flight_events.get();
                });
            }
        }
        Outcome { recorder, tally: self.tally.get(), last }
    }
}

/// The first [`STAMP_LEN`] bytes of a value this run put (of `len` bytes), as nanoseconds.
fn stamp_of(value: &[u8], len: usize) -> Option<u64> {
    if value.len() != len {
        return None;
    }
    value.first_chunk::<STAMP_LEN>().map(|b| u64::from_le_bytes(*b))
}

/// Whether a put that failed with `status` may have been applied all the same: the error
/// says that the client or etcd stopped waiting (etcd's "request timed out" under
/// overload, a deadline, a cancellation, a lost connection), not that the put was refused.
/// "too many requests" is etcd refusing a request before proposing it (etcd 3.4 sends it
/// as `Unknown`), so that put was not applied, whatever the code.
fn outcome_unknown(status: &tonic::Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown
    ) && !status.message().contains("too many requests")
}

fn code(status: &tonic::Status) -> ErrorCode {
    ErrorCode::from_grpc(status.code() as i32)
}

fn code_of(error: etcd_client::Error) -> ErrorCode {
    code(&status(error))
}

/// One worker's run: runs on its thread, with its connections.
async fn work(
    index: usize,
    plan: Arc<Plan>,
    conns: Rc<[Conn]>,
    mut ctl: watch::Receiver<Phase>,
    status: watch::Sender<Status>,
) -> Outcome {
    let local = Rc::new(Local::new(plan));
    let plan = Arc::clone(&local.plan);
    let status = Rc::new(status);
    let publisher = tokio::task::spawn_local(publish(Rc::clone(&local), Rc::clone(&status)));

    let mut streams = JoinSet::new();
    let mut mine = 0;
    for s in 0..plan.streams {
        let (worker, conn) = plan.layout.place(s);
        if worker == index && !plan.stream_watchers(s).is_empty() {
            mine += 1;
            streams.spawn_local(stream(Rc::clone(&local), conns[conn].clone(), s));
        }
    }
    let mut getters = JoinSet::new();
    if plan.get {
        let (worker, conn) = plan.layout.place(0);
        if worker == index {
            getters.spawn_local(getter(Rc::clone(&local), conns[conn].kv.clone(), ctl.clone()));
        }
    }
    let mut putters = JoinSet::new();

    let created = async {
        while local.ready.get() < mine {
            local.ready_changed.notified().await;
        }
    };
    let finished = tokio::select! {
        () = created => false,
        () = finish(&mut ctl) => true,
    };
    if !finished {
        status.send_modify(|s| s.ready = true);
        let phase = match ctl.wait_for(|p| *p != Phase::Create).await {
            Ok(p) => *p,
            Err(_) => Phase::Finish,
        };
        if let (Phase::Put(put_start), Some(puts)) = (phase, &plan.puts) {
            for p in 0..puts.putters.min(puts.total) {
                let (worker, conn) = plan.layout.place(p);
                if worker == index {
                    let kv = conns[conn].kv.clone();
                    putters.spawn_local(putter(Rc::clone(&local), kv, p, put_start, ctl.clone()));
                }
            }
        }
        let puts_done = async { while putters.join_next().await.is_some() {} };
        let finished = tokio::select! {
            () = puts_done => false,
            () = finish(&mut ctl) => true,
        };
        if !finished {
            let expected = local.tally.get().expected;
            status.send_modify(|s| {
                s.puts_done = true;
                s.expected = expected;
            });
            finish(&mut ctl).await;
        }
    }

    streams.abort_all();
    while streams.join_next().await.is_some() {}
    // Putters and the getter stop after the request in flight; give it the stop grace.
    let settle = async {
        while putters.join_next().await.is_some() {}
        while getters.join_next().await.is_some() {}
    };
    if tokio::time::timeout(STOP_GRACE, settle).await.is_err() {
        putters.abort_all();
        getters.abort_all();
        while putters.join_next().await.is_some() {}
        while getters.join_next().await.is_some() {}
    }
    publisher.abort();
    let _ = publisher.await;
    local.finish()
}

async fn finish(ctl: &mut watch::Receiver<Phase>) {
    let _ = ctl.wait_for(|p| *p == Phase::Finish).await;
}

fn finishing(ctl: &watch::Receiver<Phase>) -> bool {
    ctl.has_changed().is_err() || *ctl.borrow() == Phase::Finish
}

/// Publishes the worker's event count for the calling task.
async fn publish(local: Rc<Local>, status: Rc<watch::Sender<Status>>) {
    let mut tick = tokio::time::interval(PUBLISH_EVERY);
    loop {
        tick.tick().await;
        let seen = local.tally.get().seen();
        status.send_if_modified(|s| {
            let changed = s.seen != seen;
            s.seen = seen;
            changed
        });
    }
}

/// Watch stream `s`: creates its watchers, pipelined, then receives their events until the
/// task is aborted.
async fn stream(local: Rc<Local>, conn: Conn, s: u64) {
    let plan = Arc::clone(&local.plan);
    let watchers = plan.stream_watchers(s);
    let first = watchers.start;
    let n = (watchers.end - watchers.start) as usize;
    local.issue(OpKind::WatchCreate, n as u64);
    let sent = vec![Cell::new(plan.start); n];
    let mut client = conn.client.watch_client().max_decoding_message_size(MAX_RESPONSE_BYTES);
    let key = |w: u64| plan.keys[plan.key_of(w)].to_vec();
    sent[0].set(Instant::now());
    let stream = match client.watch(key(first), Some(plan.options.clone())).await {
        Ok(stream) => stream,
        Err(e) => {
            local.creates_failed(n, code_of(e), Instant::now());
            local.stream_ready();
            return;
        }
    };
    let (mut requests, mut responses) = stream.split();
    let send = async {
        for (k, sent) in sent.iter().enumerate().skip(1) {
            sent.set(Instant::now());
            let options = Some(plan.options.clone());
            if requests.watch(key(first + k as u64), options).await.is_err() {
                // The stream has failed; the receiving side learns why.
                break;
            }
        }
        // Kept until the stream ends: dropping it would half-close the stream.
        requests
    };
    let (_requests, ()) = tokio::join!(send, receive(&local, &mut responses, &sent));
}

/// Receives a stream's responses: the `created` answers in order, then events.
async fn receive(local: &Local, responses: &mut WatchResponseStream, sent: &[Cell<Instant>]) {
    let n = sent.len();
    let mut created = 0;
    let mut ids: HashMap<i64, usize> = HashMap::with_capacity(n);
    let mut watchers = vec![Watcher::default(); n];
    loop {
        let message = responses.message().await;
        let now = Instant::now();
        let response = match message {
            Ok(Some(response)) => response,
            ended => {
                let code = match ended {
                    Err(e) => code_of(e),
                    _ => ErrorCode::Unavailable,
                };
                if created < n {
                    local.creates_failed(n - created, code, now);
                    local.stream_ready();
                } else {
                    tracing::warn!(
                        code = code.name(),
                        "a watch stream ended during the run; its watchers' later events are missing"
                    );
                }
                return;
            }
        };
        if response.created() {
            if created < n {
                let ok = !response.canceled();
                local.created(sent[created].get(), now, ok);
                if ok {
                    ids.insert(response.watch_id(), created);
                }
                created += 1;
                if created == n {
                    local.stream_ready();
                }
            }
            continue;
        }
        if response.canceled() {
            tracing::warn!(
                watch_id = response.watch_id(),
                reason = response.cancel_reason(),
                compact_revision = response.compact_revision(),
                "etcd cancelled a watcher; its later events are missing"
            );
            continue;
        }
        let events = response.events();
        if events.is_empty() {
            continue;
        }
        if let Some(&k) = ids.get(&response.watch_id()) {
            local.on_events(&mut watchers[k], events, now);
        }
    }
}

/// Putter `first` sends puts `first`, `first + putters`, ... until `put-total`, each no
/// earlier than its slot when a rate is set.
async fn putter(
    local: Rc<Local>,
    mut kv: Kv,
    first: u64,
    put_start: Instant,
    mut ctl: watch::Receiver<Phase>,
) {
    let plan = Arc::clone(&local.plan);
    let Some(puts) = &plan.puts else { return };
    let keys: Vec<Key> = plan.keys.iter().map(|k| Key::new(k)).collect();
    let mut stamp = Stamp::new(puts.filler.clone());
    let mut i = first;
    while i < puts.total && !finishing(&ctl) {
        if puts.rate > 0 {
            let slot = put_start + Duration::from_secs_f64(i as f64 / puts.rate as f64);
            tokio::select! {
                () = tokio::time::sleep_until(slot.into()) => {}
                () = finish(&mut ctl) => break,
            }
        }
        let key = plan.key_of(i);
        local.put_sent(key);
        let sent = Instant::now();
        let value = stamp.value(plan.since_base(sent));
        let value_bytes = value.len() as u64;
        let result = kv.put(PutRequest { key: keys[key].clone(), value }).await;
        let done = Instant::now();
        local.put_done(result, key, sent, done, value_bytes);
        i += puts.putters;
    }
}

/// watch-get's client: serializable gets back to back until the run finishes.
async fn getter(local: Rc<Local>, mut kv: Kv, ctl: watch::Receiver<Phase>) {
    let request = RangeRequest {
        key: Bytes::from_static(WATCH_GET_RANGE_KEY),
        serializable: true,
        ..RangeRequest::default()
    };
    while !finishing(&ctl) {
        local.issue(OpKind::Range, 1);
        let sent = Instant::now();
        let result = kv.range(request.clone()).await;
        let done = Instant::now();
        let mut rec = local.recorder.borrow_mut();
        match result {
            Ok(response) => {
                rec.record_ok(OpKind::Range, sent, sent, done);
                let bytes = response.kvs.iter().map(|kv| kv.value.len() as u64).sum();
                rec.record_payload(OpKind::Range, response.kvs.len() as u64, bytes);
            }
            Err(status) => {
                rec.record_error(OpKind::Range, code(&status), done);
                rec.record_error_message(OpKind::Range, code(&status), status.message());
            }
        }
        drop(rec);
        local.last.set(done);
    }
}

/// Makes put values that start with their send time, split off one buffer so that a put
/// allocates nothing of its own (one allocation per [`STAMP_ARENA`] bytes).
struct Stamp {
    arena: BytesMut,
    filler: Bytes,
}

impl Stamp {
    fn new(filler: Bytes) -> Self {
        debug_assert!(filler.len() >= STAMP_LEN);
        Self { arena: BytesMut::new(), filler }
    }

    fn value(&mut self, nanos: u64) -> Bytes {
        let len = self.filler.len();
        if self.arena.capacity() < len {
            self.arena.reserve(len.max(STAMP_ARENA));
        }
        self.arena.put_u64_le(nanos);
        self.arena.extend_from_slice(&self.filler[STAMP_LEN..]);
        self.arena.split().freeze()
    }
}

/// watch-latency's acknowledgements, by revision: the putter publishes each put's revision
/// and acknowledgement time, watchers on every thread look them up per event. A slot is a
/// sequence lock (one writer, the putter; readers retry while it writes), so no lock is
/// taken and nothing allocated.
struct Acks {
    slots: Box<[AckSlot]>,
    mask: u64,
}

#[derive(Default)]
struct AckSlot {
    /// Odd while being written.
    seq: AtomicU64,
    revision: AtomicI64,
    acked_ns: AtomicU64,
}

/// What the table knows of a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ack {
    /// Acknowledged at this many nanoseconds after the base instant.
    At(u64),
    /// Not acknowledged yet.
    Pending,
    /// Acknowledged so long ago that its slot was reused.
    Forgotten,
}

impl Acks {
    fn new(puts: u64) -> Self {
        let n = puts.clamp(1, ACK_SLOTS).next_power_of_two();
        Self { slots: (0..n).map(|_| AckSlot::default()).collect(), mask: n - 1 }
    }

    fn slot(&self, revision: i64) -> &AckSlot {
        &self.slots[(revision as u64 & self.mask) as usize]
    }

    /// Publishes an acknowledgement. Only one thread may publish.
    fn publish(&self, revision: i64, acked_ns: u64) {
        let slot = self.slot(revision);
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        slot.revision.store(revision, Ordering::Relaxed);
        slot.acked_ns.store(acked_ns, Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    fn lookup(&self, revision: i64) -> Ack {
        let slot = self.slot(revision);
        for _ in 0..1000 {
            let before = slot.seq.load(Ordering::Acquire);
            if before % 2 == 0 {
                let r = slot.revision.load(Ordering::Relaxed);
                let acked_ns = slot.acked_ns.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if slot.seq.load(Ordering::Relaxed) == before {
                    return match r.cmp(&revision) {
                        std::cmp::Ordering::Equal => Ack::At(acked_ns),
                        std::cmp::Ordering::Less => Ack::Pending,
                        std::cmp::Ordering::Greater => Ack::Forgotten,
                    };
                }
            }
            std::hint::spin_loop();
        }
        // Being written right now: the acknowledgement is not out yet.
        Ack::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_grouped_and_their_watchers_counted() {
        let keys = ["a", "b", "a", "c"].map(|k| k.as_bytes().to_vec());
        let (distinct, watched, of_key) = group_keys(keys.into_iter(), 10);
        assert_eq!(distinct, [&b"a"[..], b"b", b"c"]);
        assert_eq!(watched, [0, 1, 0, 2]);
        // Watchers 0..10 on watched keys w % 4: 3, 3, 2, 2 of them.
        assert_eq!(of_key, [3 + 2, 3, 2]);
        assert_eq!(of_key.iter().sum::<u64>(), 10);
    }

    #[test]
    fn watchers_split_evenly_over_streams() {
        let layout = Layout { conns: 3, workers: 2 };
        let scenario = Scenario::from_toml_str("[op.watch-get]\nwatchers = 10\nstreams = 4\n")
            .expect("valid scenario");
        let Some(Operation::WatchGet(op)) = &scenario.op else { unreachable!() };
        let plan = Plan::get(op, &scenario, (5, 12), layout);
        let ranges: Vec<_> = (0..4).map(|s| plan.stream_watchers(s)).collect();
        assert_eq!(ranges, [0..3, 3..6, 6..8, 8..10]);
        assert_eq!(plan.expected, Some(80));
        // Connection c on worker c % 2 at index c / 2; streams wrap over the connections.
        assert_eq!(layout.place(0), (0, 0));
        assert_eq!(layout.place(1), (1, 0));
        assert_eq!(layout.place(2), (0, 1));
        assert_eq!(layout.place(3), (0, 0));
    }

    /// The plan of a watch scenario on one connection and one worker.
    fn one_worker_plan(toml: &str) -> Plan {
        let scenario = Scenario::from_toml_str(toml).expect("valid scenario");
        let Some(Operation::Watch(op)) = &scenario.op else { unreachable!() };
        Plan::watch(op, &scenario, 1, Layout { conns: 1, workers: 1 })
    }

    #[test]
    fn watch_keys_follow_the_key_space() {
        let plan = one_worker_plan(
            "[op.watch]\nstreams = 2\nwatch-per-stream = 5\nwatched-key-total = 4\n\
             key-space-size = 2\nsequential-keys = true\n",
        );
        // Watched keys 0..4 are key indices 0, 1, 0, 1: two distinct keys, 5 watchers each.
        assert_eq!(plan.keys.len(), 2);
        assert_eq!(plan.watched, [0, 1, 0, 1]);
        assert_eq!(plan.watchers_of_key, [5, 5]);
        assert!(plan.keys.iter().all(|k| k.starts_with(b"watch/") && k.len() == 6 + 32));
    }

    #[test]
    fn stamps_carry_the_send_time_and_nothing_else_changes() {
        let filler = Bytes::from(vec![7u8; 32]);
        let mut stamp = Stamp::new(filler);
        let a = stamp.value(42);
        let b = stamp.value(u64::MAX - 1);
        assert_eq!(a.len(), 32);
        assert_eq!(stamp_of(&a, 32), Some(42));
        assert_eq!(stamp_of(&b, 32), Some(u64::MAX - 1));
        assert!(a[STAMP_LEN..].iter().all(|&x| x == 7));
        assert_eq!(stamp_of(&a, 16), None, "a value of another length is not this run's");
        let big = Bytes::from(vec![1u8; STAMP_ARENA * 2]);
        assert_eq!(Stamp::new(big).value(3).len(), STAMP_ARENA * 2);
    }

    #[test]
    fn puts_of_unknown_outcome_are_told_from_refused_ones() {
        use tonic::{Code, Status};
        let unknown = [
            Status::unavailable("etcdserver: request timed out"),
            Status::unavailable("error reading a body from connection: connection reset"),
            Status::deadline_exceeded("Timeout expired"),
            Status::cancelled("operation was canceled"),
            Status::unknown("h2 protocol error: broken pipe"),
        ];
        for status in &unknown {
            assert!(outcome_unknown(status), "{status:?}");
        }
        let refused = [
            // etcd's preflight refusal, before proposing, as etcd 3.4 and later send it.
            Status::unknown("etcdserver: too many requests"),
            Status::resource_exhausted("etcdserver: too many requests"),
            Status::new(Code::Unavailable, "etcdserver: too many requests"),
            Status::invalid_argument("etcdserver: request is too large"),
            Status::resource_exhausted("etcdserver: mvcc: database space exceeded"),
            Status::failed_precondition("etcdserver: not capable"),
            Status::permission_denied("etcdserver: permission denied"),
        ];
        for status in &refused {
            assert!(!outcome_unknown(status), "{status:?}");
        }
    }

    #[test]
    fn puts_of_unknown_outcome_are_counted_with_the_watchers_of_their_keys() {
        let local = Local::new(Arc::new(one_worker_plan(
            "[op.watch]\nstreams = 2\nwatch-per-stream = 3\nwatched-key-total = 2\n\
             key-space-size = 2\nsequential-keys = true\n",
        )));
        assert_eq!(local.plan.watchers_of_key, [3, 3]);
        let put = |key, result| {
            local.put_sent(key);
            let t = Instant::now();
            local.put_done(result, key, t, t, 8);
        };
        put(0, Ok(PutResponse::default()));
        put(1, Err(tonic::Status::unavailable("etcdserver: request timed out")));
        put(0, Err(tonic::Status::unknown("etcdserver: too many requests")));
        // Still in flight when the run stops.
        local.put_sent(1);

        let Outcome { recorder, tally, .. } = local.finish();
        assert_eq!((tally.puts, tally.expected), (1, 3), "{tally:?}");
        assert_eq!((tally.uncertain_puts, tally.uncertain_events), (2, 6), "{tally:?}");
        assert_eq!(recorder.requests_of(OpKind::Put), 4);
    }

    #[test]
    fn acks_are_found_by_revision() {
        let acks = Acks::new(4);
        assert_eq!(acks.slots.len(), 4);
        assert_eq!(acks.lookup(10), Ack::Pending);
        acks.publish(10, 1_000);
        assert_eq!(acks.lookup(10), Ack::At(1_000));
        assert_eq!(acks.lookup(14), Ack::Pending, "same slot, later revision");
        acks.publish(14, 2_000);
        assert_eq!(acks.lookup(10), Ack::Forgotten);
        assert_eq!(acks.lookup(14), Ack::At(2_000));
        assert_eq!(Acks::new(u64::MAX).slots.len() as u64, ACK_SLOTS);
    }

    #[test]
    fn acks_are_consistent_across_threads() {
        let acks = Arc::new(Acks::new(64));
        let writer = {
            let acks = Arc::clone(&acks);
            std::thread::spawn(move || {
                for rev in 1..20_000i64 {
                    acks.publish(rev, rev as u64 * 3);
                }
            })
        };
        for rev in (1..20_000i64).step_by(7) {
            if let Ack::At(ns) = acks.lookup(rev) {
                assert_eq!(ns, rev as u64 * 3);
            }
        }
        writer.join().expect("writer");
        assert_eq!(acks.lookup(19_999), Ack::At(59_997));
    }
}
