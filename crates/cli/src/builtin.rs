//! The shipped scenarios of `configs/scenarios/`, built into the binary so that
//! `etcdlat run scenarios/put-1mb.toml` works from any directory.

/// (name, TOML text) of every shipped scenario.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "capacity-test-network",
        include_str!("../../../configs/scenarios/capacity-test-network.toml"),
    ),
    ("client-steps", include_str!("../../../configs/scenarios/client-steps.toml")),
    ("delete", include_str!("../../../configs/scenarios/delete.toml")),
    ("dbtester-write-1m", include_str!("../../../configs/scenarios/dbtester-write-1m.toml")),
    ("etcd-perf-guide", include_str!("../../../configs/scenarios/etcd-perf-guide.toml")),
    ("k8s-cluster", include_str!("../../../configs/scenarios/k8s-cluster.toml")),
    ("k8s-events", include_str!("../../../configs/scenarios/k8s-events.toml")),
    ("k8s-list-watch", include_str!("../../../configs/scenarios/k8s-list-watch.toml")),
    ("k8s-node-heartbeat", include_str!("../../../configs/scenarios/k8s-node-heartbeat.toml")),
    (
        "k8s-optimistic-contention",
        include_str!("../../../configs/scenarios/k8s-optimistic-contention.toml"),
    ),
    ("k8s-pod-churn", include_str!("../../../configs/scenarios/k8s-pod-churn.toml")),
    ("lease-keepalive", include_str!("../../../configs/scenarios/lease-keepalive.toml")),
    ("mix-80-15-5", include_str!("../../../configs/scenarios/mix-80-15-5.toml")),
    (
        "network-latency-analysis",
        include_str!("../../../configs/scenarios/network-latency-analysis.toml"),
    ),
    ("put-1mb", include_str!("../../../configs/scenarios/put-1mb.toml")),
    ("put-256b-1000clients", include_str!("../../../configs/scenarios/put-256b-1000clients.toml")),
    ("put-256b-1client", include_str!("../../../configs/scenarios/put-256b-1client.toml")),
    ("put-compaction", include_str!("../../../configs/scenarios/put-compaction.toml")),
    ("put-faults", include_str!("../../../configs/scenarios/put-faults.toml")),
    ("range-linearizable", include_str!("../../../configs/scenarios/range-linearizable.toml")),
    ("range-serializable", include_str!("../../../configs/scenarios/range-serializable.toml")),
    ("rw-heatmap", include_str!("../../../configs/scenarios/rw-heatmap.toml")),
    ("stm", include_str!("../../../configs/scenarios/stm.toml")),
    ("txn-mixed", include_str!("../../../configs/scenarios/txn-mixed.toml")),
    ("txn-put", include_str!("../../../configs/scenarios/txn-put.toml")),
    ("watch-1000x10", include_str!("../../../configs/scenarios/watch-1000x10.toml")),
    ("watch-10x1000", include_str!("../../../configs/scenarios/watch-10x1000.toml")),
    ("watch-get", include_str!("../../../configs/scenarios/watch-get.toml")),
    ("watch-latency", include_str!("../../../configs/scenarios/watch-latency.toml")),
];

/// The shipped scenario a name refers to: `put-1mb`, `put-1mb.toml`, `scenarios/put-1mb.toml`
/// or `configs/scenarios/put-1mb.toml`.
#[must_use]
pub fn find(name: &str) -> Option<(&'static str, &'static str)> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let base = base.strip_suffix(".toml").unwrap_or(base);
    let dir = name
        .strip_suffix(&format!("{base}.toml"))
        .or_else(|| name.strip_suffix(base))
        .unwrap_or("");
    if !(dir.is_empty() || dir.ends_with("scenarios/")) {
        return None;
    }
    SCENARIOS.iter().copied().find(|(n, _)| *n == base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve() {
        assert_eq!(find("put-1mb").map(|s| s.0), Some("put-1mb"));
        assert_eq!(find("scenarios/put-1mb.toml").map(|s| s.0), Some("put-1mb"));
        assert_eq!(
            find("configs/scenarios/range-serializable.toml").map(|s| s.0),
            Some("range-serializable")
        );
        assert!(find("elsewhere/put-1mb.toml").is_none());
        assert!(find("nope").is_none());
    }

    #[test]
    fn every_shipped_scenario_is_valid() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/scenarios");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".toml").to_owned())
            .collect();
        on_disk.sort();
        let mut built_in: Vec<String> = SCENARIOS.iter().map(|(n, _)| (*n).to_owned()).collect();
        built_in.sort();
        assert_eq!(
            on_disk, built_in,
            "every file in configs/scenarios is built in, and only those"
        );
        for (name, text) in SCENARIOS {
            let s = etcdlat_core::Scenario::from_toml_str(text)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&s.name, name, "the scenario's name is its file name");
            assert!(!s.description.is_empty(), "{name} says what it mirrors");
            assert!(text.starts_with("# Mirrors"), "{name} cites the published figure it mirrors");
        }
    }
}
