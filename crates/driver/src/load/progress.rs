//! Live progress of a run for a progress display, and its finished intervals for a live
//! time series, published by each worker a few times a second (never per request).
//!
//! Each worker, at every publish, copies the samples of the intervals it has finished since
//! the last one into its slot and then says how far it has passed. [`Progress::take_intervals`]
//! merges the intervals every worker has passed, each once, in order.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcdlat_core::recorder::IntervalSample;
use etcdlat_core::{ErrorCode, Interval, OpKind};
use hdrhistogram::Histogram;

/// Live progress of the current run, for a progress display: requests completed so far,
/// published by each worker a few times a second (never per request).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    workers: Arc<Mutex<Vec<Arc<WorkerProgress>>>>,
    series: Arc<Mutex<Series>>,
    /// Whether workers publish their kinds' totals ([`Progress::keep_live`]).
    live: Arc<AtomicBool>,
}

/// What one kind of request has done so far in the measured run, every worker together:
/// for a live view (a Prometheus endpoint) while the run goes ([`Progress::live`]).
#[derive(Debug, Clone)]
pub struct LiveKind {
    /// The kind.
    pub kind: OpKind,
    /// Requests sent (started), answered or not.
    pub sent: u64,
    /// Successes.
    pub ok: u64,
    /// Failures by code, in [`ErrorCode::ALL`] order.
    pub errors: [u64; ErrorCode::COUNT],
    /// Latency of the successes, microseconds.
    pub latency: Histogram<u64>,
}

impl LiveKind {
    fn add(&mut self, other: &LiveKind) {
        self.sent += other.sent;
        self.ok += other.ok;
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        // Both come from the recorder's histograms, of one range: adding cannot fail.
        let _ = self.latency.add(&other.latency);
    }

    /// Requests sent and not answered yet.
    #[must_use]
    pub fn in_flight(&self) -> u64 {
        self.sent.saturating_sub(self.ok + self.errors.iter().sum::<u64>())
    }
}

/// One worker's published progress.
#[derive(Debug, Default)]
pub(crate) struct WorkerProgress {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub p99_us: AtomicU64,
    /// Samples of finished intervals not yet taken: kind, how many times the first interval
    /// had doubled (the sample is `2^shift` first intervals long), sample.
    pub samples: Mutex<Vec<(OpKind, u32, IntervalSample)>>,
    /// How far the worker has passed, in first intervals: every sample before it has been
    /// put in `samples`. [`u64::MAX`] once the worker's run is over.
    pub passed: AtomicU64,
    /// Once its run is over, the worker's last completion, nanoseconds from its start.
    pub ended_ns: AtomicU64,
    /// Whether to publish `live` ([`Progress::keep_live`]).
    pub keep_live: bool,
    /// Each kind's totals so far, when a live view asked for them.
    pub live: Mutex<Vec<LiveKind>>,
}

/// One interval of the run in progress, every worker's samples merged.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveInterval {
    /// Start, since measurement started.
    pub start: Duration,
    /// End, since measurement started (an interval a worker doubled around may be shorter
    /// than its neighbours; the last one ends where measurement did).
    pub end: Duration,
    /// Each kind of the run, in kind order, with its figures in the interval (zero when
    /// it completed none).
    pub ops: Vec<(OpKind, Interval)>,
}

/// Where the merging of published samples stands.
#[derive(Debug, Default)]
struct Series {
    /// The first interval's length; `None` when the run's intervals are not streamed.
    first: Option<Duration>,
    kinds: Vec<OpKind>,
    /// Samples taken from the workers, not yet in an interval handed out.
    pending: Vec<(OpKind, u32, IntervalSample)>,
    /// Everything before this (in first intervals) has been handed out.
    emitted: u64,
    /// The longest samples seen so far, as a shift.
    shift: u32,
}

impl Progress {
    fn sum(&self, f: impl Fn(&WorkerProgress) -> u64) -> u64 {
        self.workers.lock().map(|w| w.iter().map(|p| f(p)).sum()).unwrap_or(0)
    }

    /// Requests completed (ok or failed) in the measured part of the current or last run.
    #[must_use]
    pub fn completed(&self) -> u64 {
        self.sum(|p| p.requests.load(Ordering::Relaxed))
    }

    /// Failed requests so far.
    #[must_use]
    pub fn errors(&self) -> u64 {
        self.sum(|p| p.errors.load(Ordering::Relaxed))
    }

    /// Has the workers publish each kind's totals (requests sent, successes and their
    /// latency histogram, failures by code) with their progress, for [`Progress::live`]:
    /// a copy of each kind's histogram per worker a few times a second, never per request.
    pub fn keep_live(&self) {
        self.live.store(true, Ordering::Relaxed);
    }

    /// Each kind's totals so far in the measured part of the current or last run, every
    /// worker's together, in kind order; empty unless [`Progress::keep_live`] was called
    /// before the run.
    #[must_use]
    pub fn live(&self) -> Vec<LiveKind> {
        let Ok(workers) = self.workers.lock() else { return Vec::new() };
        let mut out: Vec<LiveKind> = Vec::new();
        for w in workers.iter() {
            let Ok(kinds) = w.live.lock() else { continue };
            for k in kinds.iter() {
                match out.iter_mut().find(|o| o.kind == k.kind) {
                    Some(o) => o.add(k),
                    None => out.push(k.clone()),
                }
            }
        }
        out.sort_by_key(|k| k.kind.index());
        out
    }

    /// The worst p99 latency of the current interval across workers, microseconds.
    #[must_use]
    pub fn interval_p99_us(&self) -> u64 {
        self.workers
            .lock()
            .map(|w| w.iter().map(|p| p.p99_us.load(Ordering::Relaxed)).max().unwrap_or(0))
            .unwrap_or(0)
    }

    /// The intervals of the run in progress (or just over) that every worker has finished
    /// and that no earlier call returned, oldest first. Once the run is over, what is left.
    /// Runs whose workers do not stream intervals (the watch family, a scenario's setup)
    /// have none.
    #[must_use]
    pub fn take_intervals(&self) -> Vec<LiveInterval> {
        let Ok(workers) = self.workers.lock() else { return Vec::new() };
        let Ok(mut series) = self.series.lock() else { return Vec::new() };
        let Some(first) = series.first else { return Vec::new() };
        let (mut passed, mut ended_ns) = (u64::MAX, 0);
        for w in workers.iter() {
            // Read before the samples: every sample before it is in the slot already.
            passed = passed.min(w.passed.load(Ordering::Acquire));
            ended_ns = ended_ns.max(w.ended_ns.load(Ordering::Relaxed));
            if let Ok(mut samples) = w.samples.lock() {
                series.pending.append(&mut samples);
            }
        }
        let ended = (passed == u64::MAX).then(|| Duration::from_nanos(ended_ns));
        drop(workers);
        series.shift = series.pending.iter().map(|s| s.1).fold(series.shift, u32::max);
        let last = series.pending.iter().map(|(_, shift, s)| (s.index + 1) << shift).max();
        let until = if passed == u64::MAX { last.unwrap_or(0) } else { passed };
        let mut out = Vec::new();
        while series.emitted < until {
            // To the next boundary of the longest samples, which no sample straddles.
            let end = ((series.emitted >> series.shift) + 1) << series.shift;
            if end > passed {
                break;
            }
            let start = series.emitted;
            let (inside, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut series.pending)
                .into_iter()
                .partition(|(_, shift, s)| s.index << shift < end);
            series.pending = rest;
            let t = |units: u64| first * u32::try_from(units).unwrap_or(u32::MAX);
            let ops = series
                .kinds
                .iter()
                .map(|&k| {
                    let of_kind = inside.iter().filter(|(kind, ..)| *kind == k).map(|s| &s.2);
                    (k, Interval::of(t(start).as_secs_f64(), of_kind))
                })
                .collect();
            let stop = ended.map_or(t(end), |e| t(end).min(e).max(t(start)));
            out.push(LiveInterval { start: t(start), end: stop, ops });
            series.emitted = end;
        }
        out
    }

    /// A fresh progress for a run on `workers` workers; `series` (the first interval's
    /// length and the run's kinds) when its intervals are streamed.
    pub(super) fn reset(
        &self,
        workers: usize,
        series: Option<(Duration, Vec<OpKind>)>,
    ) -> Vec<Arc<WorkerProgress>> {
        let keep_live = self.live.load(Ordering::Relaxed);
        let counters: Vec<Arc<WorkerProgress>> = (0..workers)
            .map(|_| Arc::new(WorkerProgress { keep_live, ..WorkerProgress::default() }))
            .collect();
        if let Ok(mut w) = self.workers.lock() {
            w.clone_from(&counters);
        }
        if let Ok(mut s) = self.series.lock() {
            let (first, kinds) = series.unzip();
            *s = Series { first, kinds: kinds.unwrap_or_default(), ..Series::default() };
        }
        counters
    }
}
