//! Steady state: the store a running cluster holds before a verdict (the objects, the
//! history of their updates between compactions, an `event-ttl` of events behind leases
//! that expire during the run), the compactor the model runs, and the bytes the quota counts.

use std::time::Duration;

use super::{ETCD_DEFAULT_QUOTA_BYTES, Kubernetes};
use crate::scenario::{Compaction, CompactionStyle, ScenarioError};
use crate::workload::kubernetes::EventOp;
use crate::workload::{Operation, SizeDistribution};

/// Bytes a stored key-value costs besides its value: the key (`/registry/pods/ns-0/pod-...`)
/// and bbolt's and the revision index's own entries, allowed for when comparing a preload
/// with the quota.
pub(super) const STORED_OVERHEAD_BYTES: u64 = 128;

/// bbolt's page: an entry over half of one fills whole pages of its own (two do not share a
/// page, and one over a page is stored on contiguous pages); smaller ones share pages.
/// Measured: 8,000 nodes' preload (240,000 pods of 8 KiB) filled etcd's 2 GiB quota after
/// about 195,000 writes, 11 KB a pod, where value and overhead alone are 8.3 KB; whole
/// pages count 12 KiB.
const PAGE_BYTES: u64 = 4096;

/// What one object of `object_size` bytes takes of the backend, as the quota counts it.
pub(super) fn stored_bytes(object_size: u64) -> u64 {
    let entry = object_size.saturating_add(STORED_OVERHEAD_BYTES);
    if entry > PAGE_BYTES / 2 {
        entry.div_ceil(PAGE_BYTES).saturating_mul(PAGE_BYTES)
    } else {
        entry
    }
}

/// What one object of `size` takes of the backend on average, as the quota counts it: the
/// mean of [`stored_bytes`] over the distribution (each object's whole pages, not the pages
/// of the mean size).
pub(super) fn stored_mean(size: &SizeDistribution) -> u64 {
    size.expected(|s| stored_bytes(s) as f64).round() as u64
}

/// The events a running cluster holds: one `event-ttl` of them, created at the model's
/// event rate, on the apiserver's reused leases. Window `k` (1 to `windows`) is the
/// events created `k` reuse times ago, on leases granted then with `ttl + reuse`: `ttl -
/// (k - 1) * reuse` of it is left, so the oldest window expires one reuse time into the
/// run, and one more window every reuse time after.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPreload {
    /// The events' operation: where they go, their size, TTL and lease reuse.
    pub op: EventOp,
    /// Windows of one reuse time each, the TTL over.
    pub windows: u64,
    /// Events created in one window.
    pub per_window: u64,
    /// A window's length: how long the apiserver reuses a lease (5% of the TTL, at most
    /// `lease-reuse`), whole seconds.
    pub reuse: Duration,
}

impl EventPreload {
    /// Leases of window `k`'s events: as many as hold them, `lease-objects` each.
    #[must_use]
    pub fn leases_per_window(&self) -> u64 {
        self.per_window.div_ceil(self.op.lease_objects.max(1))
    }

    /// The TTL left to window `k`'s leases (1 to `windows`), whole seconds, at least 1.
    #[must_use]
    pub fn ttl_left_s(&self, k: u64) -> i64 {
        let left = self.op.ttl.as_secs().saturating_sub((k - 1) * self.reuse.as_secs());
        i64::try_from(left.max(1)).unwrap_or(i64::MAX)
    }

    /// Events preloaded, all windows.
    #[must_use]
    pub fn events(&self) -> u64 {
        self.windows.saturating_mul(self.per_window)
    }
}

impl Kubernetes {
    /// Bytes the preload stores (each resource's objects at their size's mean stored bytes).
    #[must_use]
    pub fn preload_bytes(&self) -> u64 {
        self.preload()
            .iter()
            .map(|o| o.objects.saturating_mul(stored_mean(&o.object_size)))
            .fold(0, u64::saturating_add)
    }

    /// The history the preload writes after the objects: each writing flow (lease
    /// renewals, node status updates, pods' lives or racing updates) as a fill of the
    /// requests it sends in `history`, its rate times the span; flows with none left out.
    /// Events are apart ([`Kubernetes::event_preload`]).
    #[must_use]
    pub fn history(&self) -> Vec<(Operation, u64)> {
        let span = self.history.as_secs_f64();
        self.flows()
            .into_iter()
            .filter(|f| matches!(f.op, Operation::K8sUpdate(_) | Operation::K8sPodLifecycle(_)))
            .map(|f| {
                let total = (f.rate_per_second * span).round() as u64;
                (f.op, total)
            })
            .filter(|(_, total)| *total > 0)
            .collect()
    }

    /// The events a running cluster holds, preloaded behind leases that expire during
    /// the run; `None` without `preload-events` or events.
    #[must_use]
    pub fn event_preload(&self) -> Option<EventPreload> {
        let op = self.events();
        // As the apiserver's lease manager: 5% of the TTL, at most the reuse time, whole
        // seconds, at least one here so that windows are a second long at the least.
        let reuse_s = (op.ttl / 20).min(op.lease_reuse).as_secs().max(1);
        let per_window = (self.event_rate() * reuse_s as f64).round() as u64;
        let windows = op.ttl.as_secs().div_ceil(reuse_s);
        (self.preload_events && per_window > 0).then(|| EventPreload {
            op,
            windows,
            per_window,
            reuse: Duration::from_secs(reuse_s),
        })
    }

    /// The apiserver's compactor the model runs, every `compaction-interval`.
    #[must_use]
    pub fn compaction(&self) -> Option<Compaction> {
        (!self.compaction_interval.is_zero()).then_some(Compaction {
            interval: self.compaction_interval,
            index_delta: 1000,
            style: CompactionStyle::Apiserver,
        })
    }

    /// Bytes the store holds in steady state, as the quota counts them: the live objects
    /// (the preload), the history etcd keeps between compactions (the compactor compacts
    /// to the revision of one interval before, so up to two intervals of every write, or
    /// the `history` span when longer; with no compactor, that span), and an `event-ttl`
    /// of events.
    #[must_use]
    pub fn steady_state_bytes(&self) -> u64 {
        let span = self.history.max(2 * self.compaction_interval).as_secs_f64();
        let bytes =
            |per_second: f64, stored: u64| ((per_second * span) as u64).saturating_mul(stored);
        let history = self
            .flows()
            .iter()
            .map(|f| match &f.op {
                Operation::K8sUpdate(o) => bytes(f.rate_per_second, stored_mean(&o.object_size)),
                // A life's create and updates keep their values; its delete a tombstone.
                Operation::K8sPodLifecycle(l) => {
                    let writes = l.requests_per_life() as f64;
                    let stored = stored_mean(&l.object_size);
                    bytes(f.rate_per_second * (writes - 1.0) / writes, stored)
                        + bytes(f.rate_per_second / writes, stored_bytes(0))
                }
                _ => 0,
            })
            .fold(0, u64::saturating_add);
        let events = ((self.event_rate() * self.event_ttl.as_secs_f64()) as u64)
            .saturating_mul(stored_mean(&self.event_size));
        self.preload_bytes().saturating_add(history).saturating_add(events)
    }

    /// Checks the steady state's spans, and its store against `quota_bytes` (etcd's
    /// default without one).
    pub(super) fn validate_steady(&self, quota_bytes: Option<u64>) -> Result<(), ScenarioError> {
        let at = |field: &str| format!("kubernetes.{field}");
        for (field, d) in [
            ("event-ttl", self.event_ttl),
            ("compaction-interval", self.compaction_interval),
            ("history", self.history),
        ] {
            if d > crate::scenario::MAX_DURATION {
                return Err(ScenarioError::invalid(&at(field), "must be at most 10 years"));
            }
        }
        if self.event_ttl < Duration::from_secs(1) {
            return Err(ScenarioError::invalid(
                &at("event-ttl"),
                "must be at least 1s (a lease's TTL is in seconds)",
            ));
        }
        if !self.compaction_interval.is_zero()
            && self.compaction_interval < Duration::from_millis(100)
        {
            return Err(ScenarioError::invalid(
                &at("compaction-interval"),
                "must be 0 s or at least 100ms",
            ));
        }
        let quota = quota_bytes.unwrap_or(ETCD_DEFAULT_QUOTA_BYTES);
        let steady = self.steady_state_bytes();
        if steady > quota {
            return Err(ScenarioError::invalid(
                &at("nodes"),
                format!(
                    "the steady-state store of {steady} bytes (the preload of {} bytes of nodes, leases and pods, the history between compactions, an event-ttl of events) is more than the backend quota of {quota} bytes",
                    self.preload_bytes()
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scenario;

    /// At 5,000 nodes a running cluster's store holds an hour of events (360,000 on 6
    /// leases a minute, expiring a minute apart), the history between compactions and
    /// the objects: with 8 KiB pods about 4 GB (the issue measured 3 to 4), with the
    /// default pods (a mean of 13.2 KB, a tail to 100 KB) 4.9 GB; over etcd's default
    /// quota and within the 8 GiB a cluster that size runs with; the model compacts as the
    /// apiserver does.
    #[test]
    fn a_running_cluster_holds_history_and_an_hour_of_events() {
        let k = Kubernetes::with_nodes(5000);
        let eight_kib = Kubernetes { pod_size: (8 * 1024).into(), ..k.clone() };
        let events = k.event_preload().expect("events preloaded");
        assert_eq!((events.windows, events.per_window, events.reuse.as_secs()), (60, 6000, 60));
        assert_eq!((events.leases_per_window(), events.events()), (6, 360_000));
        assert_eq!((events.ttl_left_s(1), events.ttl_left_s(60)), (3600, 60));
        assert_eq!(events.op.ttl, Duration::from_secs(3600));
        let steady = eight_kib.steady_state_bytes();
        assert!(steady > 3_500_000_000 && steady < 4_500_000_000, "{steady}");
        assert!(steady > eight_kib.preload_bytes() + 1_000_000_000);
        // The default pods: 150,000 preloaded and 84,000 of the lives' writes kept between
        // compactions, at 15.5 KB stored each on average (whole pages) where 8 KiB pods
        // take 12 KiB: 0.76 GB more.
        let default_steady = k.steady_state_bytes();
        let more = default_steady - steady;
        assert!(more > 700_000_000 && more < 800_000_000, "{default_steady} - {steady}");
        assert!(default_steady < 8 << 30, "{default_steady}");
        let compactor = k.compaction().expect("the apiserver's compactor");
        assert_eq!(
            (compactor.interval, compactor.style),
            (Duration::from_secs(300), CompactionStyle::Apiserver)
        );
        // Five minutes of history: 150,000 renewals (30 a node), 5,000 status updates,
        // 48,000 of the pods' lives' requests, 12,000 ReplicaSet status and EndpointSlice
        // updates each, 90 of each apiserver lease (3 apiservers, 30 each).
        let history: Vec<(&str, u64)> =
            k.history().iter().map(|(op, total)| (op.name(), *total)).collect();
        assert_eq!(
            history,
            [
                ("k8s-update", 150_000),
                ("k8s-update", 5000),
                ("k8s-pod-lifecycle", 48_000),
                ("k8s-update", 12_000),
                ("k8s-update", 12_000),
                ("k8s-update", 90),
                ("k8s-update", 90)
            ]
        );
        let s = Scenario::from_toml_str("[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 5000\n")
            .unwrap_err()
            .to_string();
        assert!(s.contains("the steady-state store of"), "{s}");
        let s = Scenario::from_toml_str(
            "[cluster]\nquota-backend-bytes = \"8GiB\"\n[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 5000\n",
        )
        .unwrap();
        assert_eq!(s.compaction, k.compaction(), "the model's compactor");
        // None of it when asked: no history, no events, no compactor, and then a
        // compaction of the scenario's own.
        let bare = Kubernetes {
            history: Duration::ZERO,
            preload_events: false,
            compaction_interval: Duration::ZERO,
            ..k
        };
        assert!(bare.history().is_empty() && bare.event_preload().is_none());
        assert!(bare.compaction().is_none());
        let err = Scenario::from_toml_str(
            "[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\n[compaction]\ninterval = \"1m\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("compaction: is made by [kubernetes]"), "{err}");
        Scenario::from_toml_str(
            "[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\ncompaction-interval = \"0s\"\n[compaction]\ninterval = \"1m\"\n",
        )
        .unwrap();
    }
}
