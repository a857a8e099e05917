//! The release reads and the verdicts' scope: what each apiserver release sends etcd to
//! serve lists and counts (the pods' list, the consistency checker's lists, counts), the
//! same in words for the verdicts ([`Kubernetes::apiserver_model`]), and etcd's share of
//! an API call's budget they hold etcd to.

use super::{Flow, Kubernetes};
use crate::workload::Operation;
use crate::workload::apiserver::CHECK_PAGE;
use crate::workload::kubernetes::ObjectOp;

/// The default `[kubernetes] etcd-share`: half of the 1 s. A mutating call's second is also
/// spent on admission (webhooks among them), priority and fairness queueing, decoding,
/// conversion and encoding at the apiserver and the network to and from it; a GuaranteedUpdate
/// may take etcd twice (a conflict, then its retry). Holding etcd's p99 to half leaves the
/// other half to those, which in a cluster whose apiserver is not the bottleneck is ample,
/// and makes an etcd whose own p99 is the whole second fail the verdict, as the apiserver
/// would then fail its SLO.
pub const DEFAULT_ETCD_SHARE: f64 = 0.5;

impl Kubernetes {
    /// A rate of `n` a minute for each apiserver, a second.
    fn per_minute(&self, n: u64) -> f64 {
        (self.apiservers * n) as f64 / 60.0
    }

    /// The pods' list, `lists-per-minute` per apiserver: from etcd up to 1.30, from the
    /// watch cache after a consistent-read probe from 1.31.
    pub(super) fn pod_list(&self, pods: &ObjectOp) -> Flow {
        let op = if self.apiserver.lists_from_cache() {
            Operation::K8sConsistentList(pods.clone())
        } else {
            Operation::K8sList(pods.clone())
        };
        Flow { op, rate_per_second: self.per_minute(self.lists_per_minute) }
    }

    /// The consistency checker's list of `objects` (from 1.34): each apiserver's once a
    /// `consistency-check-period`, in pages of 10,000 at its cache's revision. Every cached
    /// resource has one, and its counts come from the cache from then on.
    pub(super) fn checker_list(&self, objects: ObjectOp) -> Flow {
        let period = self.consistency_check_period.as_secs_f64();
        let every = if period == 0.0 { 0.0 } else { self.apiservers as f64 / period };
        let checked = ObjectOp { page_size: CHECK_PAGE, at_cache_revision: true, ..objects };
        Flow { op: Operation::K8sList(checked), rate_per_second: every }
    }

    /// The counts of `counted` that reach etcd, `counts-per-minute` per apiserver.
    pub(super) fn counts(&self, counted: Vec<ObjectOp>) -> impl Iterator<Item = Flow> {
        let rate_per_second = self.per_minute(self.counts_per_minute);
        counted.into_iter().map(move |o| Flow { op: Operation::K8sCount(o), rate_per_second })
    }

    /// The apiserver the verdicts assume, in words: what etcdlat's model of its storage
    /// sends etcd (the one place that says it; every verdict quotes it).
    #[must_use]
    pub fn apiserver_model(&self) -> String {
        let v = self.apiserver;
        let reads = if !v.lists_from_cache() {
            format!(
                "lists of pods from etcd in pages of 500 ({} per minute each), counts of every \
                 resource from etcd",
                self.lists_per_minute
            )
        } else if v.checks_consistency() {
            let streams = if v.streams_lists() { " (through RangeStream on etcd 3.7)" } else { "" };
            format!(
                "consistent lists from the watch cache (a Get of /registry/<resource>, then \
                 progress requests), the consistency checker's lists of every cached resource \
                 in pages of 10,000 every {}{streams}, counts of events from etcd",
                humantime::format_duration(self.consistency_check_period)
            )
        } else {
            "consistent lists from the watch cache with their continue pages from etcd, counts \
             of every resource from etcd"
                .to_owned()
        };
        format!(
            "kube-apiserver {v} as etcdlat models it: {} apiservers, each with watch caches fed \
             only by its own watches; {reads}; writes as storage/etcd3's GuaranteedUpdate",
            self.apiservers
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Scenario;

    /// `etcd-share` defaults to half of the 1 s calls' budget, is read from the scenario,
    /// holds etcd to its share of the 1 s classes only (a list page keeps its 30 s), and
    /// must be more than 0 and at most 1.
    #[test]
    fn etcd_share_defaults_to_half_and_is_a_fraction() {
        use crate::report::kubernetes::VerdictScope;
        let at = |share: &str| {
            let text = format!("[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\n{share}");
            Scenario::from_toml_str(&text)
        };
        assert_eq!(at("").unwrap().kubernetes.unwrap().etcd_share, DEFAULT_ETCD_SHARE);
        let k = at("etcd-share = 0.2\n").unwrap().kubernetes.unwrap();
        let scope = VerdictScope::of(Some(&k));
        assert_eq!((scope.side.as_str(), scope.etcd_share), ("etcd", 0.2));
        assert_eq!(scope.etcd_limit(Duration::from_secs(1)), Duration::from_millis(200));
        assert_eq!(scope.etcd_limit(Duration::from_secs(30)), Duration::from_secs(30));
        assert_eq!(scope.apiserver, k.apiserver_model());
        assert!(scope.sentence().starts_with("etcd-side verdict"), "{}", scope.sentence());
        for bad in ["0.0", "1.5", "-0.5", "nan"] {
            let err = at(&format!("etcd-share = {bad}\n")).unwrap_err().to_string();
            assert!(err.contains("kubernetes.etcd-share"), "{bad}: {err}");
        }
    }

    /// Each release's read path: up to 1.30 the pods' lists go to etcd and every resource
    /// is counted there; from 1.31 they are consistent lists from the cache; from 1.34 each
    /// apiserver's checker lists every cached resource in pages of 10,000 at its cache's
    /// revision every 6.25 minutes, and only events are counted in etcd.
    #[test]
    fn each_release_reads_as_it_does() {
        let at = |release: &str| {
            // The reads of the resources the run reads (no ReplicaSets, EndpointSlices or
            // apiservers' leases: those are counted or checked as every other resource).
            let model = Kubernetes {
                apiserver: release.parse().unwrap(),
                pods_per_controller: 0,
                apiserver_lease_interval: Duration::ZERO,
                ..Kubernetes::with_nodes(5000)
            };
            model
                .flows()
                .into_iter()
                .filter(|f| {
                    !matches!(
                        f.op,
                        Operation::K8sUpdate(_)
                            | Operation::K8sPodLifecycle(_)
                            | Operation::K8sEvent(_)
                    )
                })
                .map(|f| {
                    let o = f.op.objects().unwrap();
                    let what = (o.resource.clone(), o.page_size, o.at_cache_revision);
                    (f.op.name().to_owned(), what, (f.rate_per_second * 1e6).round() / 1e6)
                })
                .collect::<Vec<_>>()
        };
        let row = |name: &str, resource: &str, page: u64, at_cache: bool, rate: f64| {
            (name.to_owned(), (resource.to_owned(), page, at_cache), rate)
        };
        let count = |resource: &str| row("k8s-count", resource, 500, false, 0.05);
        assert_eq!(
            at("1.30"),
            [
                row("k8s-list", "pods", 500, false, 0.05),
                count("minions"),
                count("leases"),
                count("pods"),
                count("events"),
            ]
        );
        let mut consistent = at("1.30");
        consistent[0].0 = "k8s-consistent-list".to_owned();
        assert_eq!(at("1.31"), consistent);
        assert_eq!(at("1.33"), consistent);
        let checker = |resource: &str| row("k8s-list", resource, 10_000, true, 0.008);
        let current = [
            row("k8s-consistent-list", "pods", 500, false, 0.05),
            checker("minions"),
            checker("leases"),
            checker("pods"),
            count("events"),
        ];
        assert_eq!(at("1.34"), current);
        assert_eq!(at("1.37"), current);
        let s = Scenario::from_toml_str(
            "[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\napiserver = \"1.30\"\n",
        )
        .unwrap();
        assert_eq!(s.kubernetes.as_ref().unwrap().apiserver.to_string(), "1.30");
        assert_eq!(Scenario::from_toml_str(&toml::to_string(&s).unwrap()).unwrap(), s);
        let err = Scenario::from_toml_str(
            "[load]\nduration = \"10s\"\n[kubernetes]\nnodes = 50\napiserver = \"1.x\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not a Kubernetes release"), "{err}");
    }
}
