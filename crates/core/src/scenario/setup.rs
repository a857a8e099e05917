//! `[setup]`: data written before a run and not measured.

use serde::{Deserialize, Serialize};

use super::{MAX_CLIENTS, ScenarioError};
use crate::workload::PutOp;

/// Data written before a run and not measured: `total` puts made like [`PutOp`] says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Setup {
    /// Puts to send.
    pub total: u64,
    /// Logical clients sending them. Default 16.
    #[serde(default = "sixteen")]
    pub clients: u32,
    /// How keys and values are made.
    pub put: PutOp,
}

impl Setup {
    /// Checks the `[setup]` section; watch workloads (`is_stream`) take none.
    pub(super) fn validate(&self, is_stream: bool) -> Result<(), ScenarioError> {
        if self.total == 0 {
            return Err(ScenarioError::invalid("setup.total", "must be more than 0"));
        }
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(ScenarioError::invalid(
                "setup.clients",
                format!("must be 1 to {MAX_CLIENTS}"),
            ));
        }
        self.put.validate_at("setup.put")?;
        if is_stream {
            return Err(ScenarioError::invalid("setup", "is not used by watch workloads"));
        }
        Ok(())
    }
}

fn sixteen() -> u32 {
    16
}
