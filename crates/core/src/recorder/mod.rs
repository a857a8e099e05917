//! Per-worker measurement: HDR histograms of latency and service time per operation kind,
//! error counts by code with one sample message per code, and a time series of intervals.
//!
//! A worker owns one [`Recorder`]; recording never locks, allocates or formats, except to
//! keep the first message of each error code. Recorders are merged once at the end of a run
//! ([`Recorder::merge`]) and turned into a report.
//!
//! Values are microseconds, 3 significant digits, from 1 us to 1 hour; a value past the
//! range is clamped to it and counted in `clamped`.

mod interval;
pub mod kubernetes;
mod member;
mod op;
mod pacing;
mod step;
mod timeline;

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::invariant::{Invariant, InvariantReport};
use crate::op::{ErrorCode, OpKind};

pub use interval::IntervalSample;
pub(crate) use interval::IntervalSum;
use kubernetes::Requests;
pub use member::{MAX_MEMBERS, MemberRecord};
pub(crate) use op::add_counts;
use op::sample_message;
pub use op::{ERROR_MESSAGE_MAX_CHARS, OpRecord};
pub use pacing::{LATE_AFTER, Pacing};
pub use step::StepRecord;
pub use timeline::Timeline;

/// Lowest trackable value, in microseconds.
pub const LOWEST_US: u64 = 1;
/// Highest trackable value, in microseconds (one hour).
pub const HIGHEST_US: u64 = 3_600_000_000;
/// Significant digits of the run-wide histograms.
pub const SIGFIG: u8 = 3;
/// Significant digits of the per-interval histograms: enough for a time series, and small
/// enough that an hour of one-second intervals stays a few megabytes.
pub const INTERVAL_SIGFIG: u8 = 2;

/// A histogram with the project's unit, range and precision.
#[must_use]
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, SIGFIG).expect("constant bounds are valid")
}

/// Records the outcome of every request of one worker.
#[derive(Debug, Clone)]
pub struct Recorder {
    ops: Vec<Option<OpRecord>>,
    members: Vec<MemberRecord>,
    pacing: Option<Box<Pacing>>,
    /// One record per client step, when the run has steps ([`Recorder::with_steps`]).
    steps: Vec<StepRecord>,
    start: Instant,
    /// The interval length now: `base` doubled `shift` times.
    interval: Duration,
    base: Duration,
    shift: u32,
    /// Whether the interval doubles as the run goes (see [`Recorder::adaptive`]).
    adaptive: bool,
    /// Violations of each invariant checked while the run went, once any was checked
    /// ([`Recorder::record_checks`]).
    invariants: Option<[u64; Invariant::COUNT]>,
    /// The apiserver's requests by resource and verb ([`kubernetes`]).
    requests: Requests,
}

/// The most intervals an adaptive recorder keeps before it doubles their length
/// ([`Recorder::adaptive`]): a time series of 100 to 200 points however long the run.
pub const MAX_INTERVALS: u64 = 200;

/// Clamps a duration into the histogram range; returns the value and whether it was clamped.
#[inline]
fn to_us(d: Duration) -> (u64, bool) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    if us < LOWEST_US {
        (LOWEST_US, false)
    } else if us > HIGHEST_US {
        (HIGHEST_US, true)
    } else {
        (us, false)
    }
}

impl Recorder {
    /// A recorder whose intervals are counted from `start`, `interval` long, with histograms
    /// allocated up front for `kinds` (others are allocated when first seen).
    ///
    /// # Panics
    /// When `interval` is zero.
    #[must_use]
    pub fn new(kinds: &[OpKind], start: Instant, interval: Duration) -> Self {
        assert!(!interval.is_zero(), "interval must be more than zero");
        let mut ops: Vec<Option<OpRecord>> = (0..OpKind::COUNT).map(|_| None).collect();
        for k in kinds {
            ops[k.index()] = Some(OpRecord::new());
        }
        Self {
            ops,
            members: Vec::new(),
            pacing: None,
            steps: Vec::new(),
            start,
            interval,
            base: interval,
            shift: 0,
            adaptive: false,
            invariants: None,
            requests: Requests::default(),
        }
    }

    /// Makes the interval double, finished intervals merged in pairs, whenever
    /// [`Recorder::close_intervals`] finds [`MAX_INTERVALS`] of them passed: for a run whose
    /// length is not known in advance, a time series of 100 to 200 points.
    #[must_use]
    pub fn adaptive(mut self) -> Self {
        self.adaptive = true;
        self
    }

    /// Keeps a record of each of `steps` client steps besides the run's
    /// ([`Recorder::record_step_ok`]): requests, errors, latency, the clients that sent.
    #[must_use]
    pub fn with_steps(mut self, steps: usize) -> Self {
        self.steps = (0..steps).map(|_| StepRecord::new()).collect();
        self
    }

    /// Forgets everything recorded and starts counting intervals from `start` (after warm-up).
    pub fn reset(&mut self, start: Instant) {
        for op in self.ops.iter_mut().flatten() {
            *op = OpRecord::new();
        }
        for step in &mut self.steps {
            *step = StepRecord::new();
        }
        self.members.clear();
        self.pacing = None;
        if let Some(counts) = &mut self.invariants {
            *counts = [0; Invariant::COUNT];
        }
        self.requests = Requests::default();
        self.start = start;
        self.interval = self.base;
        self.shift = 0;
    }

    /// The moment intervals are counted from.
    #[must_use]
    pub fn start(&self) -> Instant {
        self.start
    }

    #[inline]
    fn op_mut(&mut self, kind: OpKind) -> &mut OpRecord {
        self.ops[kind.index()].get_or_insert_with(OpRecord::new)
    }

    #[inline]
    fn interval_index(&self, at: Instant) -> u64 {
        self.since_start(at).0
    }

    /// The interval `at` falls in, and the time since the start.
    #[inline]
    fn since_start(&self, at: Instant) -> (u64, Duration) {
        let since = at.saturating_duration_since(self.start);
        ((since.as_nanos() / self.interval.as_nanos()) as u64, since)
    }

    /// Records a successful request: intended start (the schedule's), actual send and
    /// completion.
    #[inline]
    pub fn record_ok(&mut self, kind: OpKind, intended: Instant, sent: Instant, done: Instant) {
        let (index, since) = self.since_start(done);
        let op = self.op_mut(kind);
        op.successes.mark(since);
        let (lat, c1) = to_us(done.saturating_duration_since(intended));
        let (svc, c2) = to_us(done.saturating_duration_since(sent));
        op.latency.record(lat).expect("value within bounds");
        op.service.record(svc).expect("value within bounds");
        op.clamped += u64::from(c1) + u64::from(c2);
        op.ok += 1;
        op.roll_to(index);
        op.current.record(lat).expect("value within bounds");
        op.current_ok += 1;
    }

    /// Attributes a successful request to the member that served it (`member` from the
    /// response header; 0 means unknown and is not recorded, and so are members beyond the
    /// first [`MAX_MEMBERS`]).
    #[inline]
    pub fn record_member(&mut self, member: u64, intended: Instant, done: Instant) {
        if member == 0 {
            return;
        }
        let (us, _) = to_us(done.saturating_duration_since(intended));
        let m = match self.members.iter().position(|m| m.id == member) {
            Some(i) => &mut self.members[i],
            // Member ids come from the server: a broken one must not make a histogram per
            // response.
            None if self.members.len() >= MAX_MEMBERS => return,
            None => {
                self.members.push(MemberRecord { id: member, ok: 0, latency: new_histogram() });
                self.members.last_mut().expect("just pushed")
            }
        };
        m.ok += 1;
        m.latency.record(us).expect("value within bounds");
    }

    /// Records how a paced request started: `intended` by the schedule, actually `sent`,
    /// and, when the client slept until its slot, how late it woke (`timer`).
    #[inline]
    pub fn record_start(&mut self, intended: Instant, sent: Instant, timer: Option<Duration>) {
        let p = self.pacing.get_or_insert_with(|| Box::new(Pacing::new()));
        let late = sent.saturating_duration_since(intended);
        p.paced += 1;
        p.span =
            Some(p.span.map_or((sent, sent), |(first, last)| (first.min(sent), last.max(sent))));
        if late > LATE_AFTER {
            p.late += 1;
        }
        let (us, _) = to_us(late);
        p.lateness.record(us).expect("value within bounds");
        if let Some(t) = timer {
            let (us, _) = to_us(t);
            p.timer.record(us).expect("value within bounds");
        }
    }

    /// How paced requests kept to their schedule, if any were paced.
    #[must_use]
    pub fn pacing(&self) -> Option<&Pacing> {
        self.pacing.as_deref()
    }

    /// The members that served requests, in the order first seen.
    #[must_use]
    pub fn members(&self) -> &[MemberRecord] {
        &self.members
    }

    /// Adds the keys and value bytes a successful request wrote or read.
    #[inline]
    pub fn record_payload(&mut self, kind: OpKind, keys: u64, value_bytes: u64) {
        let op = self.op_mut(kind);
        op.keys += keys;
        op.value_bytes += value_bytes;
    }

    /// Adds the retries a successful request needed (STM conflicts).
    #[inline]
    pub fn record_retries(&mut self, kind: OpKind, retries: u64) {
        self.op_mut(kind).retries += retries;
    }

    /// Adds the failed compares and the pages of a successful request.
    #[inline]
    pub fn record_conflicts_and_pages(&mut self, kind: OpKind, conflicts: u64, pages: u64) {
        let op = self.op_mut(kind);
        op.conflicts += conflicts;
        op.pages += pages;
    }

    /// Adds `violations` of each invariant ([`crate::invariant`]), indexed by
    /// [`Invariant::index`]: the recorder then reports its invariants as checked.
    pub fn record_checks(&mut self, violations: &[u64; Invariant::COUNT]) {
        let counts = self.invariants.get_or_insert([0; Invariant::COUNT]);
        for (a, b) in counts.iter_mut().zip(violations) {
            *a += b;
        }
    }

    /// The invariants checked while the run went, if any were.
    #[must_use]
    pub fn invariants(&self) -> Option<InvariantReport> {
        self.invariants.as_ref().map(InvariantReport::from_counts)
    }

    /// Records a success of the apiserver's request kind `slot` ([`kubernetes`]), besides
    /// [`Recorder::record_ok`]: its latency, the pages it read (0: not a list), its failed
    /// compares and retries.
    #[inline]
    pub fn record_request_ok(
        &mut self,
        slot: usize,
        intended: Instant,
        done: Instant,
        pages: u64,
        conflicts: u64,
        retries: u64,
    ) {
        let (us, _) = to_us(done.saturating_duration_since(intended));
        self.requests.ok(slot, us, pages, conflicts, retries);
    }

    /// Records the pages of a successful list of the apiserver's request kind `slot`, each
    /// an API call ([`kubernetes::PageCalls`]): `pages`, `over_limit` of them slower than
    /// the list SLO, the slowest `slowest_us`, and the `keys` etcd sent the list.
    #[inline]
    pub fn record_page_calls(
        &mut self,
        slot: usize,
        pages: u64,
        over_limit: u64,
        slowest_us: u64,
        keys: u64,
    ) {
        self.requests.page_calls(slot, pages, over_limit, slowest_us, keys);
    }

    /// Records a failure of the apiserver's request kind `slot`, besides
    /// [`Recorder::record_error`]; `compacted` when etcd answered that the revision it asked
    /// for was compacted.
    #[inline]
    pub fn record_request_error(&mut self, slot: usize, code: ErrorCode, compacted: bool) {
        self.requests.error(slot, code, compacted);
    }

    /// Records that `slot` renewed object `object` of `objects` (a node lease) at `done`.
    #[inline]
    pub fn record_renewal(&mut self, slot: usize, object: u64, objects: u64, done: Instant) {
        let since = done.saturating_duration_since(self.start);
        self.requests.renewed(slot, object, objects, since);
    }

    /// Records what a watch cache recorded, as the (resource, `watch`) row `slot`
    /// ([`kubernetes::WatchRecord`]). Once per cache, at the end of the run.
    pub fn record_watch(&mut self, slot: usize, watch: &kubernetes::WatchRecord) {
        self.requests.watched(slot, watch);
    }

    /// Ends the renewals at `end`, the worker's last answer: an object's time since its
    /// last renewal counts as a gap too. Call it once, before merging.
    pub fn close_renewals(&mut self, end: Instant) {
        self.requests.close(self.start, end);
    }

    /// The apiserver's requests by resource and verb, by slot.
    #[must_use]
    pub fn requests_by_slot(&self) -> &Requests {
        &self.requests
    }

    /// Records a failed request; it counts by code and in its interval, never in latency.
    #[inline]
    pub fn record_error(&mut self, kind: OpKind, code: ErrorCode, done: Instant) {
        let index = self.interval_index(done);
        let op = self.op_mut(kind);
        op.errors[code.index()] += 1;
        op.roll_to(index);
        op.current_errors += 1;
    }

    /// Keeps `message` as the sample of why requests of `kind` failed with `code`, unless
    /// one is kept already (the first wins; see [`OpRecord::error_messages`] for how it is
    /// cut). Call it beside [`Recorder::record_error`] for every failure that has a message:
    /// once a message is kept this is an array check, with no allocation. An empty message
    /// is not kept.
    #[inline]
    pub fn record_error_message(&mut self, kind: OpKind, code: ErrorCode, message: &str) {
        let slot = &mut self.op_mut(kind).error_messages[code.index()];
        if slot.is_none() {
            *slot = sample_message(message);
        }
    }

    /// Marks the start of client step `step`, at the same instant on every worker.
    pub fn start_step(&mut self, step: usize, at: Instant) {
        if let Some(s) = self.steps.get_mut(step) {
            s.started = Some(at);
        }
    }

    /// Records a successful request in the client step that started it, besides
    /// [`Recorder::record_ok`] (a recorder without steps ignores it).
    #[inline]
    pub fn record_step_ok(&mut self, step: usize, intended: Instant, done: Instant) {
        if let Some(s) = self.steps.get_mut(step) {
            s.ok(intended, done);
        }
    }

    /// Records `n` failed requests in the client step that started them, besides their
    /// codes ([`Recorder::record_error`]).
    #[inline]
    pub fn record_step_errors(&mut self, step: usize, n: u64, done: Instant) {
        if let Some(s) = self.steps.get_mut(step) {
            s.errors(n, done);
        }
    }

    /// Counts a logical client that sends its first request of client step `step`.
    #[inline]
    pub fn record_step_client(&mut self, step: usize) {
        if let Some(s) = self.steps.get_mut(step) {
            s.clients += 1;
        }
    }

    /// What each client step recorded, in order (empty without steps).
    #[must_use]
    pub fn steps(&self) -> &[StepRecord] {
        &self.steps
    }

    /// Records a request abandoned unanswered at a stop or the run's end, at `at`: a
    /// failure as `Cancelled` ([`Recorder::record_error`]), and how long it had been out
    /// from its `intended` start ([`OpRecord::abandoned`]). Its latency is unknown, only
    /// that it was longer than that, so it is in no latency histogram.
    #[cold]
    pub fn record_abandoned(&mut self, kind: OpKind, intended: Instant, at: Instant) {
        self.record_error(kind, ErrorCode::Cancelled, at);
        let (out, clamped) = to_us(at.saturating_duration_since(intended));
        let op = self.op_mut(kind);
        op.clamped += u64::from(clamped);
        op.abandoned
            .get_or_insert_with(|| Box::new(new_histogram()))
            .record(out)
            .expect("value within bounds");
    }

    /// Records `n` failures of one code at once (requests abandoned at a hard stop).
    pub fn record_errors(&mut self, kind: OpKind, code: ErrorCode, n: u64, done: Instant) {
        if n == 0 {
            return;
        }
        let index = self.interval_index(done);
        let op = self.op_mut(kind);
        op.errors[code.index()] += n;
        op.roll_to(index);
        op.current_errors += n;
    }

    /// Requests recorded so far, ok and failed, all kinds; a streamed range's first message
    /// is part of its request (`range`), not one more.
    #[must_use]
    pub fn requests(&self) -> u64 {
        OpKind::ALL
            .into_iter()
            .filter(|&k| k != OpKind::RangeFirst)
            .filter_map(|k| self.ops[k.index()].as_ref())
            .map(|o| o.ok + o.errors_total())
            .sum()
    }

    /// Failed requests recorded so far, all kinds.
    #[must_use]
    pub fn errors(&self) -> u64 {
        self.ops.iter().flatten().map(OpRecord::errors_total).sum()
    }

    /// The highest p99 latency of the interval in progress over every kind, us (0 when it
    /// has no request yet): for live progress.
    #[must_use]
    pub fn current_p99_us(&self) -> u64 {
        self.ops
            .iter()
            .flatten()
            .filter(|o| !o.current.is_empty())
            .map(|o| o.current.value_at_quantile(0.99))
            .max()
            .unwrap_or(0)
    }

    /// Every kind recorded so far, with its record: for a live view of the run (latency
    /// of the successes so far, failures by code).
    pub fn records(&self) -> impl Iterator<Item = (OpKind, &OpRecord)> {
        OpKind::ALL.iter().filter_map(|&k| self.ops[k.index()].as_ref().map(|r| (k, r)))
    }

    /// Requests of one kind recorded so far, ok and failed.
    #[must_use]
    pub fn requests_of(&self, kind: OpKind) -> u64 {
        self.ops[kind.index()].as_ref().map_or(0, |o| o.ok + o.errors_total())
    }

    /// Adds another worker's recorder into this one.
    ///
    /// Both are brought to the longer of their intervals, which must be the same first
    /// interval doubled (recorders of one run).
    pub fn merge(&mut self, mut other: Recorder) {
        debug_assert_eq!(self.base, other.base, "recorders of one run");
        let shift = self.shift.max(other.shift);
        self.coarsen(shift - self.shift);
        other.coarsen(shift - other.shift);
        if let Some(theirs) = &other.pacing {
            self.pacing.get_or_insert_with(|| Box::new(Pacing::new())).merge(theirs);
        }
        if let Some(theirs) = &other.invariants {
            self.record_checks(theirs);
        }
        self.requests.merge(&other.requests);
        if self.steps.len() < other.steps.len() {
            self.steps.resize_with(other.steps.len(), StepRecord::new);
        }
        for (mine, theirs) in self.steps.iter_mut().zip(&other.steps) {
            mine.merge(theirs);
        }
        for theirs in other.members {
            match self.members.iter_mut().find(|m| m.id == theirs.id) {
                Some(m) => {
                    m.ok += theirs.ok;
                    m.latency.add(&theirs.latency).expect("same bounds");
                }
                None => self.members.push(theirs),
            }
        }
        for (mine, theirs) in self.ops.iter_mut().zip(other.ops) {
            if let Some(theirs) = theirs {
                match mine {
                    Some(m) => m.merge(theirs),
                    None => {
                        let mut t = theirs;
                        t.flush_interval();
                        *mine = Some(t);
                    }
                }
            }
        }
    }

    /// The interval length now (an adaptive recorder's grows as the run goes).
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How many times the first interval has doubled: intervals are now `2^shift` first
    /// intervals long.
    #[must_use]
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// Makes intervals `2^by` times longer.
    fn coarsen(&mut self, by: u32) {
        if by == 0 {
            return;
        }
        for op in self.ops.iter_mut().flatten() {
            op.coarsen(by);
        }
        self.shift += by;
        self.interval = self.base * (1 << self.shift);
    }

    /// Finishes every interval before the one `now` falls in (a time with no request ends
    /// its interval too), so that [`Recorder::finished_intervals`] holds them; returns the
    /// index of `now`'s interval. Nothing completed later can fall in a finished interval.
    pub fn close_intervals(&mut self, now: Instant) -> u64 {
        let index = self.interval_index(now);
        for op in self.ops.iter_mut().flatten() {
            op.roll_to(index);
        }
        index
    }

    /// Doubles the interval of an adaptive recorder when [`MAX_INTERVALS`] have passed by
    /// `index` (the interval in progress, from [`Recorder::close_intervals`]), if `index`
    /// is the first of a pair: finished intervals never straddle a longer one. Returns
    /// whether it did.
    pub fn double_if_due(&mut self, index: u64) -> bool {
        let due = self.adaptive && index >= MAX_INTERVALS && index.is_multiple_of(2);
        if due {
            self.coarsen(1);
        }
        due
    }

    /// The finished intervals of every kind, in order of kind then index.
    pub fn finished_intervals(&self) -> impl Iterator<Item = (OpKind, &IntervalSample)> {
        OpKind::ALL
            .into_iter()
            .filter_map(|k| self.ops[k.index()].as_ref().map(|o| (k, o)))
            .flat_map(|(k, o)| o.intervals.iter().map(move |s| (k, s)))
    }

    /// Finishes the recorder: closes the open intervals and returns what was recorded per
    /// kind (kinds with no request are left out).
    #[must_use]
    pub fn finish(mut self) -> Vec<(OpKind, OpRecord)> {
        OpKind::ALL
            .into_iter()
            .filter_map(|k| {
                let mut op = self.ops[k.index()].take()?;
                op.flush_interval();
                (op.ok + op.errors_total() > 0).then_some((k, op))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
