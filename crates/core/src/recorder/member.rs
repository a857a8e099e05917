//! Successful requests per member that answered them.

use hdrhistogram::Histogram;

/// Successful requests one member served (from the member id in response headers).
#[derive(Debug, Clone)]
pub struct MemberRecord {
    /// Member id, as in response headers.
    pub id: u64,
    /// Successful requests it answered.
    pub ok: u64,
    /// Their latency, us.
    pub latency: Histogram<u64>,
}

/// The most members a recorder attributes requests to (etcd clusters have a handful): past
/// it, requests are still counted, just not per member.
pub const MAX_MEMBERS: usize = 64;
