//! The network a run had (`target.network`): as configured, and what each link carried.

use serde::{Deserialize, Serialize};

use crate::scenario::Network;

/// The network between the client and the members and among the members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkReport {
    /// The `[network]` table the run had (the scenario's, after command-line flags).
    pub config: Network,
    /// The same in words, on one line.
    pub summary: String,
    /// Every emulated link, one entry per direction, in (from, to) order; empty when the
    /// network was not emulated by etcdlat.
    pub links: Vec<LinkReport>,
}

/// One direction of one emulated link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkReport {
    /// Where the bytes come from: `client` or a member's name.
    pub from: String,
    /// Where they go.
    pub to: String,
    /// One-way latency when the run ended, microseconds.
    pub latency_us: u64,
    /// Jitter either way, microseconds.
    pub jitter_us: u64,
    /// Line rate, bytes per second; `None`: unlimited.
    pub bandwidth_bytes_per_s: Option<u64>,
    /// Bytes delivered across it during the measured run (warm-up and setup included when
    /// they overlap it, connections' handshakes not).
    pub bytes: u64,
    /// How late the emulator delivered what crossed it, beyond its latency, microseconds:
    /// the median and the 99th percentile over the run's chunks (time a partition held
    /// them left out); `None` when nothing crossed it.
    pub late_p50_us: Option<u64>,
    /// See `late_p50_us`.
    pub late_p99_us: Option<u64>,
}
