//! Software transactional memory, as etcd's `concurrency` package runs it.

use serde::{Deserialize, Serialize};

use super::keyspace::check_key_space;
use super::{InvalidParam, check_positive, check_val_size, eight, invalid, one};
use crate::unit;

/// STM isolation level, as etcd's `concurrency` package defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Isolation {
    /// Read committed (`c`): reads are not checked at commit.
    #[serde(rename = "c")]
    ReadCommitted,
    /// Repeatable reads (`r`, default): every key read must be unchanged at commit.
    #[default]
    #[serde(rename = "r")]
    RepeatableReads,
    /// Serializable (`s`): reads from one revision; every key read must be unchanged.
    #[serde(rename = "s")]
    Serializable,
    /// Serializable snapshot (`ss`): as serializable, and keys written must not have changed
    /// since the snapshot either.
    #[serde(rename = "ss")]
    SerializableSnapshot,
}

/// How an STM transaction is wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StmLocker {
    /// Optimistic STM only.
    #[default]
    Stm,
    /// A client-side mutex (a key per waiter under a lock prefix) around the STM.
    LockClient,
    /// etcd's Lock RPC around the STM.
    LockRpc,
}

/// Parameters of the STM workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StmOp {
    /// Isolation: `c`, `r` (default), `s` or `ss`.
    #[serde(default)]
    pub isolation: Isolation,
    /// Distinct keys the transactions touch. Default 1.
    #[serde(default = "one")]
    pub keys: u64,
    /// Keys read per transaction. Default 1.
    #[serde(default = "one")]
    pub keys_per_txn: u64,
    /// Percentage of the keys read that are also written. Default 50.
    #[serde(default = "fifty")]
    pub txn_wr_percent: u64,
    /// Locking around the STM. Default `stm` (none).
    #[serde(default)]
    pub stm_locker: StmLocker,
    /// Value size of writes. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub val_size: u64,
    /// Key prefix. Default "stm/".
    #[serde(default = "stm_prefix")]
    pub prefix: String,
    /// Seed of key choice and values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Default for StmOp {
    fn default() -> Self {
        Self {
            isolation: Isolation::default(),
            keys: 1,
            keys_per_txn: 1,
            txn_wr_percent: 50,
            stm_locker: StmLocker::default(),
            val_size: 8,
            prefix: stm_prefix(),
            seed: None,
        }
    }
}

impl StmOp {
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_positive(at, "keys", self.keys)?;
        if self.keys_per_txn > self.keys {
            return Err(invalid(
                at,
                "keys-per-txn",
                format!("expected between 0 and keys ({}), got {}", self.keys, self.keys_per_txn),
            ));
        }
        if self.keys_per_txn > 1000 {
            return Err(invalid(at, "keys-per-txn", "more than 1000 keys per transaction"));
        }
        if self.txn_wr_percent > 100 {
            return Err(invalid(
                at,
                "txn-wr-percent",
                format!("expected 0 to 100, got {}", self.txn_wr_percent),
            ));
        }
        check_key_space(at, 16, self.keys, 0)?;
        check_val_size(at, self.val_size)
    }
}

fn stm_prefix() -> String {
    "stm/".to_owned()
}
fn fifty() -> u64 {
    50
}
