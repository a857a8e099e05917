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
    /// What the emulator itself spent during the run, on its own threads of the client's
    /// process (summed); the report's `client` figures leave it out. `None` when the
    /// network was not emulated by etcdlat or a thread could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulator: Option<EmulatorUsage>,
}

/// The network emulator's own CPU during a run, all its threads together
/// ([`NetworkReport::emulator`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EmulatorUsage {
    /// CPU time in user mode, seconds (clock ticks of 10 ms).
    pub user_cpu_s: f64,
    /// CPU time in the kernel on its behalf, seconds.
    pub system_cpu_s: f64,
    /// Voluntary context switches.
    pub voluntary_ctxt_switches: u64,
    /// Involuntary context switches.
    pub nonvoluntary_ctxt_switches: u64,
    /// Every emulator thread was scheduled real-time (`SCHED_FIFO`) when the run ended,
    /// ahead of the members' and the client's threads, as the kernel's own network runs
    /// ahead of processes. `false` when the process may not raise them (neither root nor
    /// `CAP_SYS_NICE`): then a link's lateness under load includes the time its thread
    /// waited for a core.
    #[serde(default)]
    pub realtime: bool,
}

/// How late a link may deliver at p99 before its run is warned about
/// ([`NetworkReport::late_links`]): a tenth of its latency, and never less than this.
pub const LATE_FLOOR_US: u64 = 200;

impl NetworkReport {
    /// The links that delivered later than they should at p99: beyond a tenth of their
    /// latency or [`LATE_FLOOR_US`], whichever is larger. The latency and its tail on
    /// those links are the emulator's, not etcd's.
    #[must_use]
    pub fn late_links(&self) -> Vec<&LinkReport> {
        self.links
            .iter()
            .filter(|l| l.late_p99_us.is_some_and(|p99| p99 > l.late_bound_us()))
            .collect()
    }
}

impl LinkReport {
    /// The most this link may deliver late at p99 and still be on time
    /// ([`NetworkReport::late_links`]), microseconds.
    #[must_use]
    pub fn late_bound_us(&self) -> u64 {
        (self.latency_us / 10).max(LATE_FLOOR_US)
    }
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
