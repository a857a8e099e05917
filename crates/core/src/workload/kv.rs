//! Key-value requests: put, range and delete.

use serde::{Deserialize, Serialize};

use super::keyspace::{KeyParams, KeySpace, KeyTarget, TargetSpec};
use super::{InvalidParam, check_val_size, eight, invalid, one};
use crate::unit;

/// The [`TargetSpec`] of a [`RangeOp`] or a [`DeleteOp`] (`$op`): a fixed key or range, or
/// one key per request from the key space whose prefix is `key`. The one reading of the key
/// fields the two share, so that range and delete choose their keys alike. A macro, as the
/// two keep them as fields of their own: their TOML keys and docs are each operation's.
macro_rules! target_spec {
    ($op:expr) => {
        TargetSpec {
            key: &$op.key,
            range_end: $op.range_end.as_deref(),
            prefix: $op.prefix,
            space: $op.key_space_size.map(|space| KeyParams {
                prefix: &$op.key,
                key_size: $op.key_size,
                space,
                start: $op.key_starts,
                sequential: $op.sequential_keys,
                zipf: $op.zipf,
            }),
        }
    };
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
    /// Its key-space parameters, gathered from its fields.
    ///
    /// Each operation keeps the fields as its own, rather than in one struct of them all
    /// that it would embed: its TOML table is flat, and serde's `flatten` cannot be used
    /// with `deny_unknown_fields` (an unknown key would no longer be refused with its line
    /// and column); the defaults and the scenario echo (txn's `key-starts` is left out at
    /// 0, put's is not) are each operation's, and so is the public struct an embedder
    /// builds. What they are used for, the checks and the key space, is one
    /// ([`KeyParams`]).
    fn keys(&self) -> KeyParams<'_> {
        KeyParams {
            prefix: &self.prefix,
            key_size: self.key_size,
            space: self.key_space_size,
            start: self.key_starts,
            sequential: self.sequential_keys,
            zipf: self.zipf,
        }
    }

    /// The keys this workload writes.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        self.keys().key_space()
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        self.keys().check(at)?;
        check_val_size(at, self.val_size)
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
    /// Read through the RangeStream RPC (etcd 3.7+): the answer comes as a stream of
    /// messages; the request is timed to the last (`range`) and to the first
    /// (`range-first`).
    #[serde(default)]
    pub stream: bool,
    /// Read in pages of `page-size` keys, every page at the first page's revision (how
    /// Kubernetes' watch cache lists); all the pages are one request, timed as one.
    #[serde(default)]
    pub paginate: bool,
    /// Keys per page of `paginate`. Default 10,000 (etcd's tool, and Kubernetes' watch
    /// cache).
    #[serde(default = "page_size")]
    pub page_size: u64,
}

/// etcd's tool's page size for `range --paginate`: Kubernetes' watch cache's.
pub const DEFAULT_PAGE_SIZE: u64 = 10_000;

fn page_size() -> u64 {
    DEFAULT_PAGE_SIZE
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
            stream: false,
            paginate: false,
            page_size: DEFAULT_PAGE_SIZE,
        }
    }
}

impl RangeOp {
    fn spec(&self) -> TargetSpec<'_> {
        target_spec!(self)
    }

    /// Which keys the requests read.
    #[must_use]
    pub fn target(&self) -> KeyTarget {
        self.spec().target()
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        self.spec().check(at)?;
        if i64::try_from(self.limit).is_err() {
            return Err(invalid(at, "limit", "is too large"));
        }
        if self.count_only && self.keys_only {
            return Err(invalid(at, "count-only", "cannot be combined with keys-only"));
        }
        if self.paginate {
            // As etcd's tool: the pages' own limit is the page size.
            if self.limit > 0 {
                return Err(invalid(at, "paginate", "cannot be combined with limit"));
            }
            if self.stream {
                return Err(invalid(at, "paginate", "cannot be combined with stream"));
            }
            if self.page_size == 0 || i64::try_from(self.page_size).is_err() {
                return Err(invalid(at, "page-size", "must be between 1 and 2^63 - 1"));
            }
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
        target_spec!(self)
    }

    /// Which keys the requests delete.
    #[must_use]
    pub fn target(&self) -> KeyTarget {
        self.spec().target()
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        self.spec().check(at)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn streams_and_pages() {
        let r: RangeOp = toml::from_str("key = \"k\"\nstream = true\n").unwrap();
        assert!(r.stream && !r.paginate);
        let r: RangeOp = toml::from_str("prefix = true\npaginate = true\n").unwrap();
        assert_eq!((r.paginate, r.page_size), (true, DEFAULT_PAGE_SIZE));
        assert!(r.validate_at("op.range").is_ok());
        let bad = |r: RangeOp| r.validate_at("op.range").unwrap_err().field;
        let paged = RangeOp { prefix: true, paginate: true, ..RangeOp::default() };
        assert_eq!(bad(RangeOp { limit: 5, ..paged.clone() }), "op.range.paginate");
        assert_eq!(bad(RangeOp { stream: true, ..paged.clone() }), "op.range.paginate");
        assert_eq!(bad(RangeOp { page_size: 0, ..paged }), "op.range.page-size");
        let both =
            RangeOp { key: "k".into(), count_only: true, keys_only: true, ..RangeOp::default() };
        assert_eq!(bad(both), "op.range.count-only");
    }

    #[test]
    fn zipf_exponent_must_be_positive() {
        let p = PutOp { zipf: Some(0.0), key_space_size: 10, ..PutOp::default() };
        assert!(p.validate_at("op.put").is_err());
        let p = PutOp { zipf: Some(1.1), key_space_size: 10, ..PutOp::default() };
        assert!(p.validate_at("op.put").is_ok());
    }
}
