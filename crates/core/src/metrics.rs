//! Resource figures beside the latencies: what each etcd member's Prometheus `/metrics` said
//! over the run ([`MemberMetrics`]), and what the etcdlat process itself used
//! ([`ClientUsage`]).
//!
//! Plain data, filled by the driver. A figure a member does not export (an older etcd, a
//! single member without peers) or that could not be scraped is `None`, never 0.

use serde::{Deserialize, Serialize};

/// One etcd member's server metrics over a run, from its Prometheus `/metrics`, scraped just
/// before the load starts (so warm-up is included), every second, and when it ends.
///
/// Figures named "during the run" are the difference between the first and the last
/// successful scrape; they are `None` when fewer than two scrapes succeeded. A counter that
/// went backwards (the member restarted) counts from its restart.
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
}
