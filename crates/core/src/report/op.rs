//! One operation kind's results ([`OpReport`]) and their time series ([`Interval`]).

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{Distribution, round3};
use crate::op::ErrorCode;
use crate::recorder::{IntervalSample, IntervalSum, OpRecord};

/// Results of one operation kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OpReport {
    /// Successful requests.
    pub ok: u64,
    /// Failed requests by gRPC code name (`InvalidArgument`); only codes that occurred.
    pub errors: BTreeMap<String, u64>,
    /// Failed requests, all codes.
    pub errors_total: u64,
    /// Why requests failed: the first message seen per gRPC code name, for codes in
    /// `errors` whose failures carried one (at most 200 characters, on one line).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_messages: BTreeMap<String, String>,
    /// Measured wall time, seconds.
    pub duration_s: f64,
    /// Successful requests per second of measured wall time.
    pub throughput: f64,
    /// Latency (completion minus intended start), microseconds.
    #[serde(rename = "latency_us")]
    pub latency: Distribution,
    /// Service time (completion minus actual send), microseconds.
    #[serde(rename = "service_time_us")]
    pub service_time: Distribution,
    /// Values outside 1 us .. 1 h, clamped into the histograms.
    pub clamped: u64,
    /// Keys written or read by the successful requests (a count-only range counts the keys
    /// it counted).
    pub keys: u64,
    /// Value bytes written or read by the successful requests.
    pub value_bytes: u64,
    /// Attempts beyond the first within the successful requests (STM conflicts).
    pub retries: u64,
    /// Compares that failed within the successful requests (an apiserver update's or
    /// delete's stale revision, each followed by a retry).
    pub conflicts: u64,
    /// Pages the successful requests read (an apiserver list's).
    pub pages: u64,
    /// Of the failed (as `Cancelled`), the requests abandoned unanswered at a stop or the
    /// run's end (after its grace): how long each had been out by then, from its intended
    /// start, microseconds. Their latency is at least that, and unknown. Absent when none
    /// was.
    #[serde(rename = "abandoned_us", default, skip_serializing_if = "Option::is_none")]
    pub abandoned: Option<Distribution>,
    /// The time series, one entry per interval from the start of measurement.
    pub intervals: Vec<Interval>,
}

impl OpReport {
    /// Builds the report of one kind from its merged record over `duration` of measurement,
    /// with intervals `interval` long.
    #[must_use]
    pub fn from_record(record: &OpRecord, duration: Duration, interval: Duration) -> Self {
        let errors = ErrorCode::ALL
            .into_iter()
            .filter(|c| record.errors[c.index()] > 0)
            .map(|c| (c.name().to_owned(), record.errors[c.index()]))
            .collect();
        let error_messages = ErrorCode::ALL
            .into_iter()
            .filter(|c| record.errors[c.index()] > 0)
            .filter_map(|c| {
                let message = record.error_messages[c.index()].as_deref()?;
                Some((c.name().to_owned(), message.to_owned()))
            })
            .collect();
        let secs = duration.as_secs_f64();
        Self {
            ok: record.ok,
            errors,
            error_messages,
            errors_total: record.errors_total(),
            duration_s: secs,
            throughput: if secs > 0.0 { record.ok as f64 / secs } else { 0.0 },
            latency: Distribution::new(record.latency.clone()),
            service_time: Distribution::new(record.service.clone()),
            clamped: record.clamped,
            keys: record.keys,
            value_bytes: record.value_bytes,
            retries: record.retries,
            conflicts: record.conflicts,
            pages: record.pages,
            abandoned: record.abandoned.as_deref().map(|h| Distribution::new(h.clone())),
            intervals: Interval::series(&record.intervals, interval),
        }
    }

    /// Count of one error code.
    #[must_use]
    pub fn errors_of(&self, code: ErrorCode) -> u64 {
        self.errors.get(code.name()).copied().unwrap_or(0)
    }

    /// Of the requests abandoned at the end ([`OpReport::abandoned`]), those that had been
    /// out for less than `bound` by then: whether they would have been answered within it
    /// is unknown.
    #[must_use]
    pub fn abandoned_within(&self, bound: Duration) -> u64 {
        let bound_us = u64::try_from(bound.as_micros()).unwrap_or(u64::MAX);
        self.abandoned.as_ref().map_or(0, |d| {
            let h = d.histogram();
            h.iter_recorded()
                .filter(|v| h.highest_equivalent(v.value_iterated_to()) < bound_us)
                .map(|v| v.count_at_value())
                .sum()
        })
    }
}

/// One interval of the time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interval {
    /// Start of the interval, seconds since measurement started.
    pub t_s: f64,
    /// Successful requests completed in it.
    pub count: u64,
    /// Failed requests completed in it.
    pub errors: u64,
    /// Smallest latency, us.
    pub min_us: u64,
    /// Mean latency, us.
    pub mean_us: f64,
    /// Median latency, us.
    pub p50_us: u64,
    /// 90th percentile latency, us.
    pub p90_us: u64,
    /// 99th percentile latency, us.
    pub p99_us: u64,
    /// Largest latency, us.
    pub max_us: u64,
}

impl Interval {
    /// Merges the workers' samples into a contiguous series; intervals with no completion
    /// are present with zero counts.
    #[must_use]
    pub fn series(samples: &[IntervalSample], interval: Duration) -> Vec<Interval> {
        let Some(last) = samples.iter().map(|s| s.index).max() else { return Vec::new() };
        let mut by_index: Vec<(u64, u64, Option<Histogram<u64>>)> =
            (0..=last).map(|_| (0, 0, None)).collect();
        for s in samples {
            s.add_to(&mut by_index[s.index as usize]);
        }
        by_index
            .into_iter()
            .enumerate()
            .map(|(i, sum)| Interval::from_sum(round3(i as f64 * interval.as_secs_f64()), sum))
            .collect()
    }

    /// One interval starting `t_s` seconds into measurement, from the samples of it that
    /// the workers recorded (any number, any order).
    #[must_use]
    pub fn of<'a>(t_s: f64, samples: impl IntoIterator<Item = &'a IntervalSample>) -> Interval {
        let mut sum = (0, 0, None);
        for s in samples {
            s.add_to(&mut sum);
        }
        Interval::from_sum(t_s, sum)
    }

    fn from_sum(t_s: f64, (ok, errors, h): IntervalSum) -> Interval {
        let q = |q: f64| h.as_ref().map_or(0, |h| h.value_at_quantile(q));
        Interval {
            t_s,
            count: ok,
            errors,
            min_us: h.as_ref().map_or(0, Histogram::min),
            mean_us: round3(h.as_ref().map_or(0.0, Histogram::mean)),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            max_us: h.as_ref().map_or(0, Histogram::max),
        }
    }
}
