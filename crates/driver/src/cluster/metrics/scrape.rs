//! Scraping one member's Prometheus `/metrics`: fetching it over HTTP/1.0, reading the
//! figures a report uses ([`Snapshot`]), and reducing a run's scrapes to the member's
//! totals ([`Scrapes`]).

use etcdlat_core::metrics::{Buckets, bucket_delta, counter_increase, histogram_quantile, metric};
use etcdlat_core::{MemberMetrics, ResourceSeries};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::exposition::{self, Wanted};
use crate::transport::Dialer;

/// Longest one scrape may take, from connecting to the last byte.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Largest `/metrics` body read; etcd's is a few hundred kilobytes.
const MAX_BODY: u64 = 16 << 20;

/// Fetches and reads one member's metrics.
pub(super) async fn scrape(dialer: &Dialer, url: &str) -> Result<Snapshot, String> {
    let text = match tokio::time::timeout(FETCH_TIMEOUT, fetch(dialer, url)).await {
        Ok(fetched) => fetched?,
        Err(_) => return Err(format!("no answer within {FETCH_TIMEOUT:?}")),
    };
    Snapshot::parse(&text)
}

/// The Go version a member's etcd was built with: its `/metrics`' `go_info{version}`;
/// `None` when it has none.
pub(super) async fn go_version(dialer: &Dialer, url: &str) -> Result<Option<String>, String> {
    let text = match tokio::time::timeout(FETCH_TIMEOUT, fetch(dialer, url)).await {
        Ok(fetched) => fetched?,
        Err(_) => return Err(format!("no answer within {FETCH_TIMEOUT:?}")),
    };
    Ok(exposition::label_value(&text, "go_info", "version").map(str::to_owned))
}

/// `GET`s a URL with HTTP/1.0 (so the body is never chunked) and returns the body of a 200
/// answer.
async fn fetch(dialer: &Dialer, url: &str) -> Result<String, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(format!("{url}: only http:// and https:// metrics URLs are scraped"));
    }
    let host = uri.authority().ok_or_else(|| format!("{url}: no host"))?.as_str();
    let path = uri.path_and_query().map_or("/metrics", http::uri::PathAndQuery::as_str);
    let io = |e: std::io::Error| format!("{url}: {e}");
    let mut stream = dialer.http1_stream(&uri).await.map_err(|e| format!("{url}: {e}"))?;
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.map_err(io)?;
    let mut answer = Vec::new();
    stream.take(MAX_BODY).read_to_end(&mut answer).await.map_err(io)?;
    let answer = String::from_utf8(answer).map_err(|_| format!("{url}: not UTF-8 text"))?;
    let (head, body) =
        answer.split_once("\r\n\r\n").ok_or_else(|| format!("{url}: not an HTTP answer"))?;
    let status = head.lines().next().unwrap_or_default();
    match status.split_whitespace().nth(1) {
        Some("200") => Ok(body.to_owned()),
        _ => Err(format!("{url}: {status}")),
    }
}

/// The figures of one scrape that a report uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Snapshot {
    pub rss: Option<f64>,
    pub cpu: Option<f64>,
    pub db_size: Option<f64>,
    quota: Option<f64>,
    slow_applies: Option<f64>,
    committed: Option<f64>,
    failed: Option<f64>,
    pending: Option<f64>,
    leader_changes: Option<f64>,
    pub peer_sent: Option<f64>,
    pub peer_received: Option<f64>,
    pub grpc_sent: Option<f64>,
    pub grpc_received: Option<f64>,
    pub is_leader: Option<f64>,
    wal_fsync: Option<Buckets>,
    backend_commit: Option<Buckets>,
    apply: Option<Buckets>,
    peer_rtt: Option<Buckets>,
}

impl Snapshot {
    /// A scrape of `cpu` seconds and `grpc_sent` bytes, for tests of what is made of it.
    #[cfg(test)]
    pub(super) fn used(cpu: f64, grpc_sent: f64) -> Self {
        Self { cpu: Some(cpu), grpc_sent: Some(grpc_sent), ..Self::default() }
    }

    /// Reads a Prometheus text exposition.
    fn parse(text: &str) -> Result<Self, String> {
        const WANTED: Wanted<15, 4> = Wanted {
            scalars: [
                metric::RSS,
                metric::CPU,
                metric::DB_SIZE,
                metric::DB_SIZE_BEFORE_3_5,
                metric::QUOTA,
                metric::SLOW_APPLY,
                metric::PROPOSALS_COMMITTED,
                metric::PROPOSALS_FAILED,
                metric::PROPOSALS_PENDING,
                metric::LEADER_CHANGES,
                metric::PEER_SENT,
                metric::PEER_RECEIVED,
                metric::GRPC_SENT,
                metric::GRPC_RECEIVED,
                metric::IS_LEADER,
            ],
            histograms: [
                metric::WAL_FSYNC,
                metric::BACKEND_COMMIT,
                metric::APPLY,
                metric::PEER_RTT,
            ],
        };
        let read =
            exposition::read(text, &WANTED).map_err(|e| format!("not Prometheus text: {e}"))?;
        let [
            rss,
            cpu,
            db_size,
            db_size_before_3_5,
            quota,
            slow_applies,
            committed,
            failed,
            pending,
            leader_changes,
            peer_sent,
            peer_received,
            grpc_sent,
            grpc_received,
            is_leader,
        ] = read.scalars;
        let [wal_fsync, backend_commit, apply, peer_rtt] = read.histograms;
        let snapshot = Self {
            rss,
            cpu,
            db_size: db_size.or(db_size_before_3_5),
            quota,
            slow_applies,
            committed,
            failed,
            pending,
            leader_changes,
            peer_sent,
            peer_received,
            grpc_sent,
            grpc_received,
            is_leader,
            wal_fsync,
            backend_commit,
            apply,
            peer_rtt,
        };
        if snapshot == Self::default() {
            return Err("no etcd or process metrics in the answer".to_owned());
        }
        Ok(snapshot)
    }

    /// What the histograms of etcd's own figures counted from `before` to this scrape, as
    /// 99th percentiles in microseconds: WAL fsync, backend commit, apply, peer round
    /// trip; each `None` when it counted nothing.
    pub(super) fn p99s_since(&self, before: &Self) -> [Option<u64>; 4] {
        let p99 = |get: Histogram| {
            let (a, b) = (get(before).as_ref()?, get(self).as_ref()?);
            let seconds = histogram_quantile(&bucket_delta(a, b), 0.99)?;
            Some((seconds * 1e6).round().max(0.0) as u64)
        };
        [p99(|s| &s.wal_fsync), p99(|s| &s.backend_commit), p99(|s| &s.apply), p99(|s| &s.peer_rtt)]
    }

    /// A counter: proposals committed.
    pub(super) fn committed(&self) -> Option<f64> {
        self.committed
    }

    /// A counter: leader changes seen.
    pub(super) fn leader_changes(&self) -> Option<f64> {
        self.leader_changes
    }

    /// The metrics of [`metric`] this scrape did not have.
    fn missing(&self) -> Vec<&'static str> {
        let had = [
            (metric::RSS, self.rss.is_some()),
            (metric::CPU, self.cpu.is_some()),
            (metric::DB_SIZE, self.db_size.is_some()),
            (metric::QUOTA, self.quota.is_some()),
            (metric::SLOW_APPLY, self.slow_applies.is_some()),
            (metric::PROPOSALS_COMMITTED, self.committed.is_some()),
            (metric::PROPOSALS_FAILED, self.failed.is_some()),
            (metric::PROPOSALS_PENDING, self.pending.is_some()),
            (metric::LEADER_CHANGES, self.leader_changes.is_some()),
            (metric::PEER_SENT, self.peer_sent.is_some()),
            (metric::PEER_RECEIVED, self.peer_received.is_some()),
            (metric::GRPC_SENT, self.grpc_sent.is_some()),
            (metric::GRPC_RECEIVED, self.grpc_received.is_some()),
            (metric::WAL_FSYNC, self.wal_fsync.is_some()),
            (metric::BACKEND_COMMIT, self.backend_commit.is_some()),
            (metric::IS_LEADER, self.is_leader.is_some()),
            (metric::APPLY, self.apply.is_some()),
            // Not PEER_RTT: etcd exports it only once it has timed a round trip to a peer,
            // five seconds after it started and then every thirty: absent from a short
            // run's scrapes on an etcd that has it.
        ];
        had.into_iter().filter(|(_, had)| !had).map(|(name, _)| name).collect()
    }
}

/// One member's scrapes so far: running figures, and what its counters and histograms
/// counted between consecutive successful scrapes of the measurement, summed.
pub(super) struct Scrapes {
    name: String,
    url: String,
    samples: u32,
    failed: u32,
    last_error: Option<String>,
    rss_sum: f64,
    rss_count: u32,
    rss_max: Option<f64>,
    pending_max: Option<f64>,
    /// The metrics no successful scrape had so far; `None` before the first.
    not_exported: Option<Vec<&'static str>>,
    /// The latest successful scrape.
    previous: Option<Snapshot>,
    /// The last successful scrape's database size.
    db_size: Option<f64>,
    /// The last successful scrape's quota.
    quota: Option<f64>,
    counted: Counted,
}

/// What a member's counters and histograms counted over the measurement: each the sum of
/// what it counted between consecutive successful scrapes ([`counter_increase`], which
/// takes a counter that went down for a restart, and counts from it), `None` until a pair
/// of scrapes had it.
#[derive(Default)]
struct Counted {
    cpu: Option<f64>,
    committed: Option<f64>,
    failed: Option<f64>,
    leader_changes: Option<f64>,
    slow_applies: Option<f64>,
    peer_sent: Option<f64>,
    peer_received: Option<f64>,
    grpc_sent: Option<f64>,
    grpc_received: Option<f64>,
    wal_fsync: Option<Buckets>,
    backend_commit: Option<Buckets>,
}

/// A counter of a scrape.
type Counter = fn(&Snapshot) -> Option<f64>;

/// A histogram of a scrape.
type Histogram = fn(&Snapshot) -> &Option<Buckets>;

impl Counted {
    /// Adds what was counted from scrape `a` to scrape `b`.
    fn add(&mut self, a: &Snapshot, b: &Snapshot) {
        let counters: [(&mut Option<f64>, Counter); 9] = [
            (&mut self.cpu, |s| s.cpu),
            (&mut self.committed, |s| s.committed),
            (&mut self.failed, |s| s.failed),
            (&mut self.leader_changes, |s| s.leader_changes),
            (&mut self.slow_applies, |s| s.slow_applies),
            (&mut self.peer_sent, |s| s.peer_sent),
            (&mut self.peer_received, |s| s.peer_received),
            (&mut self.grpc_sent, |s| s.grpc_sent),
            (&mut self.grpc_received, |s| s.grpc_received),
        ];
        for (sum, get) in counters {
            if let (Some(a), Some(b)) = (get(a), get(b)) {
                *sum = Some(sum.unwrap_or(0.0) + counter_increase(a, b));
            }
        }
        let histograms: [(&mut Option<Buckets>, Histogram); 2] = [
            (&mut self.wal_fsync, |s| &s.wal_fsync),
            (&mut self.backend_commit, |s| &s.backend_commit),
        ];
        for (sum, get) in histograms {
            if let (Some(a), Some(b)) = (get(a), get(b)) {
                let delta = bucket_delta(a, b);
                *sum = Some(match sum.take() {
                    Some(sum) => bucket_sum(&sum, &delta),
                    None => delta,
                });
            }
        }
    }
}

/// Two histograms' buckets added, bound by bound; when their layouts differ (another etcd
/// after a restart), the bounds of `a` that `b` also has, each with its count in both.
fn bucket_sum(a: &[(f64, f64)], b: &[(f64, f64)]) -> Buckets {
    a.iter().filter_map(|&(le, n)| b.iter().find(|x| x.0 == le).map(|x| (le, n + x.1))).collect()
}

impl Scrapes {
    pub(super) fn new(name: String, url: String) -> Self {
        Self {
            name,
            url,
            samples: 0,
            failed: 0,
            last_error: None,
            rss_sum: 0.0,
            rss_count: 0,
            rss_max: None,
            pending_max: None,
            not_exported: None,
            previous: None,
            db_size: None,
            quota: None,
            counted: Counted::default(),
        }
    }

    /// Adds one scrape, or why it failed; `measured` when the time since the sample before
    /// is the measurement's (not setup, warm-up, or after the load, when faults are
    /// undone): only then do its counts and levels go into the member's figures.
    pub(super) fn add(&mut self, scraped: Result<Snapshot, String>, measured: bool) {
        let snapshot = match scraped {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(member = %self.name, "scraping {} failed: {e}", self.url);
                self.failed += 1;
                self.last_error = Some(e);
                return;
            }
        };
        self.samples += 1;
        let missing = snapshot.missing();
        match &mut self.not_exported {
            Some(names) => names.retain(|n| missing.contains(n)),
            None => self.not_exported = Some(missing),
        }
        if snapshot.db_size.is_some() {
            self.db_size = snapshot.db_size;
        }
        if snapshot.quota.is_some() {
            self.quota = snapshot.quota;
        }
        if measured {
            if let Some(rss) = snapshot.rss {
                self.rss_sum += rss;
                self.rss_count += 1;
                self.rss_max = Some(self.rss_max.map_or(rss, |m| m.max(rss)));
            }
            if let Some(p) = snapshot.pending {
                self.pending_max = Some(self.pending_max.map_or(p, |m| m.max(p)));
            }
            if let Some(previous) = &self.previous {
                self.counted.add(previous, &snapshot);
            }
        }
        self.previous = Some(snapshot);
    }

    /// The member's figures over the measurement (without its resource series).
    pub(super) fn finish(self) -> MemberMetrics {
        let count = |x: f64| x.round().max(0.0) as u64;
        let c = &self.counted;
        let micros = |buckets: &Option<Buckets>, q: f64| {
            buckets.as_ref().and_then(|b| histogram_quantile(b, q)).map(|s| count(s * 1e6))
        };
        MemberMetrics {
            samples: self.samples,
            failed_samples: self.failed,
            last_error: self.last_error,
            rss_avg_bytes: (self.rss_count > 0)
                .then(|| count(self.rss_sum / f64::from(self.rss_count))),
            rss_max_bytes: self.rss_max.map(count),
            cpu_s: c.cpu.map(|s| (s * 1000.0).round() / 1000.0),
            db_size_bytes: self.db_size.map(count),
            quota_backend_bytes: self.quota.map(count),
            wal_fsync_p50_us: micros(&c.wal_fsync, 0.5),
            wal_fsync_p99_us: micros(&c.wal_fsync, 0.99),
            backend_commit_p50_us: micros(&c.backend_commit, 0.5),
            backend_commit_p99_us: micros(&c.backend_commit, 0.99),
            proposals_committed: c.committed.map(count),
            proposals_failed: c.failed.map(count),
            proposals_pending_max: self.pending_max.map(count),
            leader_changes: c.leader_changes.map(count),
            slow_applies: c.slow_applies.map(count),
            peer_sent_bytes: c.peer_sent.map(count),
            peer_received_bytes: c.peer_received.map(count),
            grpc_sent_bytes: c.grpc_sent.map(count),
            grpc_received_bytes: c.grpc_received.map(count),
            not_exported: self
                .not_exported
                .unwrap_or_default()
                .into_iter()
                .map(String::from)
                .collect(),
            name: self.name,
            url: self.url,
            resources: ResourceSeries::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two scrapes of a member, as etcd writes them: 100 fsyncs before the run, then 100
    /// more during it, of which 50 took under 1 ms, 40 under 2 ms, 9 under 4 ms and one
    /// over 8 ms.
    const BEFORE: &str = "\
# HELP etcd_disk_wal_fsync_duration_seconds The latency distributions of fsync called by WAL.
# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 100
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.002\"} 100
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.004\"} 100
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.008\"} 100
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} 100
etcd_disk_wal_fsync_duration_seconds_sum 0.05
etcd_disk_wal_fsync_duration_seconds_count 100
# HELP etcd_network_peer_sent_bytes_total The total number of bytes sent to peers.
# TYPE etcd_network_peer_sent_bytes_total counter
etcd_network_peer_sent_bytes_total{To=\"8211f1d0f64f3269\"} 1000
etcd_network_peer_sent_bytes_total{To=\"91bc3c398fb3c146\"} 2000
# HELP etcd_server_proposals_committed_total The total number of consensus proposals committed.
# TYPE etcd_server_proposals_committed_total gauge
etcd_server_proposals_committed_total 10
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 2.5e+07
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5
";

    fn after() -> String {
        BEFORE
            .replace("\"0.001\"} 100", "\"0.001\"} 150")
            .replace("\"0.002\"} 100", "\"0.002\"} 190")
            .replace("\"0.004\"} 100", "\"0.004\"} 199")
            .replace("\"0.008\"} 100", "\"0.008\"} 199")
            .replace("\"+Inf\"} 100", "\"+Inf\"} 200")
            .replace("} 1000", "} 1500")
            .replace("committed_total 10", "committed_total 510")
            .replace("2.5e+07", "3.5e+07")
            .replace("total 1.5", "total 2.25")
    }

    #[test]
    fn histograms_are_read_summed_over_labels() {
        let before = Snapshot::parse(BEFORE).unwrap();
        let after = Snapshot::parse(&after()).unwrap();
        let fsync =
            bucket_delta(before.wal_fsync.as_ref().unwrap(), after.wal_fsync.as_ref().unwrap());
        assert_eq!(
            fsync,
            [(0.001, 50.0), (0.002, 90.0), (0.004, 99.0), (0.008, 99.0), (f64::INFINITY, 100.0)]
        );
        assert_eq!(before.peer_sent, Some(3000.0), "both peers");
    }

    #[test]
    fn a_series_reports_deltas_sums_and_peaks() {
        let mut series = Scrapes::new("m0".into(), "http://127.0.0.1:1/metrics".into());
        series.add(Snapshot::parse(BEFORE), true);
        series.add(Err("connection refused".into()), true);
        series.add(Snapshot::parse(&after()), true);
        let m = series.finish();
        assert_eq!((m.samples, m.failed_samples), (2, 1));
        assert_eq!(m.last_error.as_deref(), Some("connection refused"));
        assert_eq!(m.rss_avg_bytes, Some(30_000_000));
        assert_eq!(m.rss_max_bytes, Some(35_000_000));
        assert_eq!(m.cpu_s, Some(0.75));
        assert_eq!(m.proposals_committed, Some(500));
        // Summed over both peers.
        assert_eq!(m.peer_sent_bytes, Some(500));
        assert_eq!(m.wal_fsync_p50_us, Some(1000));
        assert_eq!(m.wal_fsync_p99_us, Some(4000));
        // Not exported by this member, and named as such.
        assert_eq!(
            (m.db_size_bytes, m.backend_commit_p99_us, m.grpc_sent_bytes),
            (None, None, None)
        );
        for name in [metric::DB_SIZE, metric::BACKEND_COMMIT, metric::GRPC_SENT] {
            assert!(m.not_exported.iter().any(|n| n == name), "{name}: {:?}", m.not_exported);
        }
        for name in [metric::RSS, metric::WAL_FSYNC, metric::PEER_SENT] {
            assert!(!m.not_exported.iter().any(|n| n == name), "{name}: {:?}", m.not_exported);
        }
    }

    #[test]
    fn a_metric_one_scrape_had_is_exported() {
        let mut series = Scrapes::new("m0".into(), String::new());
        series.add(Snapshot::parse(BEFORE), true);
        let db = "etcd_mvcc_db_total_size_in_bytes 24576\n";
        series.add(Snapshot::parse(&format!("{}{db}", after())), true);
        series.add(Snapshot::parse(BEFORE), true);
        let m = series.finish();
        assert!(!m.not_exported.iter().any(|n| n == metric::DB_SIZE), "{:?}", m.not_exported);
        assert!(m.not_exported.iter().any(|n| n == metric::GRPC_SENT), "{:?}", m.not_exported);
    }

    #[test]
    fn one_scrape_gives_levels_but_no_deltas() {
        let mut series = Scrapes::new("m0".into(), String::new());
        series.add(Snapshot::parse(BEFORE), true);
        let m = series.finish();
        assert_eq!(m.rss_max_bytes, Some(25_000_000));
        assert_eq!((m.cpu_s, m.proposals_committed, m.wal_fsync_p99_us), (None, None, None));
    }

    /// A member restarted by a fault step, whose counters started again from 0: `fsyncs`
    /// so far, all under 1 ms, `cpu` seconds, `committed` proposals, 30 bytes to peers.
    fn restarted(fsyncs: u32, cpu: f64, committed: u32) -> String {
        let mut text = BEFORE.to_owned();
        for le in ["0.001", "0.002", "0.004", "0.008", "+Inf"] {
            text = text.replace(&format!("\"{le}\"}} 100"), &format!("\"{le}\"}} {fsyncs}"));
        }
        text.replace("} 1000", "} 10")
            .replace("} 2000", "} 20")
            .replace("committed_total 10", &format!("committed_total {committed}"))
            .replace("total 1.5", &format!("total {cpu}"))
    }

    #[test]
    fn counters_add_up_across_a_restart() {
        let mut series = Scrapes::new("m0".into(), String::new());
        series.add(Snapshot::parse(BEFORE), true);
        series.add(Snapshot::parse(&after()), true);
        series.add(Snapshot::parse(&restarted(5, 0.5, 40)), true);
        series.add(Snapshot::parse(&restarted(7, 4.5, 90)), true);
        let m = series.finish();
        // 0.75 s before the restart, 0.5 s up to the first scrape after it, 4 s since.
        assert_eq!(m.cpu_s, Some(5.25));
        assert_eq!(m.proposals_committed, Some(500 + 40 + 50));
        assert_eq!(m.peer_sent_bytes, Some(500 + 30), "both peers, before and after");
        // The 100 fsyncs before the restart (50, 40, 9 under 1, 2, 4 ms; one over 8 ms) and
        // the 7 after, under 1 ms: [57, 97, 106, 106, 107]. Rank 105.93 is 8.93 of the 9
        // in (2 ms, 4 ms]; rank 53.5 is 53.5 of the 57 under 1 ms.
        assert_eq!(m.wal_fsync_p99_us, Some(3984));
        assert_eq!(m.wal_fsync_p50_us, Some(939));
        let mut alone = Scrapes::new("m0".into(), String::new());
        alone.add(Snapshot::parse(&restarted(5, 0.5, 40)), true);
        alone.add(Snapshot::parse(&restarted(7, 4.5, 90)), true);
        assert_eq!(alone.finish().wal_fsync_p99_us, Some(990), "after the restart alone");
    }

    #[test]
    fn only_the_measurement_is_counted() {
        let mut series = Scrapes::new("m0".into(), String::new());
        // Before the load, then warm-up up to the measurement's start.
        series.add(Snapshot::parse(&restarted(0, 1.0, 0)), false);
        series.add(Snapshot::parse(BEFORE), false);
        series.add(Snapshot::parse(&after()), true);
        // After the load: a fault undone, a member restarted.
        series.add(Snapshot::parse(&restarted(5, 0.5, 40)), false);
        let m = series.finish();
        assert_eq!(m.cpu_s, Some(0.75));
        assert_eq!(m.proposals_committed, Some(500));
        assert_eq!((m.rss_avg_bytes, m.rss_max_bytes), (Some(35_000_000), Some(35_000_000)));
        assert_eq!(m.wal_fsync_p99_us, Some(4000));
        assert_eq!(m.samples, 4, "every scrape is still counted as taken");
    }

    #[test]
    fn text_without_metrics_is_an_error() {
        assert!(Snapshot::parse("<html>404 page not found</html>").is_err());
    }
}
