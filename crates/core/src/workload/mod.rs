//! Workloads: the operations a scenario runs, with their parameters, the keys they choose
//! and how they are checked.
//!
//! Request operations (`put`, `range`, `delete`, `txn-put`, `txn-mixed`, `lease-*`, `stm`)
//! run in the request loop of every logical client and can be mixed by weight; stream
//! workloads (`watch`, `watch-get`, `watch-latency`) organise a run of their own.
//! Names, flags and defaults follow etcd's benchmark tool.

pub mod keyspace;

use serde::{Deserialize, Serialize};

use crate::op::OpKind;
use crate::scenario::ScenarioError;
use crate::unit;
use keyspace::{KeyDist, KeySpace, varint_len};

/// The largest value size a scenario may ask for. etcd rejects requests over its
/// `--max-request-bytes` (1.5 MiB by default); larger values are allowed so that the
/// rejection itself can be measured, but not without bound.
pub const MAX_VALUE_SIZE: u64 = 256 << 20;

/// What a scenario runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// Put a key, as etcd's `benchmark put`.
    Put(PutOp),
    /// Read a key or a range, as etcd's `benchmark range`.
    Range(RangeOp),
    /// Delete a key or a range (DeleteRange).
    Delete(DeleteOp),
    /// Transactions of `txn-ops` puts each, as etcd's `benchmark txn-put`.
    TxnPut(TxnPutOp),
    /// Single-op transactions, reads or writes by `rw-ratio`, as etcd's `benchmark txn-mixed`.
    TxnMixed(TxnMixedOp),
    /// Grant a lease.
    LeaseGrant(LeaseOp),
    /// Revoke a lease (granted beforehand, unmeasured, when the client holds none).
    LeaseRevoke(LeaseOp),
    /// One keep-alive round trip on the client's lease, as etcd's `benchmark lease-keepalive`.
    LeaseKeepalive(LeaseOp),
    /// Software transactional memory transactions, as etcd's `benchmark stm`.
    Stm(StmOp),
    /// Watchers on streams, then puts on the watched keys, as etcd's `benchmark watch`.
    Watch(WatchOp),
    /// Serializable gets while many unsynced watchers catch up, as `benchmark watch-get`.
    WatchGet(WatchGetOp),
    /// Put-to-event latency on many watchers of one key, as `benchmark watch-latency`.
    WatchLatency(WatchLatencyOp),
}

impl Operation {
    /// The operation's name, as in TOML and on the command line.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Put(_) => "put",
            Self::Range(_) => "range",
            Self::Delete(_) => "delete",
            Self::TxnPut(_) => "txn-put",
            Self::TxnMixed(_) => "txn-mixed",
            Self::LeaseGrant(_) => "lease-grant",
            Self::LeaseRevoke(_) => "lease-revoke",
            Self::LeaseKeepalive(_) => "lease-keepalive",
            Self::Stm(_) => "stm",
            Self::Watch(_) => "watch",
            Self::WatchGet(_) => "watch-get",
            Self::WatchLatency(_) => "watch-latency",
        }
    }

    /// The kinds of measurement this operation reports.
    #[must_use]
    pub fn kinds(&self) -> &'static [OpKind] {
        match self {
            Self::Put(_) => &[OpKind::Put],
            Self::Range(_) => &[OpKind::Range],
            Self::Delete(_) => &[OpKind::Delete],
            Self::TxnPut(_) => &[OpKind::TxnPut],
            Self::TxnMixed(_) => &[OpKind::TxnRead, OpKind::TxnWrite],
            Self::LeaseGrant(_) => &[OpKind::LeaseGrant],
            Self::LeaseRevoke(_) => &[OpKind::LeaseRevoke],
            Self::LeaseKeepalive(_) => &[OpKind::LeaseKeepalive],
            Self::Stm(_) => &[OpKind::Stm],
            Self::Watch(_) => &[OpKind::Put, OpKind::WatchCreate, OpKind::WatchEvent],
            Self::WatchGet(_) => &[OpKind::Range, OpKind::WatchCreate],
            Self::WatchLatency(_) => {
                &[OpKind::Put, OpKind::WatchCreate, OpKind::WatchEvent, OpKind::WatchEventAcked]
            }
        }
    }

    /// Whether this is a stream workload (watch family) that runs on its own rather than in
    /// the request loop; such operations cannot be mixed.
    #[must_use]
    pub fn is_stream(&self) -> bool {
        matches!(self, Self::Watch(_) | Self::WatchGet(_) | Self::WatchLatency(_))
    }

    /// The seed the operation asks for, if any.
    #[must_use]
    pub fn seed(&self) -> Option<u64> {
        match self {
            Self::Put(p) => p.seed,
            Self::TxnPut(t) => t.seed,
            Self::TxnMixed(t) => t.seed,
            Self::Stm(s) => s.seed,
            _ => None,
        }
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        let at = format!("{at}.{}", self.name());
        match self {
            Self::Put(p) => p.validate_at(&at),
            Self::Range(r) => r.validate_at(&at),
            Self::Delete(d) => d.validate_at(&at),
            Self::TxnPut(t) => t.validate_at(&at),
            Self::TxnMixed(t) => t.validate_at(&at),
            Self::LeaseGrant(l) | Self::LeaseRevoke(l) | Self::LeaseKeepalive(l) => {
                l.validate_at(&at)
            }
            Self::Stm(s) => s.validate_at(&at),
            Self::Watch(w) => w.validate_at(&at),
            Self::WatchGet(w) => w.validate_at(&at),
            Self::WatchLatency(w) => w.validate_at(&at),
        }
    }
}

/// One operation of a weighted mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Weighted {
    /// Relative share of requests (80, 15, 5 for an 80/15/5 mix).
    pub weight: u32,
    /// The operation.
    pub op: Operation,
}

fn invalid(at: &str, field: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::invalid(&format!("{at}.{field}"), message)
}

fn check_val_size(at: &str, val_size: u64) -> Result<(), ScenarioError> {
    if val_size > MAX_VALUE_SIZE {
        return Err(invalid(
            at,
            "val-size",
            format!("{val_size} bytes is more than the supported {MAX_VALUE_SIZE}"),
        ));
    }
    Ok(())
}

fn check_positive(at: &str, field: &str, value: u64) -> Result<(), ScenarioError> {
    if value == 0 {
        return Err(invalid(at, field, "must be more than 0"));
    }
    Ok(())
}

/// Checks that a key space of `space` keys from `start` fits `key_size` bytes.
fn check_key_space(at: &str, key_size: u64, space: u64, start: u64) -> Result<(), ScenarioError> {
    check_positive(at, "key-space-size", space)?;
    let Some(last) = start.checked_add(space - 1).filter(|&k| k <= i64::MAX as u64) else {
        return Err(invalid(at, "key-starts", "key-starts + key-space-size is too large"));
    };
    let need = varint_len(last) as u64;
    if key_size < need {
        return Err(invalid(
            at,
            "key-size",
            format!(
                "{key_size} bytes cannot hold {space} distinct keys starting at {start}; need at least {need}"
            ),
        ));
    }
    if key_size > 1 << 20 {
        return Err(invalid(at, "key-size", "keys over 1 MiB are not supported"));
    }
    Ok(())
}

fn key_dist(sequential: bool, zipf: Option<f64>) -> KeyDist {
    match (sequential, zipf) {
        (_, Some(exponent)) => KeyDist::Zipf { exponent },
        (true, None) => KeyDist::Sequential,
        (false, None) => KeyDist::Uniform,
    }
}

fn check_dist(at: &str, sequential: bool, zipf: Option<f64>) -> Result<(), ScenarioError> {
    match zipf {
        Some(_) if sequential => {
            Err(invalid(at, "zipf", "cannot be combined with sequential-keys"))
        }
        Some(s) if !(s.is_finite() && s > 0.0) => {
            Err(invalid(at, "zipf", format!("the exponent must be more than 0, got {s}")))
        }
        _ => Ok(()),
    }
}

/// Parameters of a put workload. Keys and values are made as etcd's benchmark tool makes
/// them, so results are comparable: the key is the zig-zag varint of its index in a
/// `key-size` buffer, the value one random buffer reused for every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PutOp {
    /// Bytes of the key after the prefix. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Bytes of the value. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub val_size: u64,
    /// Number of distinct keys. Default 1 (etcd's default: every put writes the same key).
    #[serde(default = "one")]
    pub key_space_size: u64,
    /// Key index `i % key-space-size` for request `i`; otherwise uniformly random.
    #[serde(default)]
    pub sequential_keys: bool,
    /// Zipf-distributed keys with this exponent (index 0 the most frequent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf: Option<f64>,
    /// First key index: keys are `key-starts .. key-starts + key-space-size`.
    #[serde(default)]
    pub key_starts: u64,
    /// Bytes put before every key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// Seed of the random value and of random key choice, for reproducible runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Default for PutOp {
    fn default() -> Self {
        Self {
            key_size: 8,
            val_size: 8,
            key_space_size: 1,
            sequential_keys: false,
            zipf: None,
            key_starts: 0,
            prefix: String::new(),
            seed: None,
        }
    }
}

impl PutOp {
    /// The keys this workload writes.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        KeySpace {
            prefix: self.prefix.as_bytes().to_vec(),
            key_size: self.key_size,
            space: self.key_space_size,
            start: self.key_starts,
            dist: key_dist(self.sequential_keys, self.zipf),
        }
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        check_key_space(at, self.key_size, self.key_space_size, self.key_starts)?;
        check_dist(at, self.sequential_keys, self.zipf)?;
        check_val_size(at, self.val_size)
    }
}

/// Which keys a range or delete touches.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyTarget {
    /// The same key or range every time: `key` to `range_end` (empty: just `key`).
    Fixed {
        /// First key.
        key: Vec<u8>,
        /// End of the range, exclusive; empty for a single key.
        range_end: Vec<u8>,
    },
    /// One key per request from a key space (`key` is its prefix).
    Space(KeySpace),
}

/// The range end that covers every key starting with `prefix` (etcd's `GetPrefixRangeEnd`);
/// `\0` (every key) for an empty prefix or one of only 0xff bytes.
#[must_use]
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The first key of a range: etcd rejects an empty key, so a range over every key (empty
/// start, non-empty end) starts at `\0`, as etcd's client does.
#[must_use]
pub fn range_start(key: &[u8], range_end: &[u8]) -> Vec<u8> {
    if key.is_empty() && !range_end.is_empty() { vec![0] } else { key.to_vec() }
}

/// Key selection shared by range and delete, borrowed from either.
struct TargetSpec<'a> {
    key: &'a str,
    range_end: Option<&'a str>,
    prefix: bool,
    space: Option<u64>,
    key_size: u64,
    sequential: bool,
    zipf: Option<f64>,
    start: u64,
}

impl TargetSpec<'_> {
    fn target(&self) -> KeyTarget {
        match self.space {
            Some(space) => KeyTarget::Space(KeySpace {
                prefix: self.key.as_bytes().to_vec(),
                key_size: self.key_size,
                space,
                start: self.start,
                dist: key_dist(self.sequential, self.zipf),
            }),
            None => {
                let range_end = if self.prefix {
                    prefix_end(self.key.as_bytes())
                } else {
                    self.range_end.map(|e| e.as_bytes().to_vec()).unwrap_or_default()
                };
                KeyTarget::Fixed { key: range_start(self.key.as_bytes(), &range_end), range_end }
            }
        }
    }

    fn check(&self, at: &str) -> Result<(), ScenarioError> {
        if self.prefix && self.range_end.is_some() {
            return Err(invalid(at, "prefix", "cannot be combined with range-end"));
        }
        match self.space {
            Some(space) => {
                if self.prefix || self.range_end.is_some() {
                    return Err(invalid(
                        at,
                        "key-space-size",
                        "means one key per request; it cannot be combined with prefix or range-end",
                    ));
                }
                check_key_space(at, self.key_size, space, self.start)?;
                check_dist(at, self.sequential, self.zipf)
            }
            None if self.key.is_empty() && !self.prefix && self.range_end.is_none() => {
                Err(invalid(
                    at,
                    "key",
                    "must not be empty (use prefix = true for every key, or key-space-size)",
                ))
            }
            None => Ok(()),
        }
    }
}

/// Parameters of a range (read) workload: a fixed key or range, or one key per request from
/// a key space whose prefix is `key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RangeOp {
    /// The key, the first key of the range, or the prefix of the key space.
    #[serde(default)]
    pub key: String,
    /// End of the range (exclusive). `"\u0000"` reads every key from `key` on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<String>,
    /// Read every key that starts with `key`.
    #[serde(default)]
    pub prefix: bool,
    /// Linearizable (`l`, default) or serializable (`s`).
    #[serde(default)]
    pub consistency: Consistency,
    /// At most this many keys per response; 0 = no limit.
    #[serde(default)]
    pub limit: u64,
    /// Return only the count of keys.
    #[serde(default)]
    pub count_only: bool,
    /// Return keys without values.
    #[serde(default)]
    pub keys_only: bool,
    /// Read one key per request from this many keys (made like put's keys, after `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_space_size: Option<u64>,
    /// Key size for `key-space-size`. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Sequential keys for `key-space-size`.
    #[serde(default)]
    pub sequential_keys: bool,
    /// Zipf-distributed keys for `key-space-size`, with this exponent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf: Option<f64>,
    /// First key index for `key-space-size`.
    #[serde(default)]
    pub key_starts: u64,
}

impl Default for RangeOp {
    fn default() -> Self {
        Self {
            key: String::new(),
            range_end: None,
            prefix: false,
            consistency: Consistency::default(),
            limit: 0,
            count_only: false,
            keys_only: false,
            key_space_size: None,
            key_size: 8,
            sequential_keys: false,
            zipf: None,
            key_starts: 0,
        }
    }
}

impl RangeOp {
    fn spec(&self) -> TargetSpec<'_> {
        TargetSpec {
            key: &self.key,
            range_end: self.range_end.as_deref(),
            prefix: self.prefix,
            space: self.key_space_size,
            key_size: self.key_size,
            sequential: self.sequential_keys,
            zipf: self.zipf,
            start: self.key_starts,
        }
    }

    /// Which keys the requests read.
    #[must_use]
    pub fn target(&self) -> KeyTarget {
        self.spec().target()
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        self.spec().check(at)?;
        if i64::try_from(self.limit).is_err() {
            return Err(invalid(at, "limit", "is too large"));
        }
        Ok(())
    }
}

/// Parameters of a delete workload: a fixed key or range, or one key per request from a key
/// space whose prefix is `key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DeleteOp {
    /// The key, the first key of the range, or the prefix of the key space.
    #[serde(default)]
    pub key: String,
    /// End of the range (exclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<String>,
    /// Delete every key that starts with `key`.
    #[serde(default)]
    pub prefix: bool,
    /// Delete one key per request from this many keys (made like put's keys, after `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_space_size: Option<u64>,
    /// Key size for `key-space-size`. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Sequential keys for `key-space-size`.
    #[serde(default)]
    pub sequential_keys: bool,
    /// Zipf-distributed keys for `key-space-size`, with this exponent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf: Option<f64>,
    /// First key index for `key-space-size`.
    #[serde(default)]
    pub key_starts: u64,
}

impl DeleteOp {
    fn spec(&self) -> TargetSpec<'_> {
        TargetSpec {
            key: &self.key,
            range_end: self.range_end.as_deref(),
            prefix: self.prefix,
            space: self.key_space_size,
            key_size: self.key_size,
            sequential: self.sequential_keys,
            zipf: self.zipf,
            start: self.key_starts,
        }
    }

    /// Which keys the requests delete.
    #[must_use]
    pub fn target(&self) -> KeyTarget {
        self.spec().target()
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        self.spec().check(at)
    }
}

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
    /// The keys the transactions write.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        KeySpace {
            prefix: self.prefix.as_bytes().to_vec(),
            key_size: self.key_size,
            space: self.key_space_size,
            start: self.key_starts,
            dist: KeyDist::Sequential,
        }
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        check_positive(at, "txn-ops", self.txn_ops)?;
        check_key_space(at, self.key_size, self.key_space_size, self.key_starts)?;
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
    /// The keys the writes go to.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        KeySpace {
            prefix: self.key.as_bytes().to_vec(),
            key_size: self.key_size,
            space: self.key_space_size,
            start: self.key_starts,
            dist: KeyDist::Sequential,
        }
    }

    /// The probability that a transaction is a read.
    #[must_use]
    pub fn read_probability(&self) -> f64 {
        self.rw_ratio / (1.0 + self.rw_ratio)
    }

    /// The first key of the reads' range.
    #[must_use]
    pub fn read_start(&self) -> Vec<u8> {
        range_start(self.key.as_bytes(), &self.read_end())
    }

    /// The end of the reads' range.
    #[must_use]
    pub fn read_end(&self) -> Vec<u8> {
        self.end_key
            .as_ref()
            .map_or_else(|| prefix_end(self.key.as_bytes()), |e| e.as_bytes().to_vec())
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
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
        check_key_space(at, self.key_size, self.key_space_size, self.key_starts)?;
        check_val_size(at, self.val_size)
    }
}

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
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        check_positive(at, "ttl", self.ttl)?;
        if i64::try_from(self.ttl).is_err() {
            return Err(invalid(at, "ttl", "is too large"));
        }
        Ok(())
    }
}

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
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
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

/// Parameters of the watch workload: `streams` watch streams (spread over the connections)
/// with `watch-per-stream` watchers each, watching `watched-key-total` keys round robin;
/// then `put-total` puts on the watched keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WatchOp {
    /// Watch streams. Default 10.
    #[serde(default = "ten")]
    pub streams: u64,
    /// Watchers per stream. Default 100.
    #[serde(default = "hundred")]
    pub watch_per_stream: u64,
    /// Distinct watched keys. Default 1.
    #[serde(default = "one")]
    pub watched_key_total: u64,
    /// Puts per second; 0 = unlimited.
    #[serde(default)]
    pub put_rate: u64,
    /// Puts. Default 1000.
    #[serde(default = "thousand")]
    pub put_total: u64,
    /// Key size. Default 32.
    #[serde(default = "thirty_two", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Key space the watched keys are chosen from. Default 1.
    #[serde(default = "one")]
    pub key_space_size: u64,
    /// Watched key `i` is index `i % key-space-size`; otherwise random.
    #[serde(default)]
    pub sequential_keys: bool,
    /// Bytes put before every key. Default "watch/".
    #[serde(default = "watch_prefix")]
    pub prefix: String,
}

impl Default for WatchOp {
    fn default() -> Self {
        Self {
            streams: 10,
            watch_per_stream: 100,
            watched_key_total: 1,
            put_rate: 0,
            put_total: 1000,
            key_size: 32,
            key_space_size: 1,
            sequential_keys: false,
            prefix: watch_prefix(),
        }
    }
}

impl WatchOp {
    /// The keys watchers are placed on.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        KeySpace {
            prefix: self.prefix.as_bytes().to_vec(),
            key_size: self.key_size,
            space: self.key_space_size,
            start: 0,
            dist: key_dist(self.sequential_keys, None),
        }
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        check_positive(at, "streams", self.streams)?;
        check_positive(at, "watch-per-stream", self.watch_per_stream)?;
        check_positive(at, "watched-key-total", self.watched_key_total)?;
        check_positive(at, "put-total", self.put_total)?;
        if self.streams.saturating_mul(self.watch_per_stream) > 10_000_000 {
            return Err(invalid(at, "watch-per-stream", "more than 10,000,000 watchers"));
        }
        check_key_space(at, self.key_size, self.key_space_size, 0)
    }
}

/// Parameters of watch-get: `watchers` watchers on `streams` streams start watching a key
/// from a past revision with `events` events to catch up on, while one client measures
/// serializable gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WatchGetOp {
    /// Watchers. Default 10000.
    #[serde(default = "ten_thousand")]
    pub watchers: u64,
    /// Streams. Default 1.
    #[serde(default = "one")]
    pub streams: u64,
    /// Events each watcher catches up on. Default 8.
    #[serde(default = "eight")]
    pub events: u64,
}

impl Default for WatchGetOp {
    fn default() -> Self {
        Self { watchers: 10_000, streams: 1, events: 8 }
    }
}

impl WatchGetOp {
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        check_positive(at, "watchers", self.watchers)?;
        check_positive(at, "streams", self.streams)?;
        check_positive(at, "events", self.events)?;
        if self.watchers > 10_000_000 {
            return Err(invalid(at, "watchers", "more than 10,000,000 watchers"));
        }
        Ok(())
    }
}

/// Parameters of watch-latency: `streams` streams with `watchers-per-stream` watchers each
/// on one key; `put-total` puts at `put-rate`; every event's latency from the put's send and
/// from its acknowledgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WatchLatencyOp {
    /// Watch streams. Default 10.
    #[serde(default = "ten")]
    pub streams: u64,
    /// Watchers per stream. Default 10.
    #[serde(default = "ten")]
    pub watchers_per_stream: u64,
    /// Puts per second. Default 100.
    #[serde(default = "hundred")]
    pub put_rate: u64,
    /// Puts. Default 10000.
    #[serde(default = "ten_thousand")]
    pub put_total: u64,
    /// Ask for the previous key-value with every event.
    #[serde(default)]
    pub prevkv: bool,
    /// Key size. Default 32.
    #[serde(default = "thirty_two", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Value size. Default 32.
    #[serde(default = "thirty_two", deserialize_with = "unit::size::deserialize")]
    pub val_size: u64,
}

impl Default for WatchLatencyOp {
    fn default() -> Self {
        Self {
            streams: 10,
            watchers_per_stream: 10,
            put_rate: 100,
            put_total: 10_000,
            prevkv: false,
            key_size: 32,
            val_size: 32,
        }
    }
}

impl WatchLatencyOp {
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        check_positive(at, "streams", self.streams)?;
        check_positive(at, "watchers-per-stream", self.watchers_per_stream)?;
        check_positive(at, "put-total", self.put_total)?;
        check_positive(at, "put-rate", self.put_rate)?;
        check_positive(at, "key-size", self.key_size)?;
        check_val_size(at, self.val_size)
    }
}

/// Read consistency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Consistency {
    /// Linearizable: goes through consensus (a ReadIndex round) before answering.
    #[default]
    #[serde(rename = "l", alias = "linearizable")]
    Linearizable,
    /// Serializable: answered from the member's local state.
    #[serde(rename = "s", alias = "serializable")]
    Serializable,
}

impl Consistency {
    /// `l` or `s`, as etcd's tool spells it.
    #[must_use]
    pub fn letter(self) -> &'static str {
        match self {
            Self::Linearizable => "l",
            Self::Serializable => "s",
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
fn one() -> u64 {
    1
}
fn one_f64() -> f64 {
    1.0
}
fn eight() -> u64 {
    8
}
fn ten() -> u64 {
    10
}
fn thirty_two() -> u64 {
    32
}
fn fifty() -> u64 {
    50
}
fn hundred() -> u64 {
    100
}
fn thousand() -> u64 {
    1000
}
fn ten_thousand() -> u64 {
    10_000
}
fn stm_prefix() -> String {
    "stm/".to_owned()
}
fn watch_prefix() -> String {
    "watch/".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"abc"), b"abd");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b""), b"\0");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
    }

    #[test]
    fn targets() {
        let r = RangeOp { key: "k/".into(), prefix: true, ..RangeOp::default() };
        assert_eq!(r.target(), KeyTarget::Fixed { key: b"k/".to_vec(), range_end: b"k0".to_vec() });
        let r = RangeOp { key: "k/".into(), key_space_size: Some(10), ..RangeOp::default() };
        assert!(
            matches!(r.target(), KeyTarget::Space(ref s) if s.space == 10 && s.prefix == b"k/")
        );
        let bad = RangeOp {
            key: "k/".into(),
            prefix: true,
            key_space_size: Some(10),
            ..RangeOp::default()
        };
        assert!(bad.validate_at("op.range").is_err());
    }

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
        assert_eq!(t.validate_at("op.txn-put").unwrap_err().field(), Some("op.txn-put.txn-ops"));
    }

    #[test]
    fn zipf_exponent_must_be_positive() {
        let p = PutOp { zipf: Some(0.0), key_space_size: 10, ..PutOp::default() };
        assert!(p.validate_at("op.put").is_err());
        let p = PutOp { zipf: Some(1.1), key_space_size: 10, ..PutOp::default() };
        assert!(p.validate_at("op.put").is_ok());
    }
}
