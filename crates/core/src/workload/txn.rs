//! Transactions: txn-put (several puts each) and txn-mixed (single reads or writes).

use serde::{Deserialize, Serialize};

use super::keyspace::{KeyParams, KeySpace, key_bytes, prefix_end, range_start};
use super::kv::Consistency;
use super::{InvalidParam, check_positive, check_val_size, eight, invalid, one, thousand};
use crate::unit;

/// Parameters of txn-put: transactions of `txn-ops` puts. Transaction `i` writes keys
/// `(i * txn-ops + j) % key-space-size` for `j` in `0..txn-ops`, as etcd's tool does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TxnPutOp {
    /// Puts per transaction. Default 1.
    #[serde(default = "one")]
    pub txn_ops: u64,
    /// Key size. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Value size. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub val_size: u64,
    /// Distinct keys. Default 1.
    #[serde(default = "one")]
    pub key_space_size: u64,
    /// Bytes put before every key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// First key index: keys are `key-starts .. key-starts + key-space-size` (how shards
    /// split the key space).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub key_starts: u64,
    /// Seed of the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Default for TxnPutOp {
    fn default() -> Self {
        Self {
            txn_ops: 1,
            key_size: 8,
            val_size: 8,
            key_space_size: 1,
            prefix: String::new(),
            key_starts: 0,
            seed: None,
        }
    }
}

impl TxnPutOp {
    /// Its key-space parameters: its keys are always sequential ([`super::kv::PutOp::keys`]).
    fn keys(&self) -> KeyParams<'_> {
        KeyParams {
            prefix: &self.prefix,
            key_size: self.key_size,
            space: self.key_space_size,
            start: self.key_starts,
            sequential: true,
            zipf: None,
        }
    }

    /// The keys the transactions write.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        self.keys().key_space()
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_positive(at, "txn-ops", self.txn_ops)?;
        self.keys().check(at)?;
        if self.txn_ops > self.key_space_size {
            return Err(invalid(
                at,
                "txn-ops",
                format!(
                    "expected no larger than key-space-size ({}): etcd rejects a transaction that writes a key twice",
                    self.key_space_size
                ),
            ));
        }
        if self.txn_ops > 10_000 {
            return Err(invalid(at, "txn-ops", "more than 10000 operations per transaction"));
        }
        check_val_size(at, self.val_size)
    }
}

/// Parameters of txn-mixed: single-operation transactions, each a read with probability
/// `rw-ratio / (1 + rw-ratio)` and a write otherwise; reads and writes are reported apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TxnMixedOp {
    /// Start of the reads' range (and the writes' key prefix). Default "" (every key).
    #[serde(default)]
    pub key: String,
    /// End of the reads' range; absent: every key starting with `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_key: Option<String>,
    /// Reads per write. Default 1.
    #[serde(default = "one_f64")]
    pub rw_ratio: f64,
    /// Read result limit. Default 1000.
    #[serde(default = "thousand")]
    pub limit: u64,
    /// Read consistency.
    #[serde(default)]
    pub consistency: Consistency,
    /// Key size of writes. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Value size of writes. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub val_size: u64,
    /// Distinct keys written (sequentially). Default 1.
    #[serde(default = "one")]
    pub key_space_size: u64,
    /// First key index written: `key-starts .. key-starts + key-space-size` (how shards
    /// split the key space).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub key_starts: u64,
    /// Seed of the value and of the read/write choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Default for TxnMixedOp {
    fn default() -> Self {
        Self {
            key: String::new(),
            end_key: None,
            rw_ratio: 1.0,
            limit: 1000,
            consistency: Consistency::default(),
            key_size: 8,
            val_size: 8,
            key_space_size: 1,
            key_starts: 0,
            seed: None,
        }
    }
}

impl TxnMixedOp {
    /// Its writes' key-space parameters: sequential keys after `key`
    /// ([`super::kv::PutOp::keys`]).
    fn keys(&self) -> KeyParams<'_> {
        KeyParams {
            prefix: &self.key,
            key_size: self.key_size,
            space: self.key_space_size,
            start: self.key_starts,
            sequential: true,
            zipf: None,
        }
    }

    /// The keys the writes go to.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        self.keys().key_space()
    }

    /// The probability that a transaction is a read.
    #[must_use]
    pub fn read_probability(&self) -> f64 {
        self.rw_ratio / (1.0 + self.rw_ratio)
    }

    /// The first key of the reads' range.
    #[must_use]
    pub fn read_start(&self) -> Vec<u8> {
        range_start(&key_bytes(&self.key), &self.read_end())
    }

    /// The end of the reads' range.
    #[must_use]
    pub fn read_end(&self) -> Vec<u8> {
        self.end_key.as_ref().map_or_else(|| prefix_end(&key_bytes(&self.key)), |e| key_bytes(e))
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        if !(self.rw_ratio.is_finite() && self.rw_ratio >= 0.0) {
            return Err(invalid(
                at,
                "rw-ratio",
                format!("must be 0 or more, got {}", self.rw_ratio),
            ));
        }
        if i64::try_from(self.limit).is_err() {
            return Err(invalid(at, "limit", "is too large"));
        }
        self.keys().check(at)?;
        check_val_size(at, self.val_size)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
fn one_f64() -> f64 {
    1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_mixed_ratio() {
        let t = TxnMixedOp { rw_ratio: 4.0, ..TxnMixedOp::default() };
        assert!((t.read_probability() - 0.8).abs() < 1e-12);
        assert_eq!(t.read_end(), b"\0");
        assert_eq!(t.read_start(), b"\0", "etcd rejects an empty key");
    }

    #[test]
    fn txn_put_cannot_write_a_key_twice() {
        let t = TxnPutOp { txn_ops: 5, key_space_size: 4, ..TxnPutOp::default() };
        assert_eq!(t.validate_at("op.txn-put").unwrap_err().field, "op.txn-put.txn-ops");
    }
}
