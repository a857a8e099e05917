//! The time series: one interval as a worker saw it, kept sparse until the workers'
//! intervals are merged.

use hdrhistogram::Histogram;

use super::{HIGHEST_US, INTERVAL_SIGFIG, LOWEST_US};

pub(super) fn new_interval_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, INTERVAL_SIGFIG)
        .expect("constant bounds are valid")
}

/// One interval of the time series as a worker saw it, kept sparse until the workers'
/// intervals are merged.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalSample {
    /// Interval number, counted from the start of measurement.
    pub index: u64,
    /// Successful requests completed in the interval.
    pub ok: u64,
    /// Failed requests completed in the interval.
    pub errors: u64,
    /// Latency histogram of the interval as (value in us, count) pairs.
    pub buckets: Vec<(u64, u64)>,
}

impl IntervalSample {
    /// Adds `other` (the same interval, or its neighbour being merged with it) into this one.
    pub(super) fn absorb(&mut self, other: IntervalSample) {
        self.ok += other.ok;
        self.errors += other.errors;
        if other.buckets.is_empty() {
            return;
        }
        let mine = std::mem::take(&mut self.buckets);
        let mut merged = Vec::with_capacity(mine.len().max(other.buckets.len()));
        let (mut a, mut b) = (mine.into_iter().peekable(), other.buckets.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    let (v, n) = a.next().expect("peeked");
                    (v, n + b.next().expect("peeked").1)
                }
                (Some(x), Some(y)) if x.0 < y.0 => a.next().expect("peeked"),
                (Some(_), None) => a.next().expect("peeked"),
                (_, Some(_)) => b.next().expect("peeked"),
                (None, None) => break,
            };
            merged.push(next);
        }
        self.buckets = merged;
    }
}

/// Interval samples added up: requests ok, failed, and the latency histogram of their
/// buckets (none until a sample has one).
pub(crate) type IntervalSum = (u64, u64, Option<Histogram<u64>>);

impl IntervalSample {
    /// Adds this sample's counts and latencies into `sum`.
    pub(crate) fn add_to(&self, sum: &mut IntervalSum) {
        sum.0 += self.ok;
        sum.1 += self.errors;
        if !self.buckets.is_empty() {
            let h = sum.2.get_or_insert_with(|| {
                Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, INTERVAL_SIGFIG)
                    .expect("constant bounds")
            });
            for &(v, n) in &self.buckets {
                h.record_n(v.clamp(LOWEST_US, HIGHEST_US), n).expect("clamped into bounds");
            }
        }
    }
}
