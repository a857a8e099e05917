//! The report of one client step ([`crate::step`]): its figures on their own, as if it had
//! been a run of its own number of clients.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{Distribution, round3};
use crate::recorder::StepRecord;
use crate::step::ClientStep;

/// One step of a client-steps run, measured on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Logical clients the step had send.
    pub clients: u32,
    /// The logical clients that sent at least one request in it: `clients`, unless the step
    /// ended before some of them had a request to send.
    pub active_clients: u64,
    /// Requests the step asked for, when it ended by count.
    pub total: Option<u64>,
    /// The time the step was given, seconds, when it ended by time.
    pub planned_s: Option<f64>,
    /// When the step started, seconds since measurement started.
    pub start_s: f64,
    /// From its start to the last completion of a request it sent, seconds.
    pub duration_s: f64,
    /// Successful requests.
    pub ok: u64,
    /// Failed requests, all codes.
    pub errors_total: u64,
    /// Successful requests per second of the step's duration.
    pub throughput: f64,
    /// Latency of the successful requests (completion minus intended start), every
    /// operation kind together, microseconds.
    #[serde(rename = "latency_us")]
    pub latency: Distribution,
}

impl StepReport {
    /// The report of `step` from what the workers recorded of it, merged, with times from
    /// `measure_start`.
    #[must_use]
    pub fn from_record(step: &ClientStep, record: &StepRecord, measure_start: Instant) -> Self {
        let since = |t: Instant| t.saturating_duration_since(measure_start).as_secs_f64();
        let started = record.started.unwrap_or(measure_start);
        let duration_s = record
            .last_done
            .map_or(0.0, |done| done.saturating_duration_since(started).as_secs_f64());
        Self {
            clients: step.clients,
            active_clients: record.clients,
            total: step.total,
            planned_s: step.duration.map(|d| d.as_secs_f64()),
            start_s: round3(since(started)),
            duration_s,
            ok: record.ok,
            errors_total: record.errors,
            throughput: if duration_s > 0.0 { record.ok as f64 / duration_s } else { 0.0 },
            latency: Distribution::new(record.latency.clone()),
        }
    }

    /// Requests the step sent: ok plus errors.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.ok + self.errors_total
    }
}
