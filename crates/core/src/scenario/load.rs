//! How much load, for how long (`[load]`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ScenarioError, is_default};
use crate::schedule::{Arrivals, Rate, Schedule, Stage};
use crate::unit;

/// The most logical clients one run may have.
pub const MAX_CLIENTS: u32 = 10_000_000;

/// The most gRPC connections one run may open.
pub const MAX_CONNS: u32 = 100_000;

/// How much load, for how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Load {
    /// gRPC connections (each its own HTTP/2 connection). Absent: the driver's own setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns: Option<u32>,
    /// Logical clients; client `i` sends on connection `i % conns`. Default 1.
    #[serde(default = "one_u32")]
    pub clients: u32,
    /// Stop after this many measured requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Stop after this much measured time.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub duration: Option<Duration>,
    /// Requests per second for the whole run; 0 means as fast as the clients go (closed loop).
    /// A non-zero rate caps a closed loop like etcd's `--rate`.
    #[serde(default)]
    pub rate: u64,
    /// Time run before measuring; its requests are not in any figure.
    #[serde(default, with = "unit::duration", skip_serializing_if = "Duration::is_zero")]
    pub warmup: Duration,
    /// `closed` (default: each client sends when its previous request completes, the rate
    /// a cap) or `open` (requests arrive at the rate whatever the server does).
    #[serde(default, skip_serializing_if = "is_default")]
    pub schedule: Schedule,
    /// Open-loop arrivals: `constant` (default) or `poisson`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub arrivals: Arrivals,
    /// A shaped rate instead of `rate`: stages of rate and duration, stepped or ramped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
}

impl Load {
    /// The rate over time: the stages, the constant rate, or unlimited.
    #[must_use]
    pub fn rate_shape(&self) -> Rate {
        if !self.stages.is_empty() {
            Rate::Stages(self.stages.clone())
        } else if self.rate > 0 {
            Rate::Constant(self.rate as f64)
        } else {
            Rate::Unlimited
        }
    }

    /// Checks the `[load]` section; a stream workload (`is_stream`) needs no stop condition.
    pub(super) fn validate(&self, is_stream: bool) -> Result<(), ScenarioError> {
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(ScenarioError::invalid(
                "load.clients",
                format!("must be 1 to {MAX_CLIENTS}, got {}", self.clients),
            ));
        }
        if let Some(c) = self.conns
            && (c == 0 || c > MAX_CONNS)
        {
            return Err(ScenarioError::invalid(
                "load.conns",
                format!("must be 1 to {MAX_CONNS}, got {c}"),
            ));
        }
        match (self.total, self.duration) {
            (None, None) if is_stream || !self.stages.is_empty() => {}
            (None, None) => {
                return Err(ScenarioError::invalid(
                    "load",
                    "needs total (requests) or duration (time) to know when to stop",
                ));
            }
            (Some(0), _) => {
                return Err(ScenarioError::invalid("load.total", "must be more than 0"));
            }
            (_, Some(d)) if d.is_zero() => {
                return Err(ScenarioError::invalid("load.duration", "must be more than 0"));
            }
            _ => {}
        }
        if self.schedule == Schedule::Open && self.rate == 0 && self.stages.is_empty() {
            return Err(ScenarioError::invalid(
                "load.schedule",
                "an open loop needs a rate (requests per second) or stages",
            ));
        }
        if self.arrivals == Arrivals::Poisson && self.schedule != Schedule::Open {
            return Err(ScenarioError::invalid(
                "load.arrivals",
                "applies to an open loop (schedule = \"open\")",
            ));
        }
        if !self.stages.is_empty() && self.rate > 0 {
            return Err(ScenarioError::invalid(
                "load.stages",
                "replace rate; give one or the other",
            ));
        }
        for (i, st) in self.stages.iter().enumerate() {
            if st.duration.is_zero() {
                return Err(ScenarioError::invalid(
                    &format!("load.stages.{i}.duration"),
                    "must be more than 0",
                ));
            }
            if st.rate > 100_000_000 {
                return Err(ScenarioError::invalid(
                    &format!("load.stages.{i}.rate"),
                    "is beyond any etcd",
                ));
            }
        }
        if self.rate > 100_000_000 {
            return Err(ScenarioError::invalid(
                "load.rate",
                format!("{} requests per second is beyond any etcd", self.rate),
            ));
        }
        Ok(())
    }
}

impl Default for Load {
    fn default() -> Self {
        Self {
            conns: None,
            clients: 1,
            total: None,
            duration: None,
            rate: 0,
            warmup: Duration::ZERO,
            schedule: Schedule::default(),
            arrivals: Arrivals::default(),
            stages: Vec::new(),
        }
    }
}

fn one_u32() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use crate::workload::{Operation, PutOp};

    #[test]
    fn needs_a_stop_condition() {
        let err = Scenario::from_toml_str("[load]\nrate = 10\n[op.put]\n").unwrap_err();
        assert_eq!(err.field(), Some("load"));
        assert!(err.to_string().starts_with("line 1, column 1: load: needs total"), "{err}");
        let mut s = Scenario::new(Operation::Put(PutOp::default()));
        s.load.total = None;
        assert_eq!(s.validate().unwrap_err().field(), Some("load"));
    }
}
