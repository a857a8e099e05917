//! Stream workloads: watch, watch-get and watch-latency, each a run of its own.

use serde::{Deserialize, Serialize};

use super::keyspace::{KeyParams, KeySpace};
use super::{InvalidParam, check_positive, check_val_size, eight, hundred, invalid, one, thousand};
use crate::unit;

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
    /// Its key-space parameters: from index 0, sequential or uniform
    /// ([`super::kv::PutOp::keys`]).
    fn keys(&self) -> KeyParams<'_> {
        KeyParams {
            prefix: &self.prefix,
            key_size: self.key_size,
            space: self.key_space_size,
            start: 0,
            sequential: self.sequential_keys,
            zipf: None,
        }
    }

    /// The keys watchers are placed on.
    #[must_use]
    pub fn key_space(&self) -> KeySpace {
        self.keys().key_space()
    }

    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_positive(at, "streams", self.streams)?;
        check_positive(at, "watch-per-stream", self.watch_per_stream)?;
        check_positive(at, "watched-key-total", self.watched_key_total)?;
        check_positive(at, "put-total", self.put_total)?;
        if self.streams.saturating_mul(self.watch_per_stream) > 10_000_000 {
            return Err(invalid(at, "watch-per-stream", "more than 10,000,000 watchers"));
        }
        self.keys().check(at)
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
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
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
    pub(crate) fn validate_at(&self, at: &str) -> Result<(), InvalidParam> {
        check_positive(at, "streams", self.streams)?;
        check_positive(at, "watchers-per-stream", self.watchers_per_stream)?;
        check_positive(at, "put-total", self.put_total)?;
        check_positive(at, "put-rate", self.put_rate)?;
        check_positive(at, "key-size", self.key_size)?;
        check_val_size(at, self.val_size)
    }
}

fn watch_prefix() -> String {
    "watch/".to_owned()
}
fn ten() -> u64 {
    10
}
fn thirty_two() -> u64 {
    32
}
fn ten_thousand() -> u64 {
    10_000
}
