//! Resource figures beside the latencies: what each etcd member's Prometheus `/metrics` said
//! over the run ([`MemberMetrics`]), and what the etcdlat process itself used
//! ([`ClientUsage`]); each with its resource series over time ([`series`]).
//!
//! Plain data, filled by the driver. A figure a member does not export (an older or newer
//! etcd, a single member without peers) or that could not be scraped is `None`, never 0;
//! the metrics a member did not export are named in [`MemberMetrics::not_exported`], so that
//! reports say "unavailable on etcd X" for them ([`MemberMetrics::absent`]).

pub mod series;

use serde::{Deserialize, Serialize};

pub use series::{DiskDevice, MAX_SAMPLES, NotAvailable, ResourceSample, ResourceSeries};
#[doc(hidden)] // internal: the driver's; not part of the API
pub use series::{SeriesBuilder, source};

/// One etcd member's server metrics over a run, from its Prometheus `/metrics`, scraped just
/// before the load starts, when measurement starts, every second, when the load ends and
/// once more after it.
///
/// Figures named "during the run" are over the measurement alone (not setup, warm-up, or
/// the fault steps undone after the load): what a counter or histogram counted between
/// each pair of successful scrapes of it, summed, so that a member restarted by a fault
/// step has what it counted before the restart and since (a counter that went down is a
/// restart, and counts from it). They are `None` when no pair of scrapes had them. Levels
/// (memory, pending proposals) are those of the measurement's scrapes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MemberMetrics {
    /// Member name (its id in hex when unnamed).
    pub name: String,
    /// The URL scraped, `http://host:port/metrics`.
    pub url: String,
    /// Scrapes that succeeded.
    pub samples: u32,
    /// Scrapes that failed (unreachable, timed out, not an HTTP 200 with metrics).
    pub failed_samples: u32,
    /// Why the last failed scrape failed, if any did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Resident memory averaged over the scrapes, bytes (`process_resident_memory_bytes`).
    pub rss_avg_bytes: Option<u64>,
    /// Largest resident memory seen in a scrape, bytes (`process_resident_memory_bytes`).
    pub rss_max_bytes: Option<u64>,
    /// CPU time the member used during the run, user plus system, seconds
    /// (`process_cpu_seconds_total`).
    pub cpu_s: Option<f64>,
    /// Size of the backend database file at the end, bytes (`etcd_mvcc_db_total_size_in_bytes`,
    /// or `etcd_debugging_mvcc_db_total_size_in_bytes` on etcd that lacks it).
    pub db_size_bytes: Option<u64>,
    /// The backend quota, bytes (`etcd_server_quota_backend_bytes`): where etcd raises
    /// NOSPACE. Absent in reports that predate it.
    #[serde(default)]
    pub quota_backend_bytes: Option<u64>,
    /// Median WAL fsync duration during the run, microseconds
    /// (`etcd_disk_wal_fsync_duration_seconds`; `None` when no fsync happened).
    pub wal_fsync_p50_us: Option<u64>,
    /// 99th percentile WAL fsync duration during the run, microseconds.
    pub wal_fsync_p99_us: Option<u64>,
    /// Median backend commit duration during the run, microseconds
    /// (`etcd_disk_backend_commit_duration_seconds`; `None` when no commit happened).
    pub backend_commit_p50_us: Option<u64>,
    /// 99th percentile backend commit duration during the run, microseconds.
    pub backend_commit_p99_us: Option<u64>,
    /// Raft proposals committed during the run, count
    /// (`etcd_server_proposals_committed_total`).
    pub proposals_committed: Option<u64>,
    /// Raft proposals that failed during the run, count (`etcd_server_proposals_failed_total`).
    pub proposals_failed: Option<u64>,
    /// Most proposals pending in a scrape, count (`etcd_server_proposals_pending`).
    pub proposals_pending_max: Option<u64>,
    /// Leader changes this member saw during the run, count
    /// (`etcd_server_leader_changes_seen_total`).
    pub leader_changes: Option<u64>,
    /// Requests that took too long to apply during the run, count
    /// (`etcd_server_slow_apply_total`, etcd's "apply request took too long"). Absent in
    /// reports that predate it.
    #[serde(default)]
    pub slow_applies: Option<u64>,
    /// Bytes sent to the other members during the run, all peers
    /// (`etcd_network_peer_sent_bytes_total`).
    pub peer_sent_bytes: Option<u64>,
    /// Bytes received from the other members during the run, all peers
    /// (`etcd_network_peer_received_bytes_total`).
    pub peer_received_bytes: Option<u64>,
    /// Bytes sent to gRPC clients during the run
    /// (`etcd_network_client_grpc_sent_bytes_total`).
    pub grpc_sent_bytes: Option<u64>,
    /// Bytes received from gRPC clients during the run
    /// (`etcd_network_client_grpc_received_bytes_total`).
    pub grpc_received_bytes: Option<u64>,
    /// The metrics (of [`metric`]) that none of the member's successful scrapes had: the
    /// figures read from them are `None` because this etcd does not export them, not because
    /// they could not be measured. Empty when nothing was scraped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_exported: Vec<String>,
    /// The member's resources over time, sampled with each scrape: CPU and memory (from
    /// `/proc` for a member etcdlat started, else from `/metrics`), `/metrics`' database
    /// size and traffic, and for a member etcdlat started its context switches, I/O, data
    /// dir and disk. Absent in reports that predate it.
    #[serde(default, skip_serializing_if = "ResourceSeries::is_empty")]
    pub resources: ResourceSeries,
}

/// The Prometheus metrics [`MemberMetrics`]' figures are read from, as
/// [`MemberMetrics::not_exported`] names them.
pub mod metric {
    /// Resident memory (`rss_avg_bytes`, `rss_max_bytes`).
    pub const RSS: &str = "process_resident_memory_bytes";
    /// CPU time (`cpu_s`).
    pub const CPU: &str = "process_cpu_seconds_total";
    /// Database size (`db_size_bytes`); `DB_SIZE_BEFORE_3_5` on etcd that lacks it.
    pub const DB_SIZE: &str = "etcd_mvcc_db_total_size_in_bytes";
    /// The name etcd 3.4 also exports the database size under, and older etcd only.
    pub const DB_SIZE_BEFORE_3_5: &str = "etcd_debugging_mvcc_db_total_size_in_bytes";
    /// WAL fsync durations (`wal_fsync_p50_us`, `wal_fsync_p99_us`).
    pub const WAL_FSYNC: &str = "etcd_disk_wal_fsync_duration_seconds";
    /// Backend commit durations (`backend_commit_p50_us`, `backend_commit_p99_us`).
    pub const BACKEND_COMMIT: &str = "etcd_disk_backend_commit_duration_seconds";
    /// Proposals committed (`proposals_committed`).
    pub const PROPOSALS_COMMITTED: &str = "etcd_server_proposals_committed_total";
    /// Proposals failed (`proposals_failed`).
    pub const PROPOSALS_FAILED: &str = "etcd_server_proposals_failed_total";
    /// Proposals pending (`proposals_pending_max`).
    pub const PROPOSALS_PENDING: &str = "etcd_server_proposals_pending";
    /// Leader changes seen (`leader_changes`).
    pub const LEADER_CHANGES: &str = "etcd_server_leader_changes_seen_total";
    /// The backend quota (`quota_backend_bytes`).
    pub const QUOTA: &str = "etcd_server_quota_backend_bytes";
    /// Requests that took too long to apply (`slow_applies`).
    pub const SLOW_APPLY: &str = "etcd_server_slow_apply_total";
    /// Bytes sent to peers (`peer_sent_bytes`); exported once a member has peers.
    pub const PEER_SENT: &str = "etcd_network_peer_sent_bytes_total";
    /// Bytes received from peers (`peer_received_bytes`); exported once a member has peers.
    pub const PEER_RECEIVED: &str = "etcd_network_peer_received_bytes_total";
    /// Whether the member is the leader (each sample's `leader`).
    pub const IS_LEADER: &str = "etcd_server_is_leader";
    /// Apply durations (each sample's `apply_p99_us`); etcd 3.5 and later.
    pub const APPLY: &str = "etcd_server_apply_duration_seconds";
    /// Round trips to peers (each sample's `peer_rtt_p99_us`); exported once a member has
    /// peers.
    pub const PEER_RTT: &str = "etcd_network_peer_round_trip_time_seconds";
    /// Bytes sent to gRPC clients (`grpc_sent_bytes`).
    pub const GRPC_SENT: &str = "etcd_network_client_grpc_sent_bytes_total";
    /// Bytes received from gRPC clients (`grpc_received_bytes`).
    pub const GRPC_RECEIVED: &str = "etcd_network_client_grpc_received_bytes_total";
}

/// The members' disk figures, once per block device: the series of the first member whose
/// data dir is on each device, with the device. Disk figures are machine-wide, so members
/// sharing a device (a local cluster's do) would count the same requests again.
pub fn disks(members: &[MemberMetrics]) -> impl Iterator<Item = (&DiskDevice, &ResourceSeries)> {
    let mut seen: Vec<&str> = Vec::new();
    members.iter().filter_map(move |m| {
        let disk = m.resources.disk.as_ref()?;
        if seen.contains(&disk.device.as_str()) {
            return None;
        }
        seen.push(&disk.device);
        Some((disk, &m.resources))
    })
}

impl MemberMetrics {
    /// What a report shows for a figure read from `metric` (one of [`metric`]) that is
    /// `None`: `unavailable on etcd VERSION` when the member, of that `etcd_version`, did
    /// not export the metric, else `missing` (not scraped, nothing observed, a single
    /// member's traffic to peers it does not have).
    #[must_use]
    pub fn absent(&self, metric: &str, etcd_version: &str, members: u32, missing: &str) -> String {
        let peers = metric == metric::PEER_SENT || metric == metric::PEER_RECEIVED;
        if self.not_exported.iter().any(|m| m == metric) && !(peers && members < 2) {
            let version = if etcd_version.is_empty() { "this version" } else { etcd_version };
            format!("unavailable on etcd {version}")
        } else {
            missing.to_owned()
        }
    }
}

/// What the etcdlat process itself used during a run (warm-up and the scraping of server
/// metrics included): the client's own cost, to tell a saturated client from a saturated
/// server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ClientUsage {
    /// CPU time in user mode during the run, all threads, seconds.
    pub user_cpu_s: f64,
    /// CPU time in the kernel on the process's behalf during the run, all threads, seconds.
    pub system_cpu_s: f64,
    /// Peak resident memory of the process since it started (not only this run), bytes.
    pub max_rss_bytes: u64,
    /// CPU time of the worker threads alone (the request path: clients, connections,
    /// recording) during the measured run, seconds; `None` when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_cpu_s: Option<f64>,
    /// How busy the client was; `None` when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy: Option<ClientBusy>,
    /// Bytes the load's connections wrote to their sockets over the run (HTTP/2 frames, TLS
    /// records when encrypted); `None` when not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    /// Bytes the load's connections read from their sockets over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    /// The highest CPU of one sampling period, all threads, percent of one core; `None`
    /// when not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_max_percent: Option<f64>,
    /// The process's voluntary context switches over the run, all threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voluntary_ctxt_switches: Option<u64>,
    /// The process's involuntary context switches over the run, all threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonvoluntary_ctxt_switches: Option<u64>,
    /// The process's resources over time: CPU, resident memory, context switches and the
    /// load connections' bytes. Empty in a merged report (each shard had its own) and in
    /// reports that predate it.
    #[serde(default, skip_serializing_if = "ResourceSeries::is_empty")]
    pub resources: ResourceSeries,
}

/// How busy the client was, as shares of wall time (1.0: busy all the time). A worker thread
/// near 1.0 never waited for the server: the client set the pace, and the latencies it
/// measured include its own queueing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientBusy {
    /// The whole process over the run: its CPU time over wall time, over the cores it may
    /// use.
    pub process: f64,
    /// The busiest worker thread over the measured run: the share of the time it was not
    /// parked waiting for the network or a timer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_max: Option<f64>,
    /// The busiest worker thread in its busiest second (the whole run when shorter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_peak: Option<f64>,
}

impl ClientBusy {
    /// Figure by figure, the busier of `self` and `other`.
    #[must_use]
    pub fn busiest(&self, other: &Self) -> Self {
        let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        Self {
            process: self.process.max(other.process),
            worker_max: max(self.worker_max, other.worker_max),
            worker_peak: max(self.worker_peak, other.worker_peak),
        }
    }
}

/// Above this share of its time busy, a worker thread is taken to have set the pace.
pub const SATURATED: f64 = 0.9;

impl ClientUsage {
    /// Whether a worker thread was busy more than [`SATURATED`] of its busiest second.
    #[must_use]
    pub fn saturated(&self) -> bool {
        self.busy.as_ref().and_then(|b| b.worker_peak).is_some_and(|p| p > SATURATED)
    }
}

/// A Prometheus histogram's cumulative buckets: (upper bound `le`, count), ascending by
/// bound, the last one `+Inf`.
pub type Buckets = Vec<(f64, f64)>;

/// The observations between two scrapes of a histogram: `last` minus `first`, bucket by
/// bucket. When the layouts differ or a count went down (the member restarted), `last`
/// alone.
#[must_use]
pub fn bucket_delta(first: &[(f64, f64)], last: &[(f64, f64)]) -> Buckets {
    let comparable =
        first.len() == last.len() && first.iter().zip(last).all(|(a, b)| a.0 == b.0 && b.1 >= a.1);
    if comparable {
        last.iter().zip(first).map(|(b, a)| (b.0, b.1 - a.1)).collect()
    } else {
        last.to_vec()
    }
}

/// The `q` quantile of cumulative buckets, as Prometheus's `histogram_quantile` computes it:
/// linear interpolation within the bucket the rank falls in (from 0 for the first), and the
/// highest finite bound when it falls in `+Inf`. `None` when the buckets count nothing.
#[must_use]
pub fn histogram_quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 || (buckets.len() < 2 && buckets[0].0.is_infinite()) {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * total;
    let i = buckets.iter().position(|b| b.1 >= rank).unwrap_or(buckets.len() - 1);
    let (upper, count) = buckets[i];
    if upper.is_infinite() {
        return Some(buckets[i - 1].0);
    }
    let (lower, below) = if i == 0 { (0.0_f64.min(upper), 0.0) } else { buckets[i - 1] };
    let within = count - below;
    if within <= 0.0 {
        return Some(upper);
    }
    Some(lower + (upper - lower) * (rank - below) / within)
}

/// What a counter counted between two scrapes, `first` and `last`. A counter that went
/// down was reset by a restart: what it counted since.
#[must_use]
#[doc(hidden)] // internal: the driver's; not part of the API
pub fn counter_increase(first: f64, last: f64) -> f64 {
    if last >= first { last - first } else { last }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_not_exported_is_unavailable_on_the_version() {
        let m = MemberMetrics {
            not_exported: vec![metric::DB_SIZE.to_owned(), metric::PEER_SENT.to_owned()],
            ..MemberMetrics::default()
        };
        assert_eq!(m.absent(metric::DB_SIZE, "3.7.3", 3, "-"), "unavailable on etcd 3.7.3");
        assert_eq!(m.absent(metric::DB_SIZE, "", 3, "-"), "unavailable on etcd this version");
        // Exported, and still None: nothing observed.
        assert_eq!(m.absent(metric::WAL_FSYNC, "3.7.3", 3, "-"), "-");
        // Peer traffic is exported once there are peers.
        assert_eq!(m.absent(metric::PEER_SENT, "3.7.3", 3, "-"), "unavailable on etcd 3.7.3");
        assert_eq!(m.absent(metric::PEER_SENT, "3.7.3", 1, "-"), "-");
    }

    /// 100 fsyncs before the run, 100 more during it: 50 under 1 ms, 40 under 2 ms, 9 under
    /// 4 ms and one over 8 ms.
    const BEFORE: [(f64, f64); 5] =
        [(0.001, 100.0), (0.002, 100.0), (0.004, 100.0), (0.008, 100.0), (f64::INFINITY, 100.0)];
    const AFTER: [(f64, f64); 5] =
        [(0.001, 150.0), (0.002, 190.0), (0.004, 199.0), (0.008, 199.0), (f64::INFINITY, 200.0)];

    #[test]
    fn quantiles_interpolate_within_buckets() {
        let fsync = bucket_delta(&BEFORE, &AFTER);
        assert_eq!(
            fsync,
            [(0.001, 50.0), (0.002, 90.0), (0.004, 99.0), (0.008, 99.0), (f64::INFINITY, 100.0)]
        );
        let q = |q: f64| histogram_quantile(&fsync, q).map(|s| (s * 1e6).round());
        // Rank 50 is the last of the first bucket; rank 70 is half-way into (1 ms, 2 ms].
        assert_eq!(q(0.5), Some(1000.0));
        assert_eq!(q(0.7), Some(1500.0));
        assert_eq!(q(0.25), Some(500.0));
        // Past rank 99 lies only +Inf, which reports the highest finite bound.
        assert_eq!(q(0.99), Some(4000.0));
        assert_eq!(q(0.999), Some(8000.0));
        assert_eq!(histogram_quantile(&bucket_delta(&BEFORE, &BEFORE), 0.99), None);
        assert_eq!(histogram_quantile(&[], 0.5), None);
    }

    #[test]
    fn resets_keep_the_later_scrape() {
        assert_eq!(bucket_delta(&AFTER, &BEFORE), BEFORE);
        assert_eq!(bucket_delta(&BEFORE[..2], &AFTER), AFTER, "another layout");
        assert_eq!(counter_increase(10.0, 510.0), 500.0);
        assert_eq!(counter_increase(510.0, 7.0), 7.0);
    }
}
