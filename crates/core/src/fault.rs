//! What each scripted fault step did to the service ([`FaultReport`], computed by
//! [`analyze`]); the steps themselves are part of the scenario ([`FaultStep`]).
//!
//! Every step is reported with when it was planned, started and finished, the member it
//! acted on, what it did in words, and what the service did around it. The method:
//!
//! - **Success timeline.** Every recorder keeps, per operation kind, one bit per millisecond
//!   of measured time: set when at least one request of that kind completed successfully in
//!   that millisecond ([`crate::recorder::Timeline`]). Workers' timelines merge by OR, so
//!   the run's timeline says exactly (to the millisecond) when the cluster served anything.
//!   Background compaction is not part of the load and is left out.
//! - **Unavailability window.** The longest stretch of the timeline without a success that
//!   covers the step's start or begins within [`GAP_GRACE`] after it (a request already in
//!   flight may complete just after a member stops), searched up to the next step's start
//!   (or the end of the run). `last_success_before_s` is where it begins (the end of the last
//!   millisecond with a success), `first_success_after_s` where it ends, `unavailable_s` its
//!   length. When successes never stopped around the step, the window is empty and both
//!   equal the step's start; when none came back before the next step or the end, there is
//!   no first success and `unavailable_s` runs to that point (a lower bound). The resolution
//!   is 1 ms, and a slow load cannot see gaps shorter than the time between its requests.
//! - **First write.** `first_write_after_s` is the time from the step's start to the end of
//!   the same kind of window computed over writes only (put, delete, txn-put, txn-write,
//!   stm, lease-grant, lease-revoke), or to the first write at or after the start when writes
//!   did not stop; `None` when the run made no write after it.
//! - **Before, during, after.** From the per-interval series (`report.interval` long): during
//!   is the intervals from the one holding the step's start to the one holding its recovery
//!   (the latest of: the step finishing, a paused member resumed, the first success after
//!   the window); before is the intervals after the previous step's during, up to the step's
//!   start; after is the intervals after its during, up to the next step's start or the run's
//!   end (so one step's after is the next one's before; both are empty when the next step
//!   starts before this one has recovered). Each window gives successful and failed requests, throughput (successes per
//!   second of the window's measured time) and latency p50, p99 and max from the intervals'
//!   histograms (2 significant digits).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::op::OpKind;
use crate::recorder::{OpRecord, Timeline};

// The steps, at the paths they had when this module held them too.
pub use crate::scenario::{FaultAction, FaultStep, MemberRef};

/// What the driver did for one step: the input of [`analyze`]. Times are since the start of
/// measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedFault {
    /// Index of the step in the scenario's `faults`.
    pub step: usize,
    /// The step's action.
    pub action: FaultAction,
    /// When it was planned.
    pub at: Duration,
    /// The member it acted on, named (several, comma-separated, for defrag or restart of all).
    pub member: Option<String>,
    /// What it did, in words (`killed m1 (the leader)`).
    pub what: String,
    /// When it started.
    pub started: Duration,
    /// When it finished (the signal sent, the request answered).
    pub finished: Duration,
    /// Pause: when the member was resumed.
    pub resumed: Option<Duration>,
    /// Why it could not be done, when it could not.
    pub error: Option<String>,
}

/// What one fault step did to the service; see the module docs for the method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultReport {
    /// Index of the step in the scenario's `faults`, from 0.
    pub step: usize,
    /// The action (`kill`, `pause`, ...).
    pub action: FaultAction,
    /// The member(s) it acted on, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// What it did, in words.
    pub what: String,
    /// When it was planned, seconds since measurement started.
    pub at_s: f64,
    /// When it started, seconds since measurement started.
    pub started_s: f64,
    /// When it finished, seconds since measurement started.
    pub finished_s: f64,
    /// Pause: when the member was resumed, seconds since measurement started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_s: Option<f64>,
    /// Why the step could not be done (the run went on without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The end of the last success before the unavailability window, seconds since
    /// measurement started (`None`: nothing had succeeded yet).
    pub last_success_before_s: Option<f64>,
    /// The first success after it, seconds since measurement started (`None`: none before the
    /// next step or the end of the run).
    pub first_success_after_s: Option<f64>,
    /// Length of the unavailability window, seconds (0: service never stopped).
    pub unavailable_s: f64,
    /// Seconds from the step's start to the first successful write after it (`None`: no
    /// write succeeded after it, or the run makes no writes).
    pub first_write_after_s: Option<f64>,
    /// Since the previous step's recovery, up to this step.
    pub before: Window,
    /// From this step's start to its recovery.
    pub during: Window,
    /// From its recovery to the next step or the end of the run.
    pub after: Window,
}

/// Requests, throughput and latency over a span of whole intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Window {
    /// Start, seconds since measurement started.
    pub from_s: f64,
    /// End, seconds since measurement started (at most the run's end).
    pub to_s: f64,
    /// Successful requests completed in it.
    pub ok: u64,
    /// Failed requests completed in it.
    pub errors: u64,
    /// Successful requests per second of the window.
    pub throughput: f64,
    /// Median latency, us.
    pub p50_us: u64,
    /// 99th percentile latency, us.
    pub p99_us: u64,
    /// Largest latency, us.
    pub max_us: u64,
}

/// How long after a step's start an unavailability window may begin and still be the step's:
/// requests in flight when a member stops may complete just after.
pub const GAP_GRACE: Duration = Duration::from_millis(100);

/// The kinds whose successes are writes, for [`FaultReport::first_write_after_s`].
const WRITES: [OpKind; 7] = [
    OpKind::Put,
    OpKind::Delete,
    OpKind::TxnPut,
    OpKind::TxnWrite,
    OpKind::Stm,
    OpKind::LeaseGrant,
    OpKind::LeaseRevoke,
];

/// Computes what each applied step did to the service, from the run's records (every kind,
/// as the recorder finished them), its measured `duration` and its `interval` length.
#[must_use]
pub fn analyze(
    records: &[(OpKind, OpRecord)],
    applied: &[AppliedFault],
    duration: Duration,
    interval: Duration,
) -> Vec<FaultReport> {
    let load: Vec<&(OpKind, OpRecord)> =
        records.iter().filter(|(k, _)| *k != OpKind::Compact).collect();
    let mut successes = Timeline::default();
    let mut writes = Timeline::default();
    let mut any_writes = false;
    for (kind, record) in &load {
        successes.union(&record.successes);
        if WRITES.contains(kind) {
            writes.union(&record.successes);
            any_writes = true;
        }
    }
    let series = Series::new(load.iter().map(|(_, r)| r), interval, duration);
    let end_ms = ms(duration);
    // Per step: its report without windows, and the intervals its start and recovery fall in.
    let mut out = Vec::with_capacity(applied.len());
    let mut spans = Vec::with_capacity(applied.len());
    for (i, step) in applied.iter().enumerate() {
        let next = applied.get(i + 1).map_or(duration, |n| n.started.min(duration));
        let start_ms = ms(step.started);
        let limit_ms = ms(next).max(start_ms + 1).min(end_ms.max(start_ms + 1));
        let gap = longest_gap(&successes, start_ms, limit_ms);
        let (last_before, first_after, unavailable_ms) = match gap {
            Some((a, Some(b))) => ((a > 0).then_some(a), Some(b), b - a),
            Some((a, None)) => ((a > 0).then_some(a), None, limit_ms.saturating_sub(a)),
            None => (Some(start_ms), Some(start_ms), 0),
        };
        let first_write_ms = if any_writes {
            match longest_gap(&writes, start_ms, end_ms.max(start_ms + 1)) {
                Some((_, b)) => b,
                None => writes.first_set_from(start_ms, end_ms),
            }
        } else {
            None
        };
        // Recovered: finished, resumed, and served again (or, never served again, the next
        // step's start or the end).
        let served = match (gap, first_after) {
            (Some(_), Some(b)) => Duration::from_millis(b),
            (Some(_), None) => next,
            (None, _) => step.started,
        };
        let recovery =
            [Some(step.finished), step.resumed, Some(served)].into_iter().flatten().max();
        let start_idx = series.index(step.started);
        let end_idx = (series.index(recovery.unwrap_or(step.started)) + 1).max(start_idx + 1);
        spans.push((start_idx, end_idx.min(series.len()).max(start_idx)));
        out.push(FaultReport {
            step: step.step,
            action: step.action,
            member: step.member.clone(),
            what: step.what.clone(),
            at_s: secs(step.at),
            started_s: secs(step.started),
            finished_s: secs(step.finished),
            resumed_s: step.resumed.map(secs),
            error: step.error.clone(),
            last_success_before_s: last_before.map(ms_secs),
            first_success_after_s: first_after.map(ms_secs),
            unavailable_s: ms_secs(unavailable_ms),
            first_write_after_s: first_write_ms.map(|w| ms_secs(w.saturating_sub(start_ms))),
            before: Window::default(),
            during: Window::default(),
            after: Window::default(),
        });
    }
    // Windows: before is what lies between the previous step's during and this step's start,
    // and is the previous step's after; a step that starts before the previous one recovered
    // has an empty before (and the previous step an empty after).
    for i in 0..out.len() {
        let (start, end) = spans[i];
        let previous_end = if i == 0 { 0 } else { spans[i - 1].1 };
        let next_start = spans.get(i + 1).map_or(series.len(), |s| s.0).max(start);
        out[i].before = series.window(previous_end.min(start), start);
        out[i].during = series.window(start, end);
        out[i].after = series.window(end.min(next_start), next_start);
    }
    out
}

fn ms(d: Duration) -> u64 {
    d.as_secs() * 1000 + u64::from(d.subsec_millis())
}

fn ms_secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

/// The longest run of milliseconds without a success that covers `start` or begins within
/// [`GAP_GRACE`] after it, looking no further than `limit`: `(begin, end)`, `end` `None` when
/// no success came before `limit`. `None` when successes never stopped there.
fn longest_gap(timeline: &Timeline, start: u64, limit: u64) -> Option<(u64, Option<u64>)> {
    let grace_end = start + ms(GAP_GRACE);
    let mut best: Option<(u64, Option<u64>)> = None;
    let length = |(a, b): (u64, Option<u64>)| b.unwrap_or(limit).saturating_sub(a);
    let mut pos = start;
    while pos <= grace_end && pos < limit {
        if timeline.is_set(pos) {
            pos += 1;
            continue;
        }
        let mut begin = pos;
        if pos == start {
            while begin > 0 && !timeline.is_set(begin - 1) {
                begin -= 1;
            }
        }
        let end = timeline.first_set_from(pos, limit);
        let gap = (begin, end);
        if best.is_none_or(|b| length(gap) > length(b)) {
            best = Some(gap);
        }
        match end {
            Some(e) => pos = e,
            None => break,
        }
    }
    best
}

/// The run's per-interval series over the load's kinds, with latency histograms.
struct Series {
    intervals: Vec<(u64, u64, Option<Histogram<u64>>)>,
    interval: Duration,
    duration: Duration,
}

impl Series {
    fn new<'a>(
        records: impl Iterator<Item = &'a OpRecord>,
        interval: Duration,
        duration: Duration,
    ) -> Self {
        let count = duration.as_nanos().div_ceil(interval.as_nanos().max(1)) as usize;
        let mut intervals: Vec<(u64, u64, Option<Histogram<u64>>)> =
            (0..count).map(|_| (0, 0, None)).collect();
        for record in records {
            for s in &record.intervals {
                let i = s.index as usize;
                if i >= intervals.len() {
                    intervals.resize_with(i + 1, || (0, 0, None));
                }
                s.add_to(&mut intervals[i]);
            }
        }
        Self { intervals, interval, duration }
    }

    /// Number of intervals.
    fn len(&self) -> usize {
        self.intervals.len()
    }

    /// The interval holding `at`, at most one past the last.
    fn index(&self, at: Duration) -> usize {
        ((at.as_nanos() / self.interval.as_nanos().max(1)) as usize).min(self.intervals.len())
    }

    /// Intervals `from .. to` (end exclusive) as one window.
    fn window(&self, from: usize, to: usize) -> Window {
        let to = to.min(self.intervals.len());
        let from = from.min(to);
        let from_s = (self.interval * u32::try_from(from).unwrap_or(u32::MAX)).min(self.duration);
        let to_s = (self.interval * u32::try_from(to).unwrap_or(u32::MAX)).min(self.duration);
        let mut w = Window { from_s: secs(from_s), to_s: secs(to_s), ..Window::default() };
        let mut h: Option<Histogram<u64>> = None;
        for (ok, errors, hist) in &self.intervals[from..to] {
            w.ok += ok;
            w.errors += errors;
            if let Some(hist) = hist {
                match &mut h {
                    Some(h) => h.add(hist).expect("same bounds"),
                    None => h = Some(hist.clone()),
                }
            }
        }
        let span = (to_s - from_s).as_secs_f64();
        if span > 0.0 {
            w.throughput = (w.ok as f64 / span * 1000.0).round() / 1000.0;
        }
        if let Some(h) = h {
            w.p50_us = h.value_at_quantile(0.5);
            w.p99_us = h.value_at_quantile(0.99);
            w.max_us = h.max();
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::ErrorCode;
    use crate::recorder::Recorder;
    use std::time::Instant;

    fn applied(step: usize, started_ms: u64, finished_ms: u64) -> AppliedFault {
        AppliedFault {
            step,
            action: FaultAction::Pause,
            at: Duration::from_millis(started_ms),
            member: Some("m0".into()),
            what: "paused m0".into(),
            started: Duration::from_millis(started_ms),
            finished: Duration::from_millis(finished_ms),
            resumed: None,
            error: None,
        }
    }

    #[test]
    fn unavailability_and_windows_from_the_records() {
        // Puts every 10 ms from 0 to 6 s, none from 2.000 s to 3.500 s (failures instead),
        // 1 ms latency before and after, 1.5 s for the first put after.
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        for ms in (0..6000).step_by(10) {
            if (2000..3500).contains(&ms) {
                if ms % 100 == 0 {
                    r.record_error(OpKind::Put, ErrorCode::Unavailable, at(ms));
                }
                continue;
            }
            let latency = if ms == 3500 { 1500 } else { 1 };
            r.record_ok(OpKind::Put, at(ms - latency.min(ms)), at(ms - latency.min(ms)), at(ms));
        }
        let records = r.finish();
        let mut step = applied(0, 2003, 2003);
        step.resumed = Some(Duration::from_millis(3400));
        let reports = analyze(&records, &[step], Duration::from_secs(6), Duration::from_secs(1));
        let f = &reports[0];
        // The last put before completed in the millisecond [1990, 1991).
        assert_eq!(f.last_success_before_s, Some(1.991));
        assert_eq!(f.first_success_after_s, Some(3.5));
        assert!((f.unavailable_s - 1.509).abs() < 1e-9, "{f:?}");
        assert_eq!(f.first_write_after_s, Some(1.497));
        // during: the intervals [2, 3) and [3, 4); before: [0, 2); after: [4, 6).
        assert_eq!((f.during.from_s, f.during.to_s), (2.0, 4.0));
        assert_eq!((f.before.from_s, f.before.to_s), (0.0, 2.0));
        assert_eq!((f.after.from_s, f.after.to_s), (4.0, 6.0));
        assert_eq!(f.before.ok, 200);
        assert_eq!(f.during.ok, 50);
        assert_eq!(f.during.errors, 15);
        assert_eq!(f.after.ok, 200);
        assert!((f.before.throughput - 100.0).abs() < 1e-9);
        assert!(f.during.max_us >= 1_490_000, "{:?}", f.during);
        assert!(f.before.p99_us <= 1_100, "{:?}", f.before);
        assert_eq!(f.before.ok + f.during.ok + f.after.ok, 450);
    }

    #[test]
    fn no_gap_when_service_goes_on() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Range], t0, Duration::from_secs(1));
        for ms in 0..3000 {
            let done = t0 + Duration::from_millis(ms);
            r.record_ok(OpKind::Range, done, done, done);
        }
        let records = r.finish();
        let f = &analyze(
            &records,
            &[applied(0, 1500, 1501)],
            Duration::from_secs(3),
            Duration::from_secs(1),
        )[0];
        assert_eq!(f.unavailable_s, 0.0);
        assert_eq!(f.last_success_before_s, Some(1.5));
        assert_eq!(f.first_success_after_s, Some(1.5));
        assert_eq!(f.first_write_after_s, None, "a read-only run makes no writes");
        assert_eq!(f.during.ok, 1000);
    }

    #[test]
    fn no_recovery_runs_to_the_end() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        for ms in 0..1000 {
            let done = t0 + Duration::from_millis(ms);
            r.record_ok(OpKind::Put, done, done, done);
        }
        let records = r.finish();
        let f = &analyze(
            &records,
            &[applied(0, 1000, 1000)],
            Duration::from_secs(3),
            Duration::from_secs(1),
        )[0];
        assert_eq!(f.last_success_before_s, Some(1.0));
        assert_eq!(f.first_success_after_s, None);
        assert!((f.unavailable_s - 2.0).abs() < 1e-9);
        assert_eq!(f.first_write_after_s, None);
        assert_eq!((f.during.from_s, f.during.to_s), (1.0, 3.0));
    }
}
