//! Leases: grant, revoke and keep-alive.

use serde::{Deserialize, Serialize};

use super::{InvalidParam, check_positive, hundred, invalid};

/// Parameters of the lease operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LeaseOp {
    /// Time to live of granted leases, seconds. Default 100 (etcd's tool).
    #[serde(default = "hundred")]
    pub ttl: u64,
}

impl Default for LeaseOp {
    fn default() -> Self {
        Self { ttl: 100 }
    }
}

impl LeaseOp {
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_positive(at, "ttl", self.ttl)?;
        if i64::try_from(self.ttl).is_err() {
            return Err(invalid(at, "ttl", "is too large"));
        }
        Ok(())
    }
}
