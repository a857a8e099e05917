//! `[kubernetes]`: the traffic a Kubernetes cluster of `nodes` nodes sends etcd through its
//! apiservers, derived from that one number with the defaults below (each its own key), as
//! an open-loop `[[mix]]` of the apiserver's requests at their rates, and the objects
//! (nodes, node leases, pods) written before measuring.
//!
//! The flows and their rates (k8s.io/kubernetes' kubelet and apiserver defaults, and the
//! scalability tests' figures quoted in issue 28):
//!
//! - node lease renewals: every node updates its lease every `node-lease-interval` (10 s,
//!   the kubelet's `nodeLeaseRenewIntervalFraction` of its 40 s lease): `nodes / 10` per
//!   second, 500/s at 5,000 nodes;
//! - node status updates: every node every `node-status-interval` (5 min, the kubelet's
//!   `nodeStatusReportFrequency` when nothing changed): about 17/s at 5,000 nodes;
//! - pod churn: `pod-churn` pods a second (default one per 250 nodes, 20/s at 5,000, within
//!   the scalability tests' 10-50), each a life of its own (`k8s-pod-lifecycle`: a create,
//!   `updates-per-pod` updates (6) and a delete, 160 requests a second at 5,000 nodes) and
//!   `events-per-pod` events (5);
//! - lists of pods: `lists-per-minute` per apiserver (1), in pages of 500, as the
//!   `apiserver` release serves them: up to 1.30 from etcd (`k8s-list`), from 1.31 from
//!   the watch cache after a consistent-read probe (`k8s-consistent-list`, whose continue
//!   pages come from etcd before 1.34);
//! - from 1.34, each apiserver's consistency checker's lists of every cached resource
//!   (pods, nodes, leases) from etcd, every 6.25 minutes on average, in pages of 10,000 at
//!   its cache's revision (`k8s-list` with `at-cache-revision`);
//! - counts of every resource (pods, nodes, leases, events): `counts-per-minute` per
//!   apiserver (1, the apiserver's storage metrics); from 1.34 only events' reach etcd,
//!   the cached resources' come from the cache;
//! - `apiservers` apiservers (3), each with its own watch caches fed by its own watches.
//!
//! The churned pods are new names of the run's own, beside the preloaded pods: each logical
//! client runs its pods' lives one after another, one writer per pod, so their updates never
//! conflict. With `writers-per-pod` above 1 the pods' updates race instead, on the preloaded
//! pods (`k8s-update` with that `writers-per-object`, at `pod-churn * updates-per-pod`), and
//! the lives are a create and a delete each. Every client's first request of the flow is a
//! create: a run of a few lives per client creates more pods than it deletes, and a run
//! (or its warm-up) that ends in the middle of lives leaves their pods, as a cluster does.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ScenarioError;
use crate::unit;
use crate::workload::apiserver::{ApiserverVersion, CHECK_PERIOD_MEAN};
use crate::workload::kubernetes::{
    EventOp, LifecycleOp, MAX_OBJECTS, MAX_UPDATES_PER_LIFE, ObjectOp,
};
use crate::workload::{Operation, SizeDistribution, Weighted};

mod reads;
mod size;
mod steady;

pub use reads::DEFAULT_ETCD_SHARE;
pub use size::default_pod_size;
use size::{endpointslice_size, event_size, lease_size, node_size, replicaset_size};
pub use steady::EventPreload;

/// The namespace of node leases.
const KUBE_NODE_LEASE: &str = "kube-node-lease";

/// The namespace of the apiservers' identity leases.
pub const KUBE_SYSTEM: &str = "kube-system";

/// The TTL of an apiserver's master lease (the lease endpoint reconciler's, kubernetes'
/// `DefaultEndpointReconcilerTTL`).
const MASTER_LEASE_TTL: Duration = Duration::from_secs(15);

/// etcd's default `--max-request-bytes`: an object larger than this fails every write.
pub const ETCD_MAX_REQUEST_BYTES: u64 = 1_572_864;

/// etcd's default `--quota-backend-bytes` (2 GiB).
pub const ETCD_DEFAULT_QUOTA_BYTES: u64 = 2 << 30;

/// A mix weight is a flow's rate in thousandths of a request per second, so that flows of
/// less than one request a second keep their share.
const WEIGHT_PER_RATE: f64 = 1000.0;

/// A Kubernetes cluster's traffic, scaled by its node count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Kubernetes {
    /// Nodes of the cluster: everything else defaults from it.
    pub nodes: u64,
    /// Pods per node, preloaded. Default 30 (the scalability tests' density); 0: no pods,
    /// and no pods' lives or updates (their events stay).
    #[serde(default = "thirty")]
    pub pods_per_node: u64,
    /// How often each node renews its lease. Default 10 s; 0 s: never.
    #[serde(default = "ten_seconds", with = "unit::duration")]
    pub node_lease_interval: Duration,
    /// How long a node's lease may go without a renewal before the node controller marks
    /// it NotReady (its `node-monitor-grace-period`): the report counts the nodes whose
    /// longest gap between renewals was longer. Default 40 s.
    #[serde(default = "forty_seconds", with = "unit::duration")]
    pub node_monitor_grace_period: Duration,
    /// How often each node writes its status when nothing changed. Default 5 min; 0 s:
    /// never.
    #[serde(default = "five_minutes", with = "unit::duration")]
    pub node_status_interval: Duration,
    /// Pods created and deleted a second. Default one per 250 nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_churn: Option<f64>,
    /// Updates in a pod's life (scheduled, started, ready, ... ). Default 6.
    #[serde(default = "six")]
    pub updates_per_pod: u64,
    /// Events a pod's life records. Default 5.
    #[serde(default = "five")]
    pub events_per_pod: u64,
    /// Writers racing on each pod's updates (the kubelet, controllers, several
    /// apiservers). Default 1: each pod's life has one writer, which never conflicts; with
    /// more, the updates are `k8s-update`s of the preloaded pods with this
    /// `writers-per-object`, and the lives a create and a delete each.
    #[serde(default = "one")]
    pub writers_per_pod: u64,
    /// Apiservers, each listing and counting on its own, with its own watch caches fed by
    /// its own watches. Default 3.
    #[serde(default = "three")]
    pub apiservers: u64,
    /// The kube-apiserver release whose read path the model follows (`"1.30"`, `"1.37"`):
    /// where lists are served from, the consistency checker, RangeStream. Default the
    /// current release, 1.37.
    #[serde(default)]
    pub apiserver: ApiserverVersion,
    /// From 1.34: how often each apiserver's consistency checker lists each cached
    /// resource from etcd. Default 6.25 min (its 5 minutes jittered by up to half); 0 s:
    /// never.
    #[serde(default = "check_period", with = "unit::duration")]
    pub consistency_check_period: Duration,
    /// Lists of all pods per apiserver per minute. Default 1.
    #[serde(default = "one")]
    pub lists_per_minute: u64,
    /// Counts of each resource per apiserver per minute. Default 1.
    #[serde(default = "one")]
    pub counts_per_minute: u64,
    /// Namespaces the pods and events are spread over. Default 10 (fewer with fewer pods).
    #[serde(default = "ten")]
    pub namespaces: u64,
    /// A pod's size, drawn per pod ([`SizeDistribution`]: a plain size is fixed). Default
    /// [`default_pod_size`]: 90% from 4 to 15 KB, 9% from 15 to 70 KB, 1% from 70 to
    /// 100 KB, a mean of 13.2 KB.
    #[serde(default = "default_pod_size")]
    pub pod_size: SizeDistribution,
    /// A node's size. Default 15 KiB.
    #[serde(default = "node_size")]
    pub node_size: SizeDistribution,
    /// A node lease's size (the apiservers' leases' too). Default 512 B.
    #[serde(default = "lease_size")]
    pub lease_size: SizeDistribution,
    /// An event's size. Default 1 KiB.
    #[serde(default = "event_size")]
    pub event_size: SizeDistribution,
    /// etcd's share of the 1 s that Kubernetes allows a mutating call or a single-object
    /// read at p99, end to end at the apiserver: the verdict holds etcd's p99 of those calls
    /// to this fraction of 1 s, and reports it beside the whole SLO. Default 0.5
    /// ([`DEFAULT_ETCD_SHARE`]); more than 0, at most 1.
    #[serde(default = "etcd_share")]
    pub etcd_share: f64,
    /// An event's time to live (the apiserver's `--event-ttl`). Default 1 h.
    #[serde(default = "hour", with = "unit::duration")]
    pub event_ttl: Duration,
    /// How often the apiserver's compactor claims `compact_rev_key` and compacts (its
    /// `--etcd-compaction-interval`): the scenario's `[compaction]`, in the apiserver's
    /// style. Default 5 min; 0 s: no compactor.
    #[serde(default = "five_minutes", with = "unit::duration")]
    pub compaction_interval: Duration,
    /// The span of past writes preloaded as history ([`Kubernetes::history`]): each flow's
    /// writes over it (lease renewals, status updates, pods' lives), so that etcd holds
    /// the revisions a cluster's store holds between compactions. Default 5 min; 0 s: none.
    #[serde(default = "five_minutes", with = "unit::duration")]
    pub history: Duration,
    /// Pods per controller: per ReplicaSet, whose status the controller manager updates
    /// as its pods come and go, and per Service, whose EndpointSlice the EndpointSlice
    /// controller updates as they become ready and leave (as the scalability load test's
    /// Deployments behind Services). Default 30; 0: no ReplicaSets, no EndpointSlices.
    #[serde(default = "thirty")]
    pub pods_per_controller: u64,
    /// A ReplicaSet's size. Default 2 KiB.
    #[serde(default = "replicaset_size")]
    pub replicaset_size: SizeDistribution,
    /// An EndpointSlice's size: its pods' endpoints (about 150 bytes each). Default 5 KiB.
    #[serde(default = "endpointslice_size")]
    pub endpointslice_size: SizeDistribution,
    /// How often each apiserver renews its identity lease
    /// (`/registry/leases/kube-system/apiserver-<id>`, `--identity-lease-renew-interval`)
    /// and writes its master lease (`/registry/masterleases/<ip>`, with a 15 s TTL, the
    /// lease endpoint reconciler's). Default 10 s; 0 s: neither, and neither preloaded.
    #[serde(default = "ten_seconds", with = "unit::duration")]
    pub apiserver_lease_interval: Duration,
    /// Whether the preload writes an `event-ttl` of events behind leases that expire
    /// while the run goes, as a running cluster's do ([`Kubernetes::event_preload`]).
    /// Default true.
    #[serde(default = "yes")]
    pub preload_events: bool,
}

/// One flow of the model: its operation and its rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// What it sends.
    pub op: Operation,
    /// Requests per second.
    pub rate_per_second: f64,
}

impl Kubernetes {
    /// A cluster of `nodes` nodes with every other parameter at its default.
    #[must_use]
    pub fn with_nodes(nodes: u64) -> Self {
        Self {
            nodes,
            pods_per_node: 30,
            node_lease_interval: ten_seconds(),
            node_monitor_grace_period: forty_seconds(),
            node_status_interval: five_minutes(),
            pod_churn: None,
            updates_per_pod: 6,
            events_per_pod: 5,
            writers_per_pod: 1,
            apiservers: 3,
            apiserver: ApiserverVersion::CURRENT,
            consistency_check_period: check_period(),
            lists_per_minute: 1,
            counts_per_minute: 1,
            namespaces: 10,
            pod_size: default_pod_size(),
            node_size: node_size(),
            lease_size: lease_size(),
            event_size: event_size(),
            etcd_share: DEFAULT_ETCD_SHARE,
            event_ttl: hour(),
            pods_per_controller: 30,
            replicaset_size: replicaset_size(),
            endpointslice_size: endpointslice_size(),
            apiserver_lease_interval: ten_seconds(),
            compaction_interval: five_minutes(),
            history: five_minutes(),
            preload_events: true,
        }
    }

    /// Pods created (and deleted) a second.
    #[must_use]
    pub fn pod_churn_per_second(&self) -> f64 {
        self.pod_churn.unwrap_or(self.nodes as f64 / 250.0)
    }

    /// The preloaded pods.
    #[must_use]
    pub fn pods(&self) -> u64 {
        self.nodes.saturating_mul(self.pods_per_node)
    }

    /// The objects written before measuring, at the apiserver's keys: nodes
    /// (`/registry/minions/<node>`, cluster-scoped), node leases
    /// (`/registry/leases/kube-node-lease/<node>`), pods (`/registry/pods/<ns>/<name>`,
    /// those with any), their ReplicaSets and EndpointSlices, and each apiserver's identity
    /// lease (`/registry/leases/kube-system/apiserver-<n>`) and master lease
    /// (`/registry/masterleases/<ip>`, on a 15 s TTL).
    #[must_use]
    pub fn preload(&self) -> Vec<ObjectOp> {
        let object =
            |resource: &str, name_prefix: &str, objects, namespaces, size: &SizeDistribution| {
                ObjectOp {
                    resource: resource.to_owned(),
                    namespaces,
                    objects,
                    name_prefix: name_prefix.to_owned(),
                    object_size: size.clone(),
                    ..ObjectOp::default()
                }
            };
        let within =
            |namespace: &str, o: ObjectOp| ObjectOp { namespace: Some(namespace.to_owned()), ..o };
        let mut objects = vec![
            within("", object("minions", "node-", self.nodes, 1, &self.node_size)),
            within(KUBE_NODE_LEASE, object("leases", "node-", self.nodes, 1, &self.lease_size)),
        ];
        if self.pods() > 0 {
            let namespaces = self.namespaces.min(self.pods());
            objects.push(object("pods", "pod-", self.pods(), namespaces, &self.pod_size));
            if let Some(controllers) = self.controllers() {
                let namespaces = namespaces.min(controllers);
                for (resource, prefix, size) in [
                    ("replicasets", "rs-", &self.replicaset_size),
                    ("endpointslices", "svc-", &self.endpointslice_size),
                ] {
                    objects.push(object(resource, prefix, controllers, namespaces, size));
                }
            }
        }
        if !self.apiserver_lease_interval.is_zero() {
            objects.push(within(
                KUBE_SYSTEM,
                object("leases", "apiserver-", self.apiservers, 1, &self.lease_size),
            ));
            objects.push(ObjectOp {
                ttl: Some(MASTER_LEASE_TTL),
                ..within("", object("masterleases", "ip-", self.apiservers, 1, &self.lease_size))
            });
        }
        objects
    }

    /// ReplicaSets and Services (one EndpointSlice each): one per `pods-per-controller`
    /// pods, at least one; `None` without pods or controllers.
    fn controllers(&self) -> Option<u64> {
        (self.pods() > 0 && self.pods_per_controller > 0)
            .then(|| (self.pods() / self.pods_per_controller).max(1))
    }

    /// The flows and their rates.
    #[must_use]
    pub fn flows(&self) -> Vec<Flow> {
        let preload = self.preload();
        let (nodes, leases) = (&preload[0], &preload[1]);
        let churn = self.pod_churn_per_second();
        let every = |interval: Duration| {
            if interval.is_zero() { 0.0 } else { self.nodes as f64 / interval.as_secs_f64() }
        };
        let mut flows = vec![
            Flow {
                op: Operation::K8sUpdate(leases.clone()),
                rate_per_second: every(self.node_lease_interval),
            },
            Flow {
                op: Operation::K8sUpdate(nodes.clone()),
                rate_per_second: every(self.node_status_interval),
            },
        ];
        let mut counted = vec![nodes.clone(), leases.clone()];
        if let Some(pods) = preload.iter().find(|o| o.resource == "pods") {
            let racing = self.writers_per_pod > 1;
            let life = LifecycleOp {
                resource: pods.resource.clone(),
                namespaces: pods.namespaces,
                name_prefix: pods.name_prefix.clone(),
                object_size: pods.object_size.clone(),
                updates: if racing { 0 } else { self.updates_per_pod },
            };
            flows.push(Flow {
                rate_per_second: churn * life.requests_per_life() as f64,
                op: Operation::K8sPodLifecycle(life),
            });
            if racing {
                let racing = ObjectOp { writers_per_object: self.writers_per_pod, ..pods.clone() };
                flows.push(Flow {
                    op: Operation::K8sUpdate(racing),
                    rate_per_second: churn * self.updates_per_pod as f64,
                });
            }
            flows.push(self.pod_list(pods));
            counted.push(pods.clone());
        }
        if self.apiserver.checks_consistency() {
            // Every cached resource, by each apiserver's checker; their counts are the
            // cache's from then on.
            flows.extend(counted.drain(..).map(|cached| self.checker_list(cached)));
        }
        let events = self.events();
        flows.push(Flow {
            op: Operation::K8sEvent(events),
            rate_per_second: churn * self.events_per_pod as f64,
        });
        counted.push(ObjectOp { resource: "events".to_owned(), ..ObjectOp::default() });
        // Every other resource stored, once (the apiservers' identity leases are leases):
        // counted in etcd, or from 1.34 listed by the checker and counted from the cache.
        for resource in ["replicasets", "endpointslices", "masterleases"] {
            if let Some(objects) = preload.iter().find(|o| o.resource == resource) {
                if self.apiserver.checks_consistency() {
                    flows.push(self.checker_list(objects.clone()));
                } else {
                    counted.push(objects.clone());
                }
            }
        }
        flows.extend(self.counts(counted));
        // A pod's life changes its ReplicaSet's status twice (created, gone) and its
        // EndpointSlice twice (ready, gone); the apiservers renew their leases.
        let preloaded = |resource: &str, namespace: Option<&str>| {
            preload.iter().find(|o| o.resource == resource && o.namespace.as_deref() == namespace)
        };
        for resource in ["replicasets", "endpointslices"] {
            if let Some(objects) = preloaded(resource, None) {
                flows.push(Flow {
                    op: Operation::K8sUpdate(objects.clone()),
                    rate_per_second: churn * 2.0,
                });
            }
        }
        let apiserver_leases =
            [preloaded("leases", Some(KUBE_SYSTEM)), preloaded("masterleases", Some(""))];
        for objects in apiserver_leases.into_iter().flatten() {
            flows.push(Flow {
                op: Operation::K8sUpdate(objects.clone()),
                rate_per_second: self.apiservers as f64
                    / self.apiserver_lease_interval.as_secs_f64(),
            });
        }
        flows.retain(|f| weight(f.rate_per_second) > 0);
        flows
    }

    /// The model's events: where they go, their size and TTL.
    fn events(&self) -> EventOp {
        EventOp {
            namespaces: self.namespaces,
            object_size: self.event_size.clone(),
            ttl: self.event_ttl,
            // The apiserver's lease manager reuses a lease for at most a minute, and for
            // 5% of a shorter TTL: never longer than the TTL.
            lease_reuse: EventOp::default().lease_reuse.min(self.event_ttl),
            ..EventOp::default()
        }
    }

    /// Events created a second (the pods' churn times their events).
    fn event_rate(&self) -> f64 {
        self.pod_churn_per_second() * self.events_per_pod as f64
    }

    /// The open-loop mix of the flows, weighted by rate, and its whole rate (requests per
    /// second, rounded, at least 1: each flow's rate is its share of that).
    #[must_use]
    pub fn mix(&self) -> (Vec<Weighted>, u64) {
        let flows = self.flows();
        let rate: f64 = flows.iter().map(|f| f.rate_per_second).sum();
        let mix = flows
            .into_iter()
            .map(|f| Weighted { weight: weight(f.rate_per_second), op: f.op })
            .collect();
        (mix, (rate.round() as u64).max(1))
    }

    /// Checks the model's numbers, its sizes against etcd's request limit, and its preload
    /// against `quota_bytes`.
    pub(crate) fn validate(&self, quota_bytes: Option<u64>) -> Result<(), ScenarioError> {
        let at = |field: &str| format!("kubernetes.{field}");
        if self.nodes == 0 {
            return Err(ScenarioError::invalid(&at("nodes"), "must be more than 0"));
        }
        for (field, n) in [
            ("apiservers", self.apiservers),
            ("namespaces", self.namespaces),
            ("writers-per-pod", self.writers_per_pod),
        ] {
            if n == 0 {
                return Err(ScenarioError::invalid(&at(field), "must be more than 0"));
            }
        }
        if self.pods() > MAX_OBJECTS {
            return Err(ScenarioError::invalid(
                &at("nodes"),
                format!("{} pods is more than {MAX_OBJECTS}", self.pods()),
            ));
        }
        for (field, interval) in [
            ("node-lease-interval", self.node_lease_interval),
            ("node-status-interval", self.node_status_interval),
            ("apiserver-lease-interval", self.apiserver_lease_interval),
            ("consistency-check-period", self.consistency_check_period),
        ] {
            if !interval.is_zero() && interval < Duration::from_millis(1) {
                return Err(ScenarioError::invalid(&at(field), "must be 0 s or at least 1ms"));
            }
        }
        if !(self.etcd_share > 0.0 && self.etcd_share <= 1.0) {
            return Err(ScenarioError::invalid(
                &at("etcd-share"),
                "must be more than 0, at most 1",
            ));
        }
        if self.pod_churn.is_some_and(|c| !(c.is_finite() && c >= 0.0)) {
            return Err(ScenarioError::invalid(&at("pod-churn"), "must be 0 or more"));
        }
        if self.updates_per_pod > MAX_UPDATES_PER_LIFE {
            return Err(ScenarioError::invalid(
                &at("updates-per-pod"),
                format!("more than {MAX_UPDATES_PER_LIFE}"),
            ));
        }
        self.validate_sizes()?;
        if self.flows().is_empty() {
            return Err(ScenarioError::invalid("kubernetes", "every flow's rate is 0"));
        }
        self.validate_steady(quota_bytes)
    }
}

fn weight(rate_per_second: f64) -> u32 {
    (rate_per_second * WEIGHT_PER_RATE).round().min(f64::from(u32::MAX)) as u32
}

fn thirty() -> u64 {
    30
}
fn ten() -> u64 {
    10
}
fn six() -> u64 {
    6
}
fn five() -> u64 {
    5
}
fn three() -> u64 {
    3
}
fn one() -> u64 {
    1
}
fn check_period() -> Duration {
    CHECK_PERIOD_MEAN
}
fn ten_seconds() -> Duration {
    Duration::from_secs(10)
}
fn forty_seconds() -> Duration {
    crate::workload::kubernetes::NODE_MONITOR_GRACE
}
fn five_minutes() -> Duration {
    Duration::from_secs(300)
}
fn etcd_share() -> f64 {
    DEFAULT_ETCD_SHARE
}
fn hour() -> Duration {
    Duration::from_secs(3600)
}
fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::steady::stored_bytes;
    use super::*;
    use crate::Scenario;

    /// At 5,000 nodes the flows are the issue's: 500 lease renewals a second, about 17
    /// node status updates, 20 pods of churn (each created, updated 6 times and deleted:
    /// 160 requests; and 100 events), and each of the three apiservers' list and counts
    /// (of nodes, leases, pods, events, ReplicaSets, EndpointSlices, master leases) once a
    /// minute; the pods' churn updates 40 ReplicaSets' statuses and 40 EndpointSlices a
    /// second, and the apiservers renew their identity and master leases every 10 s.
    #[test]
    fn five_thousand_nodes_send_the_issues_rates() {
        let old = Kubernetes { apiserver: "1.30".parse().unwrap(), ..Kubernetes::with_nodes(5000) };
        let flows = old.flows();
        let rates: Vec<(String, f64)> =
            flows.iter().map(|f| (f.op.name().to_owned(), f.rate_per_second)).collect();
        let expected = [
            ("k8s-update", 500.0),
            ("k8s-update", 5000.0 / 300.0),
            ("k8s-pod-lifecycle", 160.0),
            ("k8s-list", 0.05),
            ("k8s-event", 100.0),
            ("k8s-count", 0.05),
            ("k8s-count", 0.05),
            ("k8s-count", 0.05),
            ("k8s-count", 0.05),
            ("k8s-count", 0.05),
            ("k8s-count", 0.05),
            ("k8s-count", 0.05),
            ("k8s-update", 40.0),
            ("k8s-update", 40.0),
            ("k8s-update", 0.3),
            ("k8s-update", 0.3),
        ];
        assert_eq!(rates.len(), expected.len(), "{rates:?}");
        for ((name, rate), (want_name, want)) in rates.iter().zip(expected) {
            assert_eq!(name, want_name);
            assert!((rate - want).abs() < 1e-9, "{name}: {rate} != {want}");
        }
        let Operation::K8sPodLifecycle(life) = &flows[2].op else { panic!("{flows:?}") };
        let pods = &Kubernetes::with_nodes(5000).preload()[2];
        assert_eq!(
            (life.prefix(), life.namespaces, life.name_prefix.as_str(), life.object_size.clone()),
            (pods.prefix(), 10, "pod-", default_pod_size())
        );
        assert_eq!((life.updates, life.requests_per_life()), (6, 8));
    }

    /// With one writer per pod the pods' updates are their lives' own; with more, they
    /// race on the preloaded pods at the same rate, and the lives are creates and deletes:
    /// as many creates, deletes and updates a second either way.
    #[test]
    fn writers_per_pod_move_the_updates_to_the_preloaded_pods() {
        // (updates per life, rate) of the lives; (writers, objects, rate) of pod updates.
        let pod_flows = |model: &Kubernetes| {
            let (mut lives, mut updates) = (Vec::new(), Vec::new());
            for f in model.flows() {
                match f.op {
                    Operation::K8sPodLifecycle(l) => lives.push((l.updates, f.rate_per_second)),
                    Operation::K8sUpdate(o) if o.resource == "pods" => {
                        updates.push((o.writers_per_object, o.objects, f.rate_per_second));
                    }
                    _ => {}
                }
            }
            (lives, updates)
        };
        let one = Kubernetes { pod_churn: Some(10.0), ..Kubernetes::with_nodes(100) };
        assert_eq!(pod_flows(&one), (vec![(6, 80.0)], vec![]));
        let four = Kubernetes { writers_per_pod: 4, ..one.clone() };
        assert_eq!(pod_flows(&four), (vec![(0, 20.0)], vec![(4, 3000, 60.0)]));
        let total =
            |model: &Kubernetes| model.flows().iter().map(|f| f.rate_per_second).sum::<f64>();
        assert!((total(&one) - total(&four)).abs() < 1e-9, "as many requests a second");
        // No pods: no lives, and no updates of pods.
        let none =
            Kubernetes { pods_per_node: 0, apiserver_lease_interval: Duration::ZERO, ..four };
        assert_eq!(pod_flows(&none), (vec![], vec![]));
        assert_eq!(none.flows().len(), 2 + 1 + 3, "leases, nodes, events, three counts");
    }

    /// `[kubernetes] nodes = N` makes the scenario's open-loop mix and rate, and refuses a
    /// mix of its own; a node count scaled with the scenario derives them again.
    #[test]
    fn a_scenario_derives_its_mix_from_the_node_count() {
        let s = Scenario::from_toml_str("[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\n")
            .unwrap();
        assert_eq!(s.load.schedule, crate::Schedule::Open);
        assert_eq!(
            s.load.rate, 9,
            "1.37: 5 + 0.17 + 0.2 x 8 + 0.05 consistent lists + 1 + 0.05 counts of events, \
             6 x 3 / 375 s checker lists, 2 x 0.2 x 2 ReplicaSets and EndpointSlices, 2 x 0.3 \
             apiserver leases"
        );
        assert_eq!(s.mix[0].weight, 5000);
        let ten = s.scaled(0.2);
        assert_eq!((ten.kubernetes.as_ref().unwrap().nodes, ten.load.rate), (10, 2));
        ten.validate().unwrap();
        let text = toml::to_string(&s).unwrap();
        assert_eq!(Scenario::from_toml_str(&text).unwrap(), s, "round trip");
        let err = Scenario::from_toml_str(
            "[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\n[op.put]\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("kubernetes"), "{err}");
    }

    /// A model probed at another node count is derived again from it, and only a scenario
    /// with a model can be.
    #[test]
    fn a_scenario_at_another_node_count_derives_its_flows_again() {
        let s = Scenario::from_toml_str("[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\n")
            .unwrap();
        let hundred = s.with_nodes(100).unwrap();
        assert_eq!(hundred.kubernetes.as_ref().unwrap().nodes, 100);
        assert_eq!(hundred, Scenario::from_toml_str(&toml::to_string(&hundred).unwrap()).unwrap());
        let model = Kubernetes { nodes: 100, ..s.kubernetes.clone().unwrap() };
        assert_eq!((&hundred.mix, hundred.load.rate), (&model.mix().0, model.mix().1));
        assert!(hundred.load.rate > s.load.rate);
        assert!(s.with_nodes(0).is_err());
        let put = Scenario::from_toml_str("[load]\ntotal = 10\n[op.put]\n").unwrap();
        let err = put.with_nodes(100).unwrap_err().to_string();
        assert!(err.contains("[kubernetes]"), "{err}");
    }

    /// A flow at 0 is left out of the mix (a scenario about one flow), and a model with
    /// every flow at 0 is refused.
    #[test]
    fn flows_at_zero_are_left_out() {
        let leases = Kubernetes {
            pods_per_node: 0,
            node_status_interval: Duration::ZERO,
            pod_churn: Some(0.0),
            lists_per_minute: 0,
            counts_per_minute: 0,
            apiserver_lease_interval: Duration::ZERO,
            // Before the consistency checker, whose lists no knob turns off.
            apiserver: "1.30".parse().unwrap(),
            ..Kubernetes::with_nodes(5000)
        };
        let (mix, rate) = leases.mix();
        assert_eq!((mix.len(), rate, leases.preload().len()), (1, 500, 2));
        let Operation::K8sUpdate(op) = &mix[0].op else { panic!("{mix:?}") };
        assert_eq!(
            (op.resource.as_str(), op.objects, op.object_size.clone()),
            ("leases", 5000, 512.into())
        );
        let none = Kubernetes { node_lease_interval: Duration::ZERO, ..leases };
        let err = none.validate(None).unwrap_err().to_string();
        assert!(err.contains("every flow's rate is 0"), "{err}");
    }
    /// The preload is at the apiserver's keys: nodes cluster-scoped, node leases in
    /// kube-node-lease, the apiservers' identity leases in kube-system and master leases on
    /// a 15 s TTL, ReplicaSets and EndpointSlices beside the pods; each key names its
    /// object back, and no other layout's.
    #[test]
    fn the_preload_is_at_the_apiservers_keys() {
        let preload = Kubernetes::with_nodes(100).preload();
        let keys: Vec<String> = preload.iter().map(|o| o.key(1)).collect();
        assert_eq!(
            keys,
            [
                "/registry/minions/node-00000001",
                "/registry/leases/kube-node-lease/node-00000001",
                "/registry/pods/ns-1/pod-00000001",
                "/registry/replicasets/ns-1/rs-00000001",
                "/registry/endpointslices/ns-1/svc-00000001",
                "/registry/leases/kube-system/apiserver-00000001",
                "/registry/masterleases/ip-00000001",
            ]
        );
        let objects: Vec<u64> = preload.iter().map(|o| o.objects).collect();
        assert_eq!(objects, [100, 100, 3000, 100, 100, 3, 3]);
        assert_eq!(preload[6].ttl, Some(Duration::from_secs(15)));
        assert!(preload[..6].iter().all(|o| o.ttl.is_none()));
        for (i, o) in preload.iter().enumerate() {
            assert_eq!(o.object_at(o.key(1).as_bytes()), Some(1), "{}", o.key(1));
            for (j, other) in preload.iter().enumerate() {
                if i != j {
                    assert_eq!(other.object_at(o.key(1).as_bytes()), None, "{}", o.key(1));
                }
            }
        }
        // A named namespace holds all of its resource's objects.
        let mut bad = preload[1].clone();
        bad.namespaces = 2;
        let err = bad.validate_at("op.k8s-update").unwrap_err();
        assert_eq!(err.field, "op.k8s-update.namespaces");
    }

    #[test]
    fn bad_input_is_named() {
        let bad = |model: &str| {
            Scenario::from_toml_str(&format!("[load]\nduration = \"1s\"\n[kubernetes]\n{model}\n"))
                .unwrap_err()
                .to_string()
        };
        assert!(bad("nodes = 0").contains("kubernetes.nodes: must be more than 0"));
        assert!(bad("nodes = -1").contains("integer `-1`, expected u64"));
        assert!(bad("nodes = 10\npod-size = \"2MiB\"").contains("kubernetes.pod-size"));
        let err = bad("nodes = 10\nupdates-per-pod = 1000001");
        assert!(err.contains("kubernetes.updates-per-pod: more than 1000000"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
        // 5,000 nodes of 150,000 pods at 15 KiB: 2.3 GB, over etcd's default 2 GiB.
        let err = bad("nodes = 5000\npod-size = \"15KiB\"");
        assert!(err.contains("more than the backend quota of 2147483648"), "{err}");
        // 8,000 nodes' 240,000 pods of 8 KiB: 1.9 GiB of values, but whole pages of bbolt's
        // make 2.9 GB, and etcd 3.7.3 refused this preload with NOSPACE after 195,000 writes.
        let err = bad("nodes = 8000\npod-size = \"8KiB\"");
        assert!(err.contains("more than the backend quota of 2147483648"), "{err}");
        // 5,000 nodes, the issue's cluster, fit with 8 KiB pods: 1.9 GB with its pages.
        let eight_kib = Kubernetes { pod_size: (8 * 1024).into(), ..Kubernetes::with_nodes(5000) };
        let fits = eight_kib.preload_bytes();
        assert!(fits > 1_900_000_000 && fits < ETCD_DEFAULT_QUOTA_BYTES, "{fits}");
        // With the default pods (15.5 KB stored each on average) they do not: 2.5 GB.
        let default_pods = Kubernetes::with_nodes(5000).preload_bytes();
        assert!(default_pods > 2_400_000_000 && default_pods < 2_550_000_000, "{default_pods}");
        let stored = [8192, 2048, 1024, 512].map(stored_bytes);
        assert_eq!(stored, [12 * 1024, 4096, 1152, 640]);
        let err = Scenario::from_toml_str(
            "[cluster]\nquota-backend-bytes = \"16MiB\"\n[load]\nduration = \"1s\"\n[kubernetes]\nnodes = 100\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("quota of 16777216"), "{err}");
    }
}
