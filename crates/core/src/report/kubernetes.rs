//! The apiserver's requests in Kubernetes' terms (the report's `kubernetes`): each
//! (resource, verb)'s latency against Kubernetes' SLO for its verb, with its failures,
//! conflicts and retries, the node leases' longest gaps between renewals, and whether the
//! run sustained its `[kubernetes] nodes` within the SLOs ([`verdict`]). A resource's watch
//! is a row too (verb `watch`): its latency is the delivery lag of the worker's own writes'
//! events, held to no SLO (Kubernetes has no official one), with its progress
//! notifications and the consistent reads' waits for them.
//!
//! The verdict is scoped as Kubernetes scopes its SLOs ([`VerdictScope`]): per API call,
//! each list page a call of its own; etcd's p99 of the 1 s calls held to its share of the
//! second (`[kubernetes] etcd-share`), the whole SLO's verdict beside it; counts,
//! consistent-read probes and watches reported, not judged; and every verdict says that it
//! is etcd's side and which apiserver model it assumed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Distribution, Report};
use crate::op::ErrorCode;
use crate::recorder::kubernetes::{
    Progress, Renewals, RequestRecord, Requests, page_bucket_bounds,
};
use crate::recorder::new_histogram;
use crate::scenario::Scenario;
use crate::scenario::kubernetes::{DEFAULT_ETCD_SHARE, Kubernetes};
use crate::workload::kubernetes::{RequestKind, Verb};
use crate::workload::{Operation, SizeDistribution};

/// What the run's apiserver requests did, by resource and verb.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KubernetesReport {
    /// The scenario's `[kubernetes] nodes`, when the run modelled a cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    /// Every (resource, verb) met its SLO and no node lease went past the grace period
    /// ([`verdict`]).
    pub sustained: bool,
    /// Each (resource, verb) the run sent, in the order of [`RequestKind`] (resource, then
    /// verb).
    pub requests: Vec<RequestReport>,
    /// Requests etcd failed with "mvcc: required revision has been compacted" (ErrCompacted:
    /// a list whose later pages' revision was compacted meanwhile), all resources and verbs;
    /// among their errors too.
    pub compacted: u64,
    /// The node leases' renewals, when the run renewed any (`k8s-update` of `leases`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_leases: Option<NodeLeaseReport>,
    /// What the verdict is of: etcd's side of the calls, under which apiserver model, with
    /// which share of the 1 s budget.
    pub scope: VerdictScope,
    /// The store in steady state, in runs of a `[kubernetes]` model: what was preloaded as
    /// history, and what the compactor and the leases' expiry did during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyStateReport>,
    /// Each apiserver's watch of each cached resource: what etcd sent each (the fan-out:
    /// every event goes to every apiserver), by apiserver, then resource.
    #[serde(default)]
    pub watch_streams: Vec<WatchStreamReport>,
    /// The size each resource's objects were written with ([`ObjectSizeReport::of`]), the
    /// assumption a verdict rests on beside the apiserver model.
    #[serde(default)]
    pub object_sizes: Vec<ObjectSizeReport>,
}

/// What a verdict judges: etcd's side of Kubernetes' API calls (measured at etcd's client,
/// where the apiserver's storage sits, not at the apiserver), as the apiserver model the
/// run assumed sends them, holding etcd to its share of the 1 s calls' budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictScope {
    /// Always `etcd`: the latencies are etcd's answers to the apiserver's storage, not the
    /// apiserver's to its clients.
    pub side: String,
    /// The apiserver model the run assumed, in words
    /// ([`Kubernetes::apiserver_model`]).
    pub apiserver: String,
    /// etcd's share of the 1 s SLO of mutating calls and single-object reads, the fraction
    /// its p99 is held to (`[kubernetes] etcd-share`).
    pub etcd_share: f64,
}

impl VerdictScope {
    /// The scope of a run of the `[kubernetes]` model `k`, or of a scenario's own `k8s-*`
    /// operations (no model: the default share).
    #[must_use]
    pub fn of(k: Option<&Kubernetes>) -> Self {
        Self {
            side: "etcd".to_owned(),
            apiserver: k.map_or_else(
                || {
                    "etcdlat's apiserver model, as the scenario's own k8s-* operations send \
                     it (no [kubernetes] model)"
                        .to_owned()
                },
                Kubernetes::apiserver_model,
            ),
            etcd_share: k.map_or(DEFAULT_ETCD_SHARE, |k| k.etcd_share),
        }
    }

    /// The p99 etcd is held to for a call whose whole SLO is `whole`: its share of the 1 s
    /// calls', a list page's whole 30 s.
    #[must_use]
    pub fn etcd_limit(&self, whole: Duration) -> Duration {
        if whole <= Duration::from_secs(1) { whole.mul_f64(self.etcd_share) } else { whole }
    }

    /// The scope in one sentence, as the reports state it.
    #[must_use]
    pub fn sentence(&self) -> String {
        format!(
            "{}-side verdict (latency of etcd's answers to the apiserver's storage, not of the \
             apiserver's to its clients; etcd held to {:.0}% of the 1 s calls' SLO, each list \
             page to the list SLO); assumes {}",
            self.side,
            self.etcd_share * 100.0,
            self.apiserver
        )
    }
}

/// A modelled cluster's store in steady state: the history and events written before
/// measuring ([`crate::scenario::Kubernetes::history`],
/// [`crate::scenario::Kubernetes::event_preload`]), and, measured, the apiserver's
/// compactions and the leases whose expiry etcd revoked, deleting their keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyStateReport {
    /// Writes preloaded as history after the objects (lease renewals, status updates,
    /// pods' lives over `[kubernetes] history`).
    pub history_writes: u64,
    /// Events preloaded (an `event-ttl` of them).
    pub preloaded_events: u64,
    /// Leases the preloaded events are on, each with the TTL its age leaves it.
    pub preloaded_event_leases: u64,
    /// Compactions the apiserver's compactor made during the measured run.
    pub compactions: u64,
    /// The revision of its last compaction; 0 with none.
    pub compacted_revision: i64,
    /// Leases that expired during the measured run and whose revocation deleted keys:
    /// the distinct revisions of the deletes etcd made under the resources that live on
    /// leases (events, master leases), none of which the run deletes itself.
    pub leases_expired: u64,
    /// Keys those expiries deleted.
    pub keys_expired: u64,
    /// The most keys one expiry deleted (at once, in one revision).
    pub largest_expiry_keys: u64,
}

/// The sizes one resource's objects were written with, as its operations (and a
/// `[kubernetes]` model's preload) drew them: fixed (`min_bytes` = `max_bytes`), or drawn
/// per object from a distribution ([`SizeDistribution`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectSizeReport {
    /// The resource, as in its key (`pods`, `minions`, `events`).
    pub resource: String,
    /// The mean size, bytes (rounded).
    pub mean_bytes: u64,
    /// The smallest size drawn from, bytes.
    pub min_bytes: u64,
    /// The largest size drawn from, bytes.
    pub max_bytes: u64,
}

impl ObjectSizeReport {
    /// The sizes of each resource `scenario` writes, preloaded or in its operations (creates,
    /// updates, lives, events): one row per resource and distinct size, in the order met.
    #[must_use]
    pub fn of(scenario: &Scenario) -> Vec<Self> {
        let preload = scenario.kubernetes.as_ref().map(Kubernetes::preload).unwrap_or_default();
        let preloaded = preload.iter().map(|o| (o.resource.as_str(), &o.object_size));
        let workload = scenario.workload();
        let written = workload.iter().filter_map(|(_, op)| match op {
            Operation::K8sCreate(o) | Operation::K8sUpdate(o) => {
                Some((o.resource.as_str(), &o.object_size))
            }
            Operation::K8sPodLifecycle(l) => Some((l.resource.as_str(), &l.object_size)),
            Operation::K8sEvent(e) => Some(("events", &e.object_size)),
            _ => None,
        });
        let mut seen: Vec<(&str, &SizeDistribution)> = Vec::new();
        for (resource, size) in preloaded.chain(written) {
            if !seen.iter().any(|(r, s)| *r == resource && *s == size) {
                seen.push((resource, size));
            }
        }
        seen.into_iter()
            .map(|(resource, size)| Self {
                resource: resource.to_owned(),
                mean_bytes: size.mean().round() as u64,
                min_bytes: size.min(),
                max_bytes: size.max(),
            })
            .collect()
    }
}

/// One apiserver's watch of one resource, or of one namespace of it, which feeds that
/// apiserver's watch cache of those objects alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchStreamReport {
    /// The apiserver, 0 to `apiservers - 1`.
    pub apiserver: u32,
    /// The resource watched.
    pub resource: String,
    /// The namespace watched, when the stream watches one of the resource's (node leases'
    /// `kube-node-lease`, the apiservers' identity leases' `kube-system`); `null`: the
    /// whole resource.
    pub namespace: Option<String>,
    /// Events etcd delivered on it while measured.
    pub events: u64,
    /// Progress notifications etcd delivered on it while measured.
    pub progress_notifications: u64,
    /// Whether etcd cancelled it for a compaction (its cache then stopped being fed).
    pub compacted: u64,
}

/// How long node leases went without a successful renewal: per node, the longest of the
/// time from the run's start to its first renewal, between two, and from its last to the
/// run's end; then over the nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeLeaseReport {
    /// Node leases followed: the objects of the renewals' layout, renewed in the run or not.
    pub nodes: u64,
    /// The longest gap of any node, microseconds.
    pub max_gap_us: u64,
    /// The 99th percentile of the nodes' longest gaps, microseconds.
    pub p99_gap_us: u64,
    /// The node-monitor grace period the gaps are held to, seconds (Kubernetes' 40 s, or
    /// the scenario's `[kubernetes] node-monitor-grace-period`).
    pub not_ready_after_s: f64,
    /// Nodes whose longest gap was longer: the node controller would have marked them
    /// NotReady.
    pub not_ready: u64,
}

impl NodeLeaseReport {
    fn from_renewals(renewals: &Renewals, grace: Duration) -> Option<Self> {
        let gaps = renewals.longest_us();
        let mut histogram = new_histogram();
        for &gap in gaps {
            histogram.saturating_record(gap);
        }
        let grace_us = u64::try_from(grace.as_micros()).unwrap_or(u64::MAX);
        let max_gap_us = gaps.iter().copied().max().unwrap_or(0);
        (!gaps.is_empty()).then(|| Self {
            nodes: gaps.len() as u64,
            max_gap_us,
            // The histogram answers with its bucket's highest value: never past the largest.
            p99_gap_us: histogram.value_at_quantile(0.99).min(max_gap_us),
            not_ready_after_s: grace.as_secs_f64(),
            not_ready: gaps.iter().filter(|&&gap| gap > grace_us).count() as u64,
        })
    }
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
    /// Of the failed, those etcd answered with ErrCompacted ("mvcc: required revision has
    /// been compacted"), also counted under their code in `errors`.
    pub compacted: u64,
    /// Latency of the successes (completion minus intended start), microseconds; for a
    /// watch, from each of the run's own writes' answers to its event's arrival on the
    /// run's watch cache (its successes are those events; 0 when the event was read
    /// before the answer, both having arrived together or the event first).
    #[serde(rename = "latency_us")]
    pub latency: Distribution,
    /// Kubernetes' SLO for the verb and whether etcd's side met it; none (null) for what is
    /// not judged (`judged` false).
    #[serde(default)]
    pub slo: Option<SloReport>,
    /// Whether the verdict holds it to an SLO as an API call ([`Verb::judged`]): counts,
    /// consistent-read probes and watches are the apiserver's own calls, reported only.
    pub judged: bool,
    /// Keys etcd sent a successful list, on average (all its pages; none for what the
    /// watch cache served: a consistent list's are its continue pages' from etcd, or its
    /// fallback's); null for other verbs and for lists without a success.
    pub keys_per_list: Option<f64>,
    /// A list's pages, each an API call of its own; null for other verbs.
    #[serde(default)]
    pub page_calls: Option<PageCallReport>,
    /// Compares that failed within the successes (stale revisions, each retried).
    pub conflicts: u64,
    /// Attempts beyond the first within the successes.
    pub retries: u64,
    /// A list's successes by the pages they took, in buckets of powers of two (1, 2, 3-4,
    /// 5-8, ...), only those any fell in; empty for other verbs.
    pub pages: Vec<PageBucket>,
    /// A watch's progress notifications and the consistent reads' waits for them; null
    /// for other verbs.
    #[serde(default)]
    pub progress: Option<ProgressReport>,
}

/// A resource's watch caches' progress notifications, and how long consistent reads
/// waited for the caches' revision to reach etcd's: from the read's request for progress
/// to the delivery that caught the cache up (reads that gave up after the apiserver's 3 s
/// are among the consistent lists' errors, not here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressReport {
    /// Progress notifications received, all workers' caches.
    pub notifications: u64,
    /// Consistent reads that waited for progress and were caught up.
    pub waits: u64,
    /// The longest wait, microseconds (0 with none).
    pub wait_max_us: u64,
    /// The 99th percentile of the waits, microseconds (0 with none).
    pub wait_p99_us: u64,
}

impl ProgressReport {
    fn from_progress(p: &Progress) -> Self {
        let (waits, max) = (p.waits.len(), p.waits.max());
        Self {
            notifications: p.notifications,
            waits,
            wait_max_us: max,
            wait_p99_us: if waits == 0 { 0 } else { p.waits.value_at_quantile(0.99).min(max) },
        }
    }
}

/// A list's pages as API calls: each page (a `continue` request) is a call Kubernetes holds
/// to the list SLO on its own, not the whole list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCallReport {
    /// Pages the successful lists read.
    pub pages: u64,
    /// Pages whose answer took longer than the list SLO (from the page's send).
    pub over_limit: u64,
    /// The 99th percentile of each list's slowest page, microseconds.
    pub slowest_p99_us: u64,
    /// The slowest page of all, microseconds.
    pub slowest_max_us: u64,
}

/// The lists that took between `pages_min` and `pages_max` pages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageBucket {
    /// The fewest pages of the bucket.
    pub pages_min: u64,
    /// The most pages of the bucket.
    pub pages_max: u64,
    /// Lists that took that many pages.
    pub count: u64,
    /// Their p99 latency, microseconds.
    pub p99_us: u64,
    /// Their largest latency, microseconds.
    pub max_us: u64,
}

/// A (resource, verb)'s p99 latency against Kubernetes' SLO for its verb
/// ([`Verb::slo`]): etcd's side judged against etcd's share of it, and beside it the whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloReport {
    /// The SLO's class: `mutating`, `single-object read` or `list`.
    pub class: String,
    /// What a call is: `request`, or for a list `page` (each page judged on its own).
    pub per: String,
    /// The p99 the class allows a whole call at the apiserver, seconds.
    pub limit_s: f64,
    /// The p99 etcd's side is held to, seconds: its share of the 1 s classes', a page's
    /// whole 30 s.
    pub etcd_limit_s: f64,
    /// Whether etcd's p99 (a list's: its pages') was within `etcd_limit_s`: the verdict.
    pub verdict: SloVerdict,
    /// Whether it was within the whole `limit_s`, reported beside.
    pub whole_verdict: SloVerdict,
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
    /// The report of the merged `requests`, whose slots `kinds` names, of a cluster of
    /// `nodes` (when modelled), node leases held to `grace` without a renewal; `None` when
    /// the run recorded none.
    ///
    /// The verdict's `scope` says what it judged and under which apiserver model.
    #[must_use]
    pub fn from_requests(
        kinds: &[RequestKind],
        requests: &Requests,
        nodes: Option<u64>,
        grace: Duration,
        scope: VerdictScope,
    ) -> Option<Self> {
        let node_leases = requests
            .iter()
            .find_map(|(_, r)| r.renewals.as_ref())
            .and_then(|renewals| NodeLeaseReport::from_renewals(renewals, grace));
        let mut rows: Vec<RequestReport> = requests
            .iter()
            .filter_map(|(slot, r)| {
                kinds.get(slot).map(|k| RequestReport::from_record(k, r, &scope))
            })
            .collect();
        rows.sort_by(|a, b| (&a.resource, a.verb).cmp(&(&b.resource, b.verb)));
        let compacted = rows.iter().map(|r| r.compacted).sum();
        let mut watch_streams: Vec<WatchStreamReport> = requests
            .streams()
            .iter()
            .filter_map(|w| {
                Some(WatchStreamReport {
                    apiserver: w.apiserver,
                    resource: kinds.get(w.slot)?.resource.clone(),
                    namespace: w.namespace.clone(),
                    events: w.events,
                    progress_notifications: w.progress_notifications,
                    compacted: w.compacted,
                })
            })
            .collect();
        watch_streams.sort_by(|a, b| {
            (a.apiserver, &a.resource, &a.namespace).cmp(&(b.apiserver, &b.resource, &b.namespace))
        });
        let mut report = Self {
            nodes,
            sustained: false,
            requests: rows,
            compacted,
            node_leases,
            scope,
            steady_state: None,
            watch_streams,
            object_sizes: Vec::new(),
        };
        report.sustained = report.verdict().sustained;
        (!report.requests.is_empty()).then_some(report)
    }

    /// Whether the run met every SLO, and what it missed.
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        let missed: Vec<Missed> = self
            .requests
            .iter()
            .filter(|r| r.judged)
            .filter_map(|r| Some((r, r.slo.as_ref()?)))
            .filter(|(_, slo)| slo.verdict != SloVerdict::Met)
            .map(|(r, slo)| Missed {
                resource: r.resource.clone(),
                verb: r.verb,
                verdict: slo.verdict,
                p99_us: r
                    .page_calls
                    .as_ref()
                    .map_or_else(|| r.latency.quantile_us(0.99), |p| p.slowest_p99_us),
                limit_s: slo.etcd_limit_s,
                pages_over: r.page_calls.as_ref().map(|p| (p.over_limit, p.pages)),
            })
            .collect();
        let not_ready = self.node_leases.as_ref().map_or(0, |n| n.not_ready);
        Verdict {
            nodes: self.nodes,
            sustained: missed.is_empty() && not_ready == 0,
            missed,
            not_ready,
            scope: Some(self.scope.clone()),
        }
    }
}

/// Whether a run sustained its Kubernetes traffic within the SLOs: every (resource, verb)
/// held to an SLO (all but watches) met Kubernetes' SLO for its verb and no node lease went past the node-monitor grace
/// period. What a search over `nodes` (`--find-max`) bisects on.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The scenario's `[kubernetes] nodes`, when the run modelled a cluster.
    pub nodes: Option<u64>,
    /// Every SLO met, no node NotReady (and the run sent the apiserver's requests).
    pub sustained: bool,
    /// The (resource, verb)s that did not meet their SLO, in the report's order.
    pub missed: Vec<Missed>,
    /// Nodes whose lease went past the grace period without a renewal.
    pub not_ready: u64,
    /// What it judged ([`VerdictScope`]); `None` when the run sent no apiserver request.
    pub scope: Option<VerdictScope>,
}

/// A (resource, verb) that did not meet its SLO.
#[derive(Debug, Clone, PartialEq)]
pub struct Missed {
    /// The resource.
    pub resource: String,
    /// The verb.
    pub verb: Verb,
    /// Missed, or no request succeeded.
    pub verdict: SloVerdict,
    /// Its p99 latency, microseconds (0 with no success); a list's: the p99 of its lists'
    /// slowest pages.
    pub p99_us: u64,
    /// The p99 etcd's side is held to, seconds ([`SloReport::etcd_limit_s`]).
    pub limit_s: f64,
    /// A list's pages over the list SLO and all its pages.
    pub pages_over: Option<(u64, u64)>,
}

impl Missed {
    /// What missed, as a search names what bound it: `pods list page p99`, `leases update
    /// p99`.
    #[must_use]
    pub fn binding(&self) -> String {
        let per = if self.pages_over.is_some() { " page" } else { "" };
        format!("{} {}{per} p99", self.resource, self.verb.name())
    }
}

/// Whether `report`'s run sustained its Kubernetes traffic within the SLOs
/// ([`KubernetesReport::verdict`]); a run that sent no apiserver request did not.
#[must_use]
pub fn verdict(report: &Report) -> Verdict {
    report.kubernetes.as_ref().map_or_else(
        || Verdict {
            nodes: report.scenario.kubernetes.as_ref().map(|k| k.nodes),
            sustained: false,
            missed: Vec::new(),
            not_ready: 0,
            scope: None,
        },
        KubernetesReport::verdict,
    )
}

impl RequestReport {
    fn from_record(kind: &RequestKind, r: &RequestRecord, scope: &VerdictScope) -> Self {
        let errors = ErrorCode::ALL
            .into_iter()
            .filter(|c| r.errors[c.index()] > 0)
            .map(|c| (c.name().to_owned(), r.errors[c.index()]))
            .collect();
        let p99_us = if r.ok == 0 { 0 } else { r.latency.value_at_quantile(0.99) };
        let page_calls = r.page_calls.as_ref().map(|p| PageCallReport {
            pages: p.pages,
            over_limit: p.over_limit,
            slowest_p99_us: p.slowest.value_at_quantile(0.99).min(p.slowest.max()),
            slowest_max_us: p.slowest.max(),
        });
        let judged = kind.verb.judged();
        let within = |limit: Duration| match (r.ok, &page_calls) {
            (0, _) => SloVerdict::NoSuccesses,
            // A page is a call: at most 1% of them over is a p99 within.
            (_, Some(p)) if p.over_limit.saturating_mul(100) <= p.pages => SloVerdict::Met,
            (_, Some(_)) => SloVerdict::Missed,
            _ if u128::from(p99_us) <= limit.as_micros() => SloVerdict::Met,
            _ => SloVerdict::Missed,
        };
        let slo = kind.verb.slo().filter(|_| judged).map(|(class, limit)| {
            let etcd_limit = scope.etcd_limit(limit);
            SloReport {
                class: class.to_owned(),
                per: if page_calls.is_some() { "page" } else { "request" }.to_owned(),
                limit_s: limit.as_secs_f64(),
                etcd_limit_s: etcd_limit.as_secs_f64(),
                verdict: within(etcd_limit),
                whole_verdict: within(limit),
            }
        });
        Self {
            resource: kind.resource.clone(),
            verb: kind.verb,
            ok: r.ok,
            errors,
            errors_total: r.errors_total(),
            compacted: r.compacted,
            latency: Distribution::new(r.latency.clone()),
            slo,
            judged,
            keys_per_list: r
                .page_calls
                .as_ref()
                .filter(|_| r.ok > 0)
                .map(|p| p.keys as f64 / r.ok as f64),
            page_calls,
            conflicts: r.conflicts,
            retries: r.retries,
            pages: r
                .pages
                .iter()
                .enumerate()
                .filter_map(|(k, h)| {
                    let h = h.as_ref().filter(|h| !h.is_empty())?;
                    let (pages_min, pages_max) = page_bucket_bounds(k);
                    Some(PageBucket {
                        pages_min,
                        pages_max,
                        count: h.len(),
                        p99_us: h.value_at_quantile(0.99).min(h.max()),
                        max_us: h.max(),
                    })
                })
                .collect(),
            progress: r.progress.as_ref().map(ProgressReport::from_progress),
        }
    }

    /// Failed compares per successful request (an update's conflicts per update); 0 with
    /// no success.
    #[must_use]
    pub fn conflicts_per_request(&self) -> f64 {
        if self.ok == 0 { 0.0 } else { self.conflicts as f64 / self.ok as f64 }
    }
}
