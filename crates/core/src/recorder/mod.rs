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
mod pacing;
mod step;
mod timeline;

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::invariant::{Invariant, InvariantReport};
use crate::op::{ErrorCode, OpKind};

pub use interval::IntervalSample;
pub(crate) use interval::IntervalSum;
use interval::new_interval_histogram;
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

/// Everything recorded for one operation kind.
#[derive(Debug, Clone)]
pub struct OpRecord {
    /// Latency: completion minus intended start, us.
    pub latency: Histogram<u64>,
    /// Service time: completion minus actual send, us.
    pub service: Histogram<u64>,
    /// Successful requests.
    pub ok: u64,
    /// Failed requests by code, indexed by [`ErrorCode::index`].
    pub errors: [u64; ErrorCode::COUNT],
    /// The first message seen per code, indexed by [`ErrorCode::index`]: why requests failed,
    /// as the server said it (`etcdserver: too many requests` behind a count of `Unknown`).
    /// Trimmed, control characters made spaces, at most [`ERROR_MESSAGE_MAX_CHARS`]
    /// characters; `None` until [`Recorder::record_error_message`] gives one.
    pub error_messages: [Option<Box<str>>; ErrorCode::COUNT],
    /// Values outside 1 us .. 1 h that were clamped into it.
    pub clamped: u64,
    /// Keys written or read by the successful requests (a count-only range counts the keys
    /// it counted).
    pub keys: u64,
    /// Value bytes written or read by the successful requests.
    pub value_bytes: u64,
    /// Attempts beyond the first within successful requests (STM conflicts).
    pub retries: u64,
    /// Compares that failed within successful requests (an apiserver update's or delete's
    /// stale revision, each followed by a retry).
    pub conflicts: u64,
    /// Pages read by the successful requests (an apiserver list's).
    pub pages: u64,
    /// Finished intervals.
    pub intervals: Vec<IntervalSample>,
    /// Which milliseconds of measured time saw a success of this kind.
    pub successes: Timeline,
    current: Histogram<u64>,
    current_index: u64,
    current_ok: u64,
    current_errors: u64,
}

impl OpRecord {
    fn new() -> Self {
        Self {
            latency: new_histogram(),
            service: new_histogram(),
            ok: 0,
            errors: [0; ErrorCode::COUNT],
            error_messages: [const { None }; ErrorCode::COUNT],
            clamped: 0,
            keys: 0,
            value_bytes: 0,
            retries: 0,
            conflicts: 0,
            pages: 0,
            intervals: Vec::new(),
            successes: Timeline::default(),
            current: new_interval_histogram(),
            current_index: 0,
            current_ok: 0,
            current_errors: 0,
        }
    }

    /// Requests that failed, all codes together.
    #[must_use]
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    fn roll_to(&mut self, index: u64) {
        if index == self.current_index {
            return;
        }
        self.flush_interval();
        self.current_index = index;
    }

    fn flush_interval(&mut self) {
        if self.current_ok == 0 && self.current_errors == 0 {
            return;
        }
        let buckets = self
            .current
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        self.intervals.push(IntervalSample {
            index: self.current_index,
            ok: self.current_ok,
            errors: self.current_errors,
            buckets,
        });
        self.current.reset();
        self.current_ok = 0;
        self.current_errors = 0;
    }

    /// Every request of several kinds together, for a mix's combined figures.
    #[must_use]
    pub fn combined<'a>(records: impl IntoIterator<Item = &'a OpRecord>) -> OpRecord {
        let mut all = OpRecord::new();
        for r in records {
            all.merge(r.clone());
        }
        all
    }

    /// Makes intervals `2^by` times longer: samples that fall in one longer interval become
    /// one, and the open interval takes in a finished one it now covers.
    fn coarsen(&mut self, by: u32) {
        if by == 0 {
            return;
        }
        let mut merged: Vec<IntervalSample> = Vec::with_capacity(self.intervals.len());
        for mut s in self.intervals.drain(..) {
            s.index >>= by;
            match merged.last_mut() {
                Some(last) if last.index == s.index => last.absorb(s),
                _ => merged.push(s),
            }
        }
        self.intervals = merged;
        self.current_index >>= by;
        if self.intervals.last().is_some_and(|s| s.index == self.current_index) {
            let s = self.intervals.pop().expect("checked");
            for (v, n) in s.buckets {
                self.current.record_n(v, n).expect("recorded within bounds before");
            }
            self.current_ok += s.ok;
            self.current_errors += s.errors;
        }
    }

    fn merge(&mut self, mut other: OpRecord) {
        other.flush_interval();
        self.flush_interval();
        self.latency.add(&other.latency).expect("same bounds");
        self.service.add(&other.service).expect("same bounds");
        self.ok += other.ok;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        for (mine, theirs) in self.error_messages.iter_mut().zip(other.error_messages) {
            if mine.is_none() {
                *mine = theirs;
            }
        }
        self.clamped += other.clamped;
        self.keys += other.keys;
        self.value_bytes += other.value_bytes;
        self.retries += other.retries;
        self.conflicts += other.conflicts;
        self.pages += other.pages;
        self.intervals.append(&mut other.intervals);
        self.successes.union(&other.successes);
    }
}

/// Successful requests one member served (from the member id in response headers).
#[derive(Debug, Clone)]
pub struct MemberRecord {
    /// Member id, as in response headers.
    pub id: u64,
    /// Successful requests it answered.
    pub ok: u64,
    /// Their latency, us.
    pub latency: Histogram<u64>,
}

/// The most members a recorder attributes requests to (etcd clusters have a handful): past
/// it, requests are still counted, just not per member.
pub const MAX_MEMBERS: usize = 64;

/// The longest sample error message kept, in characters; a longer one is cut there.
pub const ERROR_MESSAGE_MAX_CHARS: usize = 200;

/// `message` as kept in [`OpRecord::error_messages`]: trimmed, on one line, at most
/// [`ERROR_MESSAGE_MAX_CHARS`] characters (so cut on a character boundary). `None` when
/// nothing is left.
#[cold]
fn sample_message(message: &str) -> Option<Box<str>> {
    let kept: String = message
        .trim()
        .chars()
        .take(ERROR_MESSAGE_MAX_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    (!kept.is_empty()).then(|| kept.into_boxed_str())
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
mod tests {
    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn latency_from_intended_service_from_sent() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        r.record_ok(OpKind::Put, t0, at(t0, 40), at(t0, 50));
        let ops = r.finish();
        let (_, put) = &ops[0];
        assert!((49_900..=50_100).contains(&put.latency.max()));
        assert!((9_990..=10_010).contains(&put.service.max()));
    }

    #[test]
    fn member_ids_a_server_makes_up_are_bounded() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        for id in 1..=(MAX_MEMBERS as u64 + 100) {
            r.record_member(id, t0, at(t0, 1));
        }
        r.record_member(1, t0, at(t0, 1));
        assert_eq!(r.members().len(), MAX_MEMBERS);
        assert_eq!(r.members()[0].ok, 2, "known members are still counted");
    }

    #[test]
    fn errors_are_counted_not_timed() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        r.record_ok(OpKind::Put, t0, t0, at(t0, 1));
        r.record_error(OpKind::Put, ErrorCode::InvalidArgument, at(t0, 2));
        r.record_errors(OpKind::Put, ErrorCode::Cancelled, 3, at(t0, 3));
        assert_eq!(r.requests(), 5);
        let (_, put) = r.finish().remove(0);
        assert_eq!(put.ok, 1);
        assert_eq!(put.latency.len(), 1);
        assert_eq!(put.errors[ErrorCode::InvalidArgument.index()], 1);
        assert_eq!(put.errors_total(), 4);
    }

    #[test]
    fn first_error_message_is_kept_cut_and_merged() {
        let t0 = Instant::now();
        let unknown = ErrorCode::Unknown.index();
        let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        a.record_error(OpKind::Put, ErrorCode::Unknown, at(t0, 1));
        a.record_error_message(OpKind::Put, ErrorCode::Unknown, "");
        a.record_error_message(OpKind::Put, ErrorCode::Unknown, " etcdserver: too many requests\n");
        a.record_error_message(OpKind::Put, ErrorCode::Unknown, "etcdserver: request timed out");
        // Cut after 200 characters, each of them two bytes here.
        let long = "é".repeat(ERROR_MESSAGE_MAX_CHARS + 50);
        a.record_error_message(OpKind::Put, ErrorCode::Unavailable, &long);
        a.record_error_message(OpKind::Put, ErrorCode::Unavailable, "connection refused");

        let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        b.record_error_message(OpKind::Put, ErrorCode::Unknown, "from b");
        b.record_error_message(OpKind::Put, ErrorCode::ResourceExhausted, "from b only");
        b.record_error_message(OpKind::Range, ErrorCode::Unknown, "a range");
        a.merge(b);

        let ops = a.finish();
        let put = &ops[0].1;
        assert_eq!(put.error_messages[unknown].as_deref(), Some("etcdserver: too many requests"));
        let cut = put.error_messages[ErrorCode::Unavailable.index()].as_deref().unwrap();
        assert_eq!(cut.chars().count(), ERROR_MESSAGE_MAX_CHARS);
        assert_eq!(cut, &long[..2 * ERROR_MESSAGE_MAX_CHARS]);
        assert_eq!(
            put.error_messages[ErrorCode::ResourceExhausted.index()].as_deref(),
            Some("from b only")
        );
        assert_eq!(put.error_messages.iter().flatten().count(), 3);
        // A kind with messages and no request is not reported, as any kind without requests.
        assert_eq!(ops.len(), 1);
    }

    #[test]
    fn intervals_split_by_completion_time_and_merge() {
        let t0 = Instant::now();
        let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        let mut b = Recorder::new(&[], t0, Duration::from_secs(1));
        for ms in [10, 20, 1500, 2500] {
            a.record_ok(OpKind::Put, at(t0, ms - 5), at(t0, ms - 5), at(t0, ms));
        }
        b.record_ok(OpKind::Put, t0, t0, at(t0, 1100));
        b.record_error(OpKind::Range, ErrorCode::Unavailable, at(t0, 100));
        a.merge(b);
        let ops = a.finish();
        assert_eq!(ops.len(), 2);
        let put = &ops[0].1;
        let mut by_index = std::collections::BTreeMap::new();
        for s in &put.intervals {
            *by_index.entry(s.index).or_insert(0) += s.ok;
        }
        assert_eq!(by_index.into_iter().collect::<Vec<_>>(), vec![(0, 2), (1, 2), (2, 1)]);
        assert_eq!(ops[1].1.errors_total(), 1);
    }

    /// (index, ok) of every finished interval of the first kind.
    fn series(r: &Recorder) -> Vec<(u64, u64)> {
        r.finished_intervals().map(|(_, s)| (s.index, s.ok)).collect()
    }

    #[test]
    fn adaptive_recorder_doubles_its_interval_on_a_pair_boundary() {
        let t0 = Instant::now();
        let ten = Duration::from_millis(10);
        let mut r = Recorder::new(&[OpKind::Put], t0, ten).adaptive();
        // One request in the middle of each of the first 201 intervals, two in the 202nd.
        for i in 0..202 {
            let done = t0 + ten * i + Duration::from_millis(5);
            r.record_ok(OpKind::Put, done, done, done);
        }
        let done = t0 + ten * 201 + Duration::from_millis(6);
        r.record_ok(OpKind::Put, done, done, done);
        let index = r.close_intervals(t0 + ten * 201 + Duration::from_millis(7));
        assert_eq!(index, 201);
        assert!(!r.double_if_due(index), "201 is the second of a pair: not yet");
        assert_eq!(r.interval(), ten);
        let index = r.close_intervals(t0 + ten * 202);
        assert!(r.double_if_due(index));
        assert_eq!((r.interval(), r.shift()), (ten * 2, 1));
        // Pairs merged: 101 intervals of 2 requests, the last one of 3.
        let merged = series(&r);
        assert_eq!(merged.len(), 101);
        assert!(merged.iter().enumerate().all(|(i, &(index, _))| index == i as u64));
        assert!(merged[..100].iter().all(|&(_, ok)| ok == 2), "{merged:?}");
        assert_eq!(merged[100], (100, 3));
        // A recorder that did not double merges into the longer intervals.
        let mut other = Recorder::new(&[OpKind::Put], t0, ten).adaptive();
        let done = t0 + ten * 3;
        other.record_ok(OpKind::Put, done, done, done);
        r.merge(other);
        assert_eq!(r.interval(), ten * 2);
        let (_, put) = r.finish().remove(0);
        let series = crate::Interval::series(&put.intervals, ten * 2);
        assert_eq!(series.len(), 101);
        assert_eq!(series[1].count, 3, "10 ms interval 3 is 20 ms interval 1");
        assert_eq!(series.iter().map(|i| i.count).sum::<u64>(), 204);
        assert!(series.iter().all(|i| i.max_us <= 1), "latency kept through the merges");
    }

    #[test]
    fn fixed_recorder_never_doubles() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_millis(10));
        let index = r.close_intervals(t0 + Duration::from_secs(10));
        assert_eq!(index, 1000);
        assert!(!r.double_if_due(index));
    }

    #[test]
    fn out_of_range_is_clamped_and_counted() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        r.record_ok(OpKind::Put, t0, t0, t0 + Duration::from_secs(7200));
        let (_, put) = r.finish().remove(0);
        assert_eq!(put.clamped, 2);
        assert!(put.latency.max() >= HIGHEST_US);
    }

    #[test]
    fn timeline_marks_milliseconds_and_merges() {
        let t0 = Instant::now();
        let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        a.record_ok(OpKind::Put, t0, t0, at(t0, 5));
        a.record_ok(OpKind::Put, t0, t0, t0 + Duration::from_micros(5_900));
        b.record_ok(OpKind::Put, t0, t0, at(t0, 70_000));
        b.record_error(OpKind::Put, ErrorCode::Unavailable, at(t0, 100));
        a.merge(b);
        let (_, put) = a.finish().remove(0);
        let t = &put.successes;
        assert!(t.is_set(5) && t.is_set(70_000) && !t.is_set(6) && !t.is_set(100));
        assert_eq!(t.first_set_from(0, 100_000), Some(5));
        assert_eq!(t.first_set_from(6, 100_000), Some(70_000));
        assert_eq!(t.first_set_from(6, 70_000), None);
        assert_eq!(t.first_set_from(70_001, 200_000), None);
    }

    #[test]
    fn start_rate_is_the_rate_of_starts_not_completions() {
        let t0 = Instant::now();
        let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        // 11 starts 10 ms apart, split over two workers, one of them 3 ms late.
        for i in 0..11u64 {
            let slot = at(t0, 10 * i);
            let r = if i % 2 == 0 { &mut a } else { &mut b };
            r.record_start(slot, if i == 4 { slot + Duration::from_millis(3) } else { slot }, None);
        }
        a.merge(b);
        let p = a.pacing().unwrap();
        assert_eq!(p.paced, 11);
        assert_eq!(p.late, 1);
        assert!((p.start_rate() - 100.0).abs() < 1e-6, "{}", p.start_rate());
    }

    #[test]
    fn steps_are_recorded_on_their_own_and_merged() {
        let t0 = Instant::now();
        let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1)).with_steps(2);
        let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1)).with_steps(2);
        a.start_step(0, t0);
        b.start_step(0, t0);
        a.record_step_client(0);
        a.record_step_ok(0, t0, at(t0, 2));
        b.record_step_client(0);
        b.record_step_ok(0, at(t0, 1), at(t0, 5));
        b.record_step_errors(0, 2, at(t0, 6));
        a.start_step(1, at(t0, 10));
        b.start_step(1, at(t0, 10));
        a.record_step_ok(1, at(t0, 10), at(t0, 30));
        // A step past the last is no step: ignored.
        a.record_step_ok(7, t0, t0);
        a.merge(b);
        let [first, second] = a.steps() else { panic!("two steps") };
        assert_eq!((first.ok, first.errors, first.clients), (2, 2, 2));
        assert_eq!((first.started, first.last_done), (Some(t0), Some(at(t0, 6))));
        assert_eq!(first.latency.len(), 2);
        assert!((3_990..=4_010).contains(&first.latency.max()));
        assert_eq!((second.requests(), second.started), (1, Some(at(t0, 10))));
        a.reset(at(t0, 40));
        assert!(a.steps().iter().all(|s| s.requests() == 0 && s.started.is_none()));
        assert_eq!(a.steps().len(), 2, "the steps are kept, emptied");
        let plain = Recorder::new(&[], t0, Duration::from_secs(1));
        let mut merged = plain.clone();
        merged.merge(a);
        assert_eq!(merged.steps().len(), 2, "a recorder without steps takes the other's");
    }

    #[test]
    fn reset_forgets_warmup() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        r.record_ok(OpKind::Put, t0, t0, at(t0, 1));
        r.reset(at(t0, 5));
        assert_eq!(r.requests(), 0);
        assert!(r.finish().is_empty());
    }
}
