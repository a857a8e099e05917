//! The sizes of the model's objects: the defaults, with the published profiles they come
//! from, and the checks of sizes a scenario sets (each range of a distribution, the largest
//! size against etcd's request limit).

use super::steady::STORED_OVERHEAD_BYTES;
use super::{ETCD_MAX_REQUEST_BYTES, Kubernetes};
use crate::scenario::ScenarioError;
use crate::workload::{SizeDistribution, SizeRange};

impl Kubernetes {
    /// Checks every size: its ranges, and its largest size against etcd's request limit.
    pub(super) fn validate_sizes(&self) -> Result<(), ScenarioError> {
        for (field, size) in [
            ("pod-size", &self.pod_size),
            ("node-size", &self.node_size),
            ("lease-size", &self.lease_size),
            ("event-size", &self.event_size),
            ("replicaset-size", &self.replicaset_size),
            ("endpointslice-size", &self.endpointslice_size),
        ] {
            size.validate_at("kubernetes", field)?;
            let largest = size.max();
            if largest.saturating_add(STORED_OVERHEAD_BYTES) > ETCD_MAX_REQUEST_BYTES {
                let what = match size.is_fixed() {
                    true => format!("{largest} bytes"),
                    false => format!("its largest size, {largest} bytes,"),
                };
                return Err(ScenarioError::invalid(
                    &format!("kubernetes.{field}"),
                    format!(
                        "{what} is over etcd's request limit ({ETCD_MAX_REQUEST_BYTES} bytes, --max-request-bytes): every write of it would fail"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The default pod size: 90% of pods from 4 to 15 KB, 9% from 15 to 70 KB and 1% from 70 to
/// 100 KB, a mean of 13.2 KB. Kubernetes' scalability tests create pods of about 4 KB, "an
/// 8 year old assumption" (kubernetes/kubernetes#134375, "Introduce Resource Size as a new
/// Scalability Dimension"); pods with init containers, sidecars and rich metadata
/// "routinely" average 10 to 20 KB and "occasionally" reach over 70 KB
/// (etcd-io/etcd#22332), and the tests' exemplar pod is 10 KB (kubernetes/perf-tests#3978).
#[must_use]
pub fn default_pod_size() -> SizeDistribution {
    let range = |min_kb: u64, max_kb: u64, weight| SizeRange {
        min: min_kb * 1000,
        max: max_kb * 1000,
        weight,
    };
    SizeDistribution::Ranges(vec![range(4, 15, 90), range(15, 70, 9), range(70, 100, 1)])
}
pub(super) fn node_size() -> SizeDistribution {
    SizeDistribution::Fixed(15 * 1024)
}
pub(super) fn lease_size() -> SizeDistribution {
    SizeDistribution::Fixed(512)
}
pub(super) fn event_size() -> SizeDistribution {
    SizeDistribution::Fixed(1024)
}
pub(super) fn replicaset_size() -> SizeDistribution {
    SizeDistribution::Fixed(2 * 1024)
}
pub(super) fn endpointslice_size() -> SizeDistribution {
    SizeDistribution::Fixed(5 * 1024)
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    #[test]
    fn bad_sizes_are_named() {
        let bad = |model: &str| {
            Scenario::from_toml_str(&format!("[load]\nduration = \"1s\"\n[kubernetes]\n{model}\n"))
                .unwrap_err()
                .to_string()
        };
        // A distribution's impossible range is named by its index and key, where it stands;
        // its largest size is held to etcd's request limit.
        let err = bad(
            "nodes = 10\npod-size = [{ min = \"4KB\", max = \"15KB\" }, { min = \"15KB\", max = \"4KB\" }]",
        );
        assert_eq!(
            err,
            "line 5, column 52: kubernetes.pod-size.1.min: 15000 bytes is more than max (4000 bytes)"
        );
        let err = bad("nodes = 10\npod-size = [{ min = \"4KB\", max = \"15KB\", weight = 0 }]");
        assert!(err.ends_with("kubernetes.pod-size.0.weight: must be more than 0"), "{err}");
        let err = bad("nodes = 10\nnode-size = [{ min = \"4KB\", max = \"2MiB\" }]");
        assert!(
            err.contains("kubernetes.node-size: its largest size, 2097152 bytes, is over etcd's request limit"),
            "{err}"
        );
    }
}
