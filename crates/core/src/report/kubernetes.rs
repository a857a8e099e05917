//! The apiserver's requests in Kubernetes' terms (the report's `kubernetes`): each
//! (resource, verb)'s latency against Kubernetes' SLO for its verb, with its failures,
//! conflicts and retries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Distribution;
use crate::op::ErrorCode;
use crate::recorder::kubernetes::{RequestRecord, Requests};
use crate::workload::kubernetes::{RequestKind, Verb};

/// What the run's apiserver requests did, by resource and verb.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KubernetesReport {
    /// Each (resource, verb) the run sent, in the order of [`RequestKind`] (resource, then
    /// verb).
    pub requests: Vec<RequestReport>,
}

/// One (resource, verb)'s requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestReport {
    /// The resource, as in its key (`pods`, `leases`, `minions`, `events`).
    pub resource: String,
    /// What the requests did.
    pub verb: Verb,
    /// Successful requests.
    pub ok: u64,
    /// Failed requests by gRPC code name; only codes that occurred.
    pub errors: BTreeMap<String, u64>,
    /// Failed requests, all codes.
    pub errors_total: u64,
    /// Latency of the successes (completion minus intended start), microseconds.
    #[serde(rename = "latency_us")]
    pub latency: Distribution,
    /// Kubernetes' SLO for the verb and whether the p99 met it.
    pub slo: SloReport,
    /// Compares that failed within the successes (stale revisions, each retried).
    pub conflicts: u64,
    /// Attempts beyond the first within the successes.
    pub retries: u64,
}

/// A (resource, verb)'s p99 latency against Kubernetes' SLO for its verb
/// ([`Verb::slo`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloReport {
    /// The SLO's class: `mutating`, `single-object read` or `list`.
    pub class: String,
    /// The p99 the class allows, seconds.
    pub limit_s: f64,
    /// Whether the run's p99 was within it.
    pub verdict: SloVerdict,
}

/// Whether a (resource, verb) met its SLO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SloVerdict {
    /// Its p99 was within the limit.
    Met,
    /// Its p99 was over the limit.
    Missed,
    /// No request succeeded: nothing to hold to it, and not met.
    NoSuccesses,
}

impl SloVerdict {
    /// As the text report says it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Met => "met",
            Self::Missed => "missed",
            Self::NoSuccesses => "no successful requests",
        }
    }
}

impl KubernetesReport {
    /// The report of the merged `requests`, whose slots `kinds` names; `None` when the run
    /// recorded none.
    #[must_use]
    pub fn from_requests(kinds: &[RequestKind], requests: &Requests) -> Option<Self> {
        let mut rows: Vec<RequestReport> = requests
            .iter()
            .filter_map(|(slot, r)| kinds.get(slot).map(|k| RequestReport::from_record(k, r)))
            .collect();
        rows.sort_by(|a, b| (&a.resource, a.verb).cmp(&(&b.resource, b.verb)));
        (!rows.is_empty()).then_some(Self { requests: rows })
    }
}

impl RequestReport {
    fn from_record(kind: &RequestKind, r: &RequestRecord) -> Self {
        let errors = ErrorCode::ALL
            .into_iter()
            .filter(|c| r.errors[c.index()] > 0)
            .map(|c| (c.name().to_owned(), r.errors[c.index()]))
            .collect();
        let (class, limit) = kind.verb.slo();
        let p99_us = if r.ok == 0 { 0 } else { r.latency.value_at_quantile(0.99) };
        let verdict = match r.ok {
            0 => SloVerdict::NoSuccesses,
            _ if u128::from(p99_us) <= limit.as_micros() => SloVerdict::Met,
            _ => SloVerdict::Missed,
        };
        Self {
            resource: kind.resource.clone(),
            verb: kind.verb,
            ok: r.ok,
            errors,
            errors_total: r.errors_total(),
            latency: Distribution::new(r.latency.clone()),
            slo: SloReport { class: class.to_owned(), limit_s: limit.as_secs_f64(), verdict },
            conflicts: r.conflicts,
            retries: r.retries,
        }
    }

    /// Failed compares per successful request (an update's conflicts per update); 0 with
    /// no success.
    #[must_use]
    pub fn conflicts_per_request(&self) -> f64 {
        if self.ok == 0 { 0.0 } else { self.conflicts as f64 / self.ok as f64 }
    }
}
