//! Everything recorded for one operation kind on one worker, and the sample message kept
//! per error code.

use hdrhistogram::Histogram;

use super::interval::new_interval_histogram;
use super::{IntervalSample, Timeline, new_histogram};
use crate::op::ErrorCode;

/// Adds the plain counts of one kind's requests in `$from` to those in `$into`: an
/// [`OpRecord`]'s or a [`crate::report::OpReport`]'s, which keep them alike. The one list of
/// them, for both merges (a worker's record into the run's, here; a shard's report into
/// the merged one, in `merge`), so that a count added to both is summed in both. A macro,
/// as the two types keep them as fields of their own: a report's are its JSON's.
macro_rules! add_counts {
    ($into:ident, $from:ident) => {{
        $into.ok += $from.ok;
        $into.clamped += $from.clamped;
        $into.keys += $from.keys;
        $into.value_bytes += $from.value_bytes;
        $into.retries += $from.retries;
        $into.conflicts += $from.conflicts;
        $into.pages += $from.pages;
    }};
}
pub(crate) use add_counts;

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
    /// characters; `None` until [`super::Recorder::record_error_message`] gives one.
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
    /// Of the failed (as `Cancelled`), the requests abandoned unanswered at a stop or the
    /// run's end: how long each had been out by then, from its intended start, us. `None`
    /// until one is ([`super::Recorder::record_abandoned`]).
    pub abandoned: Option<Box<Histogram<u64>>>,
    /// Finished intervals.
    pub intervals: Vec<IntervalSample>,
    /// Which milliseconds of measured time saw a success of this kind.
    pub successes: Timeline,
    pub(super) current: Histogram<u64>,
    pub(super) current_index: u64,
    pub(super) current_ok: u64,
    pub(super) current_errors: u64,
}

impl OpRecord {
    pub(super) fn new() -> Self {
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
            abandoned: None,
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

    pub(super) fn roll_to(&mut self, index: u64) {
        if index == self.current_index {
            return;
        }
        self.flush_interval();
        self.current_index = index;
    }

    pub(super) fn flush_interval(&mut self) {
        if self.current_ok == 0 && self.current_errors == 0 {
            return;
        }
        // Exactly as long as the interval's distinct values: a run keeps up to
        // `MAX_INTERVALS` of these per worker and kind, and a collect's doubling would keep
        // up to twice what they hold.
        let mut buckets = Vec::with_capacity(self.current.iter_recorded().count());
        buckets.extend(
            self.current.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())),
        );
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
    pub(super) fn coarsen(&mut self, by: u32) {
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

    pub(super) fn merge(&mut self, mut other: OpRecord) {
        other.flush_interval();
        self.flush_interval();
        self.latency.add(&other.latency).expect("same bounds");
        self.service.add(&other.service).expect("same bounds");
        add_counts!(self, other);
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        for (mine, theirs) in self.error_messages.iter_mut().zip(other.error_messages) {
            if mine.is_none() {
                *mine = theirs;
            }
        }
        match (&mut self.abandoned, other.abandoned) {
            (Some(mine), Some(theirs)) => mine.add(&*theirs).expect("same bounds"),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        self.intervals.append(&mut other.intervals);
        self.successes.union(&other.successes);
    }
}

/// The longest sample error message kept, in characters; a longer one is cut there.
pub const ERROR_MESSAGE_MAX_CHARS: usize = 200;

/// `message` as kept in [`OpRecord::error_messages`]: trimmed, on one line, at most
/// [`ERROR_MESSAGE_MAX_CHARS`] characters (so cut on a character boundary). `None` when
/// nothing is left.
#[cold]
pub(super) fn sample_message(message: &str) -> Option<Box<str>> {
    let kept: String = message
        .trim()
        .chars()
        .take(ERROR_MESSAGE_MAX_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    (!kept.is_empty()).then(|| kept.into_boxed_str())
}
