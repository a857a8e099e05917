//! `[checks]`: what is checked after the measurement (HashKV, the audit).

use serde::{Deserialize, Serialize};

use super::ScenarioError;
use crate::workload::Operation;

/// Checks run after the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Checks {
    /// Compare HashKV of every member at one revision; a mismatch fails the run (exit 1).
    #[serde(default)]
    pub hashkv: bool,
    /// Audit the run's history ([`crate::audit`]): lost writes, real-time order, stale
    /// linearizable reads and duplicate revisions fail the run (exit 1); serializable
    /// reads' staleness is measured.
    #[serde(default)]
    pub audit: bool,
    /// The most entries the audit records: one per request, one per key of a txn-put (56
    /// bytes each); later requests are counted, not audited. Default 1,000,000.
    #[serde(default = "million")]
    pub audit_limit: u64,
}

impl Default for Checks {
    fn default() -> Self {
        Self { hashkv: false, audit: false, audit_limit: million() }
    }
}

/// The most requests an audit may record: 5.6 GB of entries.
pub const MAX_AUDIT_LIMIT: u64 = 100_000_000;

impl Checks {
    /// Checks the `[checks]` section against the workload it audits.
    pub(super) fn validate(&self, workload: &[(u32, &Operation)]) -> Result<(), ScenarioError> {
        if self.audit_limit == 0 || self.audit_limit > MAX_AUDIT_LIMIT {
            return Err(ScenarioError::invalid(
                "checks.audit-limit",
                format!("must be 1 to {MAX_AUDIT_LIMIT}"),
            ));
        }
        if !self.audit || workload.is_empty() {
            return Ok(());
        }
        if let Some((_, op)) = workload.iter().find(|(_, op)| op.is_stream()) {
            return Err(ScenarioError::invalid(
                "checks.audit",
                format!(
                    "{} is not audited (put, delete, range, txn-put and txn-mixed are)",
                    op.name()
                ),
            ));
        }
        if !workload.iter().any(|(_, op)| op.is_audited()) {
            return Err(ScenarioError::invalid(
                "checks.audit",
                "the workload has nothing to audit (put, delete, range, txn-put and txn-mixed are audited)",
            ));
        }
        Ok(())
    }
}

fn million() -> u64 {
    1_000_000
}
