//! dbtester's figures of a run: the rows of the table etcd's dbtester published for each
//! database it compared (etcd v3.2 beside v3.3, Zookeeper, Consul), computed from a
//! [`Report`] with dbtester's meaning, so that an etcdlat run reads as one of its columns.
//!
//! [`Report::study`] computes a [`Study`]; [`Row`] lists its figures in dbtester's order,
//! with dbtester's labels, and gives each one's value and how dbtester writes it, so that a
//! table of several runs is a loop over [`Row::ALL`]:
//!
//! ```
//! use etcdlat_core::report::Row;
//! # fn table(runs: &[etcdlat_core::Report]) {
//! let studies: Vec<_> = runs.iter().map(|r| r.study()).collect();
//! for row in Row::ALL {
//!     let cells: Vec<String> = studies.iter().map(|s| s.cell(row)).collect();
//!     println!("{}\t{}", row.label(), cells.join("\t"));
//! }
//! # }
//! ```
//!
//! What dbtester meant, read from its `analyze` package, and what etcdlat takes for it:
//! - throughput per second: dbtester's MAX/MIN-THROUGHPUT are the busiest and idlest
//!   second of the client's per-second series. etcdlat adds up its intervals into whole
//!   seconds (when the interval divides a second; else it uses the intervals as they are,
//!   [`Study::throughput_window_s`]), and leaves out the last, partial, second.
//! - latency: dbtester's client measured from send; etcdlat's is from the intended start
//!   (the same in a closed loop). The figures are of every load operation together.
//! - SERVER-TOTAL-NETWORK-RX/TX: dbtester summed over the members the growth of their
//!   machines' `/proc/net/dev`; etcdlat sums each member's own gRPC and peer bytes, from its
//!   `/metrics` (on one machine, `/proc/net/dev`'s loopback counts every process's traffic).
//! - SERVER-MAX-CPU-USAGE and SERVER-MAX-MEMORY-USAGE: each second, the average over the
//!   members of their CPU (percent of one core) or resident memory, and the largest of those
//!   averages.
//! - SERVER-AVG-*-DELTA-SUM: despite the AVG in their names, dbtester's `analyze` adds up
//!   every member's column of per-second `/proc/diskstats` deltas: the I/O of the servers'
//!   disks over the run. etcdlat adds up the same deltas per block device, counting a device
//!   that several members share (a local cluster's) once: its figures are machine-wide, every
//!   process's I/O on the device. (dbtester's own SECTORS-READS row is always 0: its
//!   `analyze` looks for a column named `SECTORS-READS-DELTA-`, which does not exist; etcdlat
//!   gives the sectors read.)
//! - SERVER-AVG-DISK-SPACE-USAGE: the members' data dir sizes after the run (every file's
//!   size), averaged.
//! - CLIENT-TOTAL-NETWORK-RX/TX: what the load's connections read from and wrote to their
//!   sockets (dbtester: the client machine's `/proc/net/dev`).
//! - CLIENT-MAX-CPU-USAGE and CLIENT-MAX-MEMORY-USAGE: the etcdlat process's busiest second
//!   and largest resident memory sampled.
//!
//! A figure the run cannot know is `None`, with why in [`Study::unknown`]: the disk figures
//! of members etcdlat did not start, CPU peaks in a report made before etcdlat sampled them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Report;
use crate::metrics::{self, MemberMetrics, ResourceSample, ResourceSeries, metric, source};
use crate::op::OpKind;
use crate::report::{Distribution, OpReport};
use crate::unit::thousands;

/// dbtester's figures of one run ([`Report::study`]). Every figure is written to the JSON,
/// `null` when unknown; [`Study::unknown`] says why for each of those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Study {
    /// TOTAL-SECONDS: measured wall time, seconds.
    pub total_s: Option<f64>,
    /// TOTAL-REQUEST-NUMBER: requests issued, ok and failed.
    pub total_requests: Option<u64>,
    /// MAX-THROUGHPUT: successful requests in the busiest whole window (a second), per
    /// second.
    pub throughput_max_per_s: Option<f64>,
    /// AVG-THROUGHPUT: successful requests per second of measured wall time.
    pub throughput_avg_per_s: Option<f64>,
    /// MIN-THROUGHPUT: successful requests in the idlest whole window, per second.
    pub throughput_min_per_s: Option<f64>,
    /// The window of MAX- and MIN-THROUGHPUT, seconds: 1, or the report's interval when it
    /// does not divide a second.
    pub throughput_window_s: Option<f64>,
    /// FASTEST-LATENCY, microseconds.
    pub latency_min_us: Option<u64>,
    /// AVG-LATENCY, microseconds.
    pub latency_mean_us: Option<f64>,
    /// SLOWEST-LATENCY, microseconds.
    pub latency_max_us: Option<u64>,
    /// Latency p10, microseconds.
    pub latency_p10_us: Option<u64>,
    /// Latency p25, microseconds.
    pub latency_p25_us: Option<u64>,
    /// Latency p50, microseconds.
    pub latency_p50_us: Option<u64>,
    /// Latency p75, microseconds.
    pub latency_p75_us: Option<u64>,
    /// Latency p90, microseconds.
    pub latency_p90_us: Option<u64>,
    /// Latency p95, microseconds.
    pub latency_p95_us: Option<u64>,
    /// Latency p99, microseconds.
    pub latency_p99_us: Option<u64>,
    /// Latency p99.9, microseconds.
    pub latency_p99_9_us: Option<u64>,
    /// SERVER-TOTAL-NETWORK-RX-DATA-SUM: bytes every member received from clients and peers
    /// over the run, summed.
    pub server_network_received_bytes: Option<u64>,
    /// SERVER-TOTAL-NETWORK-TX-DATA-SUM: bytes every member sent to clients and peers over
    /// the run, summed.
    pub server_network_sent_bytes: Option<u64>,
    /// CLIENT-TOTAL-NETWORK-RX-SUM: bytes the load's connections received.
    pub client_network_received_bytes: Option<u64>,
    /// CLIENT-TOTAL-NETWORK-TX-SUM: bytes the load's connections sent.
    pub client_network_sent_bytes: Option<u64>,
    /// SERVER-MAX-CPU-USAGE: the largest per-second average of the members' CPU, percent of
    /// one core.
    pub server_cpu_max_percent: Option<f64>,
    /// SERVER-MAX-MEMORY-USAGE: the largest per-second average of the members' resident
    /// memory, bytes.
    pub server_memory_max_bytes: Option<u64>,
    /// CLIENT-MAX-CPU-USAGE: the client's busiest second, percent of one core.
    pub client_cpu_max_percent: Option<f64>,
    /// CLIENT-MAX-MEMORY-USAGE: the client's largest resident memory sampled, bytes (its
    /// peak since it started, in reports without samples).
    pub client_memory_max_bytes: Option<u64>,
    /// CLIENT-ERROR-COUNT: failed requests.
    pub client_errors: Option<u64>,
    /// SERVER-AVG-READS-COMPLETED-DELTA-SUM: reads the members' block devices completed over
    /// the run, each device once (machine-wide).
    pub server_disk_reads_completed: Option<u64>,
    /// SERVER-AVG-SECTORS-READS-DELTA-SUM: sectors read from those devices.
    pub server_disk_sectors_read: Option<u64>,
    /// SERVER-AVG-WRITES-COMPLETED-DELTA-SUM: writes those devices completed.
    pub server_disk_writes_completed: Option<u64>,
    /// SERVER-AVG-SECTORS-WRITTEN-DELTA-SUM: sectors written to those devices.
    pub server_disk_sectors_written: Option<u64>,
    /// SERVER-AVG-DISK-SPACE-USAGE: the members' data dir sizes at the end, averaged, bytes.
    pub server_disk_space_avg_bytes: Option<u64>,
    /// Why each unknown figure is unknown, by its field name ([`Row::key`]).
    pub unknown: BTreeMap<String, String>,
}

/// How a figure is measured, and so how dbtester writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds: `28.3623 sec`.
    Seconds,
    /// A count: `1,000,000`.
    Count,
    /// Requests per second: `35,343 req/sec`.
    PerSecond,
    /// Microseconds, written as milliseconds: `0.5432 ms`.
    Micros,
    /// Bytes, in decimal units: `5.1 GB`.
    Bytes,
    /// Percent of one core: `446.83 %`.
    Percent,
}

/// A row of dbtester's table, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs, reason = "each row is documented by its label, Row::label")]
pub enum Row {
    TotalSeconds,
    TotalRequests,
    MaxThroughput,
    AvgThroughput,
    MinThroughput,
    FastestLatency,
    AvgLatency,
    SlowestLatency,
    LatencyP10,
    LatencyP25,
    LatencyP50,
    LatencyP75,
    LatencyP90,
    LatencyP95,
    LatencyP99,
    LatencyP999,
    ServerNetworkRx,
    ServerNetworkTx,
    ClientNetworkRx,
    ClientNetworkTx,
    ServerMaxCpu,
    ServerMaxMemory,
    ClientMaxCpu,
    ClientMaxMemory,
    ClientErrors,
    ServerReadsCompleted,
    ServerSectorsRead,
    ServerWritesCompleted,
    ServerSectorsWritten,
    ServerDiskSpace,
}

impl Row {
    /// Every row, in dbtester's order.
    pub const ALL: [Row; 30] = [
        Row::TotalSeconds,
        Row::TotalRequests,
        Row::MaxThroughput,
        Row::AvgThroughput,
        Row::MinThroughput,
        Row::FastestLatency,
        Row::AvgLatency,
        Row::SlowestLatency,
        Row::LatencyP10,
        Row::LatencyP25,
        Row::LatencyP50,
        Row::LatencyP75,
        Row::LatencyP90,
        Row::LatencyP95,
        Row::LatencyP99,
        Row::LatencyP999,
        Row::ServerNetworkRx,
        Row::ServerNetworkTx,
        Row::ClientNetworkRx,
        Row::ClientNetworkTx,
        Row::ServerMaxCpu,
        Row::ServerMaxMemory,
        Row::ClientMaxCpu,
        Row::ClientMaxMemory,
        Row::ClientErrors,
        Row::ServerReadsCompleted,
        Row::ServerSectorsRead,
        Row::ServerWritesCompleted,
        Row::ServerSectorsWritten,
        Row::ServerDiskSpace,
    ];

    /// dbtester's label: `TOTAL-SECONDS`, `Latency p99.9`, `SERVER-MAX-CPU-USAGE`.
    #[must_use]
    pub fn label(self) -> &'static str {
        self.describe().0
    }

    /// The figure's field name in [`Study`] and the JSON: `total_s`, `latency_p99_9_us`.
    #[must_use]
    pub fn key(self) -> &'static str {
        self.describe().1
    }

    /// How the figure is measured.
    #[must_use]
    pub fn unit(self) -> Unit {
        self.describe().2
    }

    fn describe(self) -> (&'static str, &'static str, Unit) {
        use Unit::{Bytes, Count, Micros, PerSecond, Percent, Seconds};
        match self {
            Row::TotalSeconds => ("TOTAL-SECONDS", "total_s", Seconds),
            Row::TotalRequests => ("TOTAL-REQUEST-NUMBER", "total_requests", Count),
            Row::MaxThroughput => ("MAX-THROUGHPUT", "throughput_max_per_s", PerSecond),
            Row::AvgThroughput => ("AVG-THROUGHPUT", "throughput_avg_per_s", PerSecond),
            Row::MinThroughput => ("MIN-THROUGHPUT", "throughput_min_per_s", PerSecond),
            Row::FastestLatency => ("FASTEST-LATENCY", "latency_min_us", Micros),
            Row::AvgLatency => ("AVG-LATENCY", "latency_mean_us", Micros),
            Row::SlowestLatency => ("SLOWEST-LATENCY", "latency_max_us", Micros),
            Row::LatencyP10 => ("Latency p10", "latency_p10_us", Micros),
            Row::LatencyP25 => ("Latency p25", "latency_p25_us", Micros),
            Row::LatencyP50 => ("Latency p50", "latency_p50_us", Micros),
            Row::LatencyP75 => ("Latency p75", "latency_p75_us", Micros),
            Row::LatencyP90 => ("Latency p90", "latency_p90_us", Micros),
            Row::LatencyP95 => ("Latency p95", "latency_p95_us", Micros),
            Row::LatencyP99 => ("Latency p99", "latency_p99_us", Micros),
            Row::LatencyP999 => ("Latency p99.9", "latency_p99_9_us", Micros),
            Row::ServerNetworkRx => {
                ("SERVER-TOTAL-NETWORK-RX-DATA-SUM", "server_network_received_bytes", Bytes)
            }
            Row::ServerNetworkTx => {
                ("SERVER-TOTAL-NETWORK-TX-DATA-SUM", "server_network_sent_bytes", Bytes)
            }
            Row::ClientNetworkRx => {
                ("CLIENT-TOTAL-NETWORK-RX-SUM", "client_network_received_bytes", Bytes)
            }
            Row::ClientNetworkTx => {
                ("CLIENT-TOTAL-NETWORK-TX-SUM", "client_network_sent_bytes", Bytes)
            }
            Row::ServerMaxCpu => ("SERVER-MAX-CPU-USAGE", "server_cpu_max_percent", Percent),
            Row::ServerMaxMemory => ("SERVER-MAX-MEMORY-USAGE", "server_memory_max_bytes", Bytes),
            Row::ClientMaxCpu => ("CLIENT-MAX-CPU-USAGE", "client_cpu_max_percent", Percent),
            Row::ClientMaxMemory => ("CLIENT-MAX-MEMORY-USAGE", "client_memory_max_bytes", Bytes),
            Row::ClientErrors => ("CLIENT-ERROR-COUNT", "client_errors", Count),
            Row::ServerReadsCompleted => {
                ("SERVER-AVG-READS-COMPLETED-DELTA-SUM", "server_disk_reads_completed", Count)
            }
            Row::ServerSectorsRead => {
                ("SERVER-AVG-SECTORS-READS-DELTA-SUM", "server_disk_sectors_read", Count)
            }
            Row::ServerWritesCompleted => {
                ("SERVER-AVG-WRITES-COMPLETED-DELTA-SUM", "server_disk_writes_completed", Count)
            }
            Row::ServerSectorsWritten => {
                ("SERVER-AVG-SECTORS-WRITTEN-DELTA-SUM", "server_disk_sectors_written", Count)
            }
            Row::ServerDiskSpace => {
                ("SERVER-AVG-DISK-SPACE-USAGE", "server_disk_space_avg_bytes", Bytes)
            }
        }
    }

    /// `value` as dbtester writes this row's figures: `28.3623 sec`, `1,000,000`,
    /// `35,343 req/sec`, `0.5432 ms`, `5.1 GB`, `446.83 %`.
    #[must_use]
    pub fn format(self, value: f64) -> String {
        match self.unit() {
            Unit::Seconds => format!("{value:.4} sec"),
            Unit::Count => thousands(value.round().max(0.0) as u64),
            Unit::PerSecond => format!("{} req/sec", thousands(value.max(0.0) as u64)),
            Unit::Micros => format!("{:.4} ms", value / 1e3),
            Unit::Bytes => humanized_bytes(value.max(0.0) as u64),
            Unit::Percent => format!("{value:.2} %"),
        }
    }
}

/// Bytes as go-humanize's `Bytes` writes them (dbtester's tables): decimal units, one
/// decimal below 10 of a unit, none above: `512 B`, `5.1 GB`, `252 MB`.
fn humanized_bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 10 {
        return format!("{n} B");
    }
    let x = n as f64;
    let e = (x.log10() / 3.0).floor().min(6.0);
    let value = (x / 1000f64.powf(e) * 10.0 + 0.5).floor() / 10.0;
    let unit = UNITS[e as usize];
    if value < 10.0 { format!("{value:.1} {unit}") } else { format!("{value:.0} {unit}") }
}

impl Study {
    /// The figure of `row`, as a number in its [`Row::unit`]; `None` when unknown.
    #[must_use]
    pub fn value(&self, row: Row) -> Option<f64> {
        let n = |v: Option<u64>| v.map(|v| v as f64);
        match row {
            Row::TotalSeconds => self.total_s,
            Row::TotalRequests => n(self.total_requests),
            Row::MaxThroughput => self.throughput_max_per_s,
            Row::AvgThroughput => self.throughput_avg_per_s,
            Row::MinThroughput => self.throughput_min_per_s,
            Row::FastestLatency => n(self.latency_min_us),
            Row::AvgLatency => self.latency_mean_us,
            Row::SlowestLatency => n(self.latency_max_us),
            Row::LatencyP10 => n(self.latency_p10_us),
            Row::LatencyP25 => n(self.latency_p25_us),
            Row::LatencyP50 => n(self.latency_p50_us),
            Row::LatencyP75 => n(self.latency_p75_us),
            Row::LatencyP90 => n(self.latency_p90_us),
            Row::LatencyP95 => n(self.latency_p95_us),
            Row::LatencyP99 => n(self.latency_p99_us),
            Row::LatencyP999 => n(self.latency_p99_9_us),
            Row::ServerNetworkRx => n(self.server_network_received_bytes),
            Row::ServerNetworkTx => n(self.server_network_sent_bytes),
            Row::ClientNetworkRx => n(self.client_network_received_bytes),
            Row::ClientNetworkTx => n(self.client_network_sent_bytes),
            Row::ServerMaxCpu => self.server_cpu_max_percent,
            Row::ServerMaxMemory => n(self.server_memory_max_bytes),
            Row::ClientMaxCpu => self.client_cpu_max_percent,
            Row::ClientMaxMemory => n(self.client_memory_max_bytes),
            Row::ClientErrors => n(self.client_errors),
            Row::ServerReadsCompleted => n(self.server_disk_reads_completed),
            Row::ServerSectorsRead => n(self.server_disk_sectors_read),
            Row::ServerWritesCompleted => n(self.server_disk_writes_completed),
            Row::ServerSectorsWritten => n(self.server_disk_sectors_written),
            Row::ServerDiskSpace => n(self.server_disk_space_avg_bytes),
        }
    }

    /// Why the figure of `row` is unknown; `None` when it is known.
    #[must_use]
    pub fn why_unknown(&self, row: Row) -> Option<&str> {
        self.unknown.get(row.key()).map(String::as_str)
    }

    /// The figure of `row` as dbtester writes it ([`Row::format`]), or `n/a` when unknown.
    #[must_use]
    pub fn cell(&self, row: Row) -> String {
        self.value(row).map_or_else(|| NOT_AVAILABLE.to_owned(), |v| row.format(v))
    }
}

/// A cell whose figure is unknown.
pub const NOT_AVAILABLE: &str = "n/a";

/// Why a server figure is unknown when no member was sampled.
const NO_MEMBERS: &str = "the members were not sampled (their /metrics not scraped)";

/// A figure, or why not.
type Known<T> = Result<T, String>;

impl Report {
    /// dbtester's figures of this run ([`Study`]).
    #[must_use]
    pub fn study(&self) -> Study {
        let mut unknown = BTreeMap::new();
        let mut known = |row: Row, figure: Known<f64>| match figure {
            Ok(v) => Some(v),
            Err(why) => {
                unknown.insert(row.key().to_owned(), why);
                None
            }
        };
        let load = self.load_op();
        let latency: Known<&Distribution> = match load {
            None => Err("the run sent no requests".to_owned()),
            Some(op) if op.latency.count() == 0 => Err("no request succeeded".to_owned()),
            Some(op) => Ok(&op.latency),
        };
        let mut at = |row: Row, us: fn(&Distribution) -> f64| {
            known(row, latency.clone().map(us)).map(|v| v.round() as u64)
        };
        let min_latency = at(Row::FastestLatency, |d| d.min_us() as f64);
        let max_latency = at(Row::SlowestLatency, |d| d.max_us() as f64);
        let [p10, p25, p50, p75, p90, p95, p99, p99_9] = [
            at(Row::LatencyP10, |d| d.quantile_us(0.10) as f64),
            at(Row::LatencyP25, |d| d.quantile_us(0.25) as f64),
            at(Row::LatencyP50, |d| d.quantile_us(0.50) as f64),
            at(Row::LatencyP75, |d| d.quantile_us(0.75) as f64),
            at(Row::LatencyP90, |d| d.quantile_us(0.90) as f64),
            at(Row::LatencyP95, |d| d.quantile_us(0.95) as f64),
            at(Row::LatencyP99, |d| d.quantile_us(0.99) as f64),
            at(Row::LatencyP999, |d| d.quantile_us(0.999) as f64),
        ];
        let mean_latency =
            known(Row::AvgLatency, latency.map(Distribution::mean_us)).map(super::round3);
        let windows = self.throughput_windows();
        let (window_s, min, max) = match windows {
            Ok((w, min, max)) => (Some(w), Ok(min), Ok(max)),
            Err(why) => (None, Err(why.clone()), Err(why)),
        };
        let client = self.client.as_ref().ok_or("the client did not measure itself");
        let client_bytes = |get: fn(&crate::ClientUsage) -> Option<u64>| -> Known<f64> {
            let c = client.map_err(str::to_owned)?;
            get(c).map(|b| b as f64).ok_or_else(|| {
                "the load's socket bytes were not counted (a report from an older etcdlat)"
                    .to_owned()
            })
        };
        let int = |v: Option<f64>| v.map(|v| v.round() as u64);
        let avg = load.map(|op| op.throughput).ok_or_else(|| "the run sent no requests".to_owned());
        let server = &self.server;
        let disk = |get: fn(&ResourceSample) -> Option<u64>| disk_total(server, get);
        let client_cpu = client.map_err(str::to_owned).and_then(|c| {
            c.cpu_max_percent.or_else(|| c.resources.cpu_max_percent()).ok_or_else(|| {
                "the client's CPU was not sampled (a report from an older etcdlat)".to_owned()
            })
        });
        let client_memory = client.map_err(str::to_owned).and_then(|c| {
            c.resources
                .max(|s| s.rss_bytes)
                .or((c.max_rss_bytes > 0).then_some(c.max_rss_bytes))
                .map(|b| b as f64)
                .ok_or_else(|| "the client's memory was not measured".to_owned())
        });
        Study {
            total_s: Some(self.duration_s),
            total_requests: Some(self.requests()),
            throughput_max_per_s: known(Row::MaxThroughput, max),
            throughput_avg_per_s: known(Row::AvgThroughput, avg).map(super::round3),
            throughput_min_per_s: known(Row::MinThroughput, min),
            throughput_window_s: window_s,
            latency_min_us: min_latency,
            latency_mean_us: mean_latency,
            latency_max_us: max_latency,
            latency_p10_us: p10,
            latency_p25_us: p25,
            latency_p50_us: p50,
            latency_p75_us: p75,
            latency_p90_us: p90,
            latency_p95_us: p95,
            latency_p99_us: p99,
            latency_p99_9_us: p99_9,
            server_network_received_bytes: int(known(
                Row::ServerNetworkRx,
                self.server_traffic(|m| m.grpc_received_bytes, |m| m.peer_received_bytes),
            )),
            server_network_sent_bytes: int(known(
                Row::ServerNetworkTx,
                self.server_traffic(|m| m.grpc_sent_bytes, |m| m.peer_sent_bytes),
            )),
            client_network_received_bytes: int(known(
                Row::ClientNetworkRx,
                client_bytes(|c| c.received_bytes),
            )),
            client_network_sent_bytes: int(known(
                Row::ClientNetworkTx,
                client_bytes(|c| c.sent_bytes),
            )),
            server_cpu_max_percent: known(
                Row::ServerMaxCpu,
                max_of_average(server, |s| s.cpu_max_percent.or(s.cpu_percent)),
            )
            .map(|c| (c * 100.0).round() / 100.0),
            server_memory_max_bytes: int(known(
                Row::ServerMaxMemory,
                max_of_average(server, |s| s.rss_bytes.map(|b| b as f64)),
            )),
            client_cpu_max_percent: known(Row::ClientMaxCpu, client_cpu),
            client_memory_max_bytes: int(known(Row::ClientMaxMemory, client_memory)),
            client_errors: Some(self.errors_total()),
            server_disk_reads_completed: int(known(
                Row::ServerReadsCompleted,
                disk(|s| s.disk_reads_completed),
            )),
            server_disk_sectors_read: int(known(
                Row::ServerSectorsRead,
                disk(|s| s.disk_sectors_read),
            )),
            server_disk_writes_completed: int(known(
                Row::ServerWritesCompleted,
                disk(|s| s.disk_writes_completed),
            )),
            server_disk_sectors_written: int(known(
                Row::ServerSectorsWritten,
                disk(|s| s.disk_sectors_written),
            )),
            server_disk_space_avg_bytes: int(known(Row::ServerDiskSpace, disk_space(server))),
            unknown,
        }
    }

    /// The load's figures: every operation together (`all`), or the one kind the run sent;
    /// background compaction is not load.
    pub fn load_op(&self) -> Option<&OpReport> {
        if let Some(all) = &self.all {
            return Some(all);
        }
        let mut load = self.ops.iter().filter(|(k, _)| **k != OpKind::Compact).map(|(_, o)| o);
        match (load.next(), load.next()) {
            (Some(op), None) => Some(op),
            _ => None,
        }
    }

    /// The window of MAX- and MIN-THROUGHPUT, and the idlest and busiest rates in whole
    /// windows: seconds, made of the intervals when they divide one, else the intervals.
    fn throughput_windows(&self) -> Known<(f64, f64, f64)> {
        let interval = self.interval().as_secs_f64();
        let load: Vec<&OpReport> =
            self.ops.iter().filter(|(k, _)| **k != OpKind::Compact).map(|(_, o)| o).collect();
        let n = load.iter().map(|o| o.intervals.len()).max().unwrap_or(0);
        if n == 0 || interval <= 0.0 {
            return Err("no request completed".to_owned());
        }
        let count = |i: usize| -> u64 {
            load.iter().filter_map(|o| o.intervals.get(i)).map(|x| x.count).sum()
        };
        let per_second = (1.0 / interval).round();
        let (k, window) = if per_second >= 1.0 && (per_second * interval - 1.0).abs() < 1e-9 {
            (per_second as usize, 1.0)
        } else {
            (1, interval)
        };
        // Only whole windows: the last, cut short by the end of the run, would read low.
        let whole = ((self.duration_s + 1e-9) / window).floor() as usize;
        if whole == 0 {
            return Err(format!("the run was shorter than one window ({window} s)"));
        }
        let rates: Vec<f64> = (0..whole)
            .map(|w| (w * k..(w + 1) * k).map(count).sum::<u64>() as f64 / window)
            .collect();
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        Ok((window, super::round3(min), super::round3(max)))
    }

    /// What every member received (or sent) over the run, gRPC and peers, summed.
    fn server_traffic(
        &self,
        grpc: fn(&MemberMetrics) -> Option<u64>,
        peer: fn(&MemberMetrics) -> Option<u64>,
    ) -> Known<f64> {
        if self.server.is_empty() {
            return Err(NO_MEMBERS.to_owned());
        }
        let (version, members) = (&self.target.etcd_version, self.target.members);
        let mut sum = 0u64;
        for m in &self.server {
            let missing = "not scraped twice";
            let g = grpc(m).ok_or_else(|| {
                format!(
                    "{}: {}",
                    m.name,
                    m.absent(metric::GRPC_RECEIVED, version, members, missing)
                )
            })?;
            // A single member has no peers: nothing to count, not an unknown.
            let p = match peer(m) {
                Some(p) => p,
                None if members < 2 => 0,
                None => {
                    return Err(format!(
                        "{}: {}",
                        m.name,
                        m.absent(metric::PEER_RECEIVED, version, members, missing)
                    ));
                }
            };
            sum += g + p;
        }
        Ok(sum as f64)
    }
}

/// The largest, over time, of the members' average `figure` ([`members_average`]).
fn max_of_average(
    members: &[MemberMetrics],
    figure: fn(&ResourceSample) -> Option<f64>,
) -> Known<f64> {
    if members.is_empty() {
        return Err(NO_MEMBERS.to_owned());
    }
    members_average(members, figure).into_iter().map(|(_, v)| v).reduce(f64::max).ok_or_else(|| {
        "the members' resources were not sampled (a report from an older etcdlat)".to_owned()
    })
}

/// The members' average `figure` over time, as `(t_s, average)`, over every member: at each
/// sample of the member with the most samples, each member's sample that covers its middle.
/// A member that was down then counts 0 (it used no CPU and held no memory); a member that
/// never had the figure (its etcd does not export it) is left out of the average; a time
/// at which another member has no figure is left out, rather than averaged over the members
/// that answered (a member killed, or not answering, would raise it).
pub fn members_average(
    members: &[MemberMetrics],
    figure: fn(&ResourceSample) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let series: Vec<&ResourceSeries> = members
        .iter()
        .map(|m| &m.resources)
        .filter(|s| s.samples.iter().any(|x| figure(x).is_some()))
        .collect();
    let Some(reference) = series.iter().max_by_key(|s| s.samples.len()) else {
        return Vec::new();
    };
    let at_time = |s: &ResourceSeries, mid: f64| -> Option<f64> {
        let covering = s.samples.iter().find(|x| x.t_s - x.span_s <= mid && mid <= x.t_s)?;
        figure(covering).or(covering.down_s.map(|_| 0.0))
    };
    reference
        .samples
        .iter()
        .filter_map(|at| {
            let mid = at.t_s - at.span_s / 2.0;
            let values: Option<Vec<f64>> = series.iter().map(|s| at_time(s, mid)).collect();
            let values = values?;
            Some((at.t_s, values.iter().sum::<f64>() / values.len() as f64))
        })
        .collect()
}

/// A disk figure over the run, for each block device holding a member's data dir once.
fn disk_total(members: &[MemberMetrics], figure: fn(&ResourceSample) -> Option<u64>) -> Known<f64> {
    if members.is_empty() {
        return Err(NO_MEMBERS.to_owned());
    }
    if let Some(m) = members.iter().find(|m| m.resources.disk.is_none()) {
        let why = m.resources.why_not(source::DISK).unwrap_or("its disk was not sampled");
        return Err(format!("{}: {why}", m.name));
    }
    let sum: u64 =
        metrics::disks(members).map(|(_, series)| series.total(figure).unwrap_or(0)).sum();
    Ok(sum as f64)
}

/// The members' data dir sizes at the end, averaged.
fn disk_space(members: &[MemberMetrics]) -> Known<f64> {
    if members.is_empty() {
        return Err(NO_MEMBERS.to_owned());
    }
    let mut sum = 0u64;
    for m in members {
        let series = &m.resources;
        sum += series.last(|s| s.data_dir_bytes).ok_or_else(|| {
            let why = series.why_not(source::DATA_DIR).unwrap_or("its data dir was not sampled");
            format!("{}: {why}", m.name)
        })?;
    }
    Ok(sum as f64 / members.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_written_as_dbtester_writes_them() {
        assert_eq!(Row::TotalSeconds.format(28.362_34), "28.3623 sec");
        assert_eq!(Row::TotalRequests.format(1e6), "1,000,000");
        assert_eq!(Row::MaxThroughput.format(35_343.9), "35,343 req/sec");
        assert_eq!(Row::LatencyP99.format(5_432.0), "5.4320 ms");
        assert_eq!(Row::ServerNetworkRx.format(5.1e9), "5.1 GB");
        assert_eq!(Row::ClientNetworkRx.format(252.3e6), "252 MB");
        assert_eq!(Row::ServerMaxCpu.format(446.833), "446.83 %");
        assert_eq!(humanized_bytes(7), "7 B");
        assert_eq!(humanized_bytes(999), "999 B");
        assert_eq!(humanized_bytes(1_000), "1.0 kB");
        assert_eq!(humanized_bytes(9_960), "10 kB");
    }

    /// A member's series of one-second samples at `cpu` percent, from 1 s on.
    fn member(cpu: &[Option<f64>], down: &[bool]) -> MemberMetrics {
        let samples = cpu
            .iter()
            .zip(down)
            .enumerate()
            .map(|(i, (&cpu_percent, &down))| ResourceSample {
                t_s: i as f64 + 1.0,
                span_s: 1.0,
                cpu_percent,
                down_s: down.then_some(1.0),
                ..ResourceSample::default()
            })
            .collect();
        let resources = ResourceSeries { period_s: 1.0, samples, ..ResourceSeries::default() };
        MemberMetrics { resources, ..MemberMetrics::default() }
    }

    #[test]
    fn the_average_is_over_every_member_and_a_member_down_counts_nothing() {
        let up = [false; 3];
        let busy = member(&[Some(90.0), Some(90.0), Some(90.0)], &up);
        // Killed in its second second: down, with no figures (as a report before down
        // members had 0 CPU).
        let killed = member(&[Some(30.0), None, Some(30.0)], &[false, true, false]);
        // A scrape that failed: no figure and not down, so that second is unknown.
        let failed = member(&[Some(60.0), Some(60.0), None], &up);
        let avg = members_average(&[busy.clone(), killed, failed], |s| s.cpu_percent);
        assert_eq!(avg, [(1.0, 60.0), (2.0, 50.0)]);
        // A member that never has the figure is not one of those averaged.
        let never = member(&[None, None, None], &up);
        let avg = members_average(&[busy, never], |s| s.cpu_percent);
        assert_eq!(avg, [(1.0, 90.0), (2.0, 90.0), (3.0, 90.0)]);
    }

    #[test]
    fn rows_have_distinct_labels_and_keys() {
        let mut labels: Vec<&str> = Row::ALL.iter().map(|r| r.label()).collect();
        let mut keys: Vec<&str> = Row::ALL.iter().map(|r| r.key()).collect();
        labels.sort_unstable();
        labels.dedup();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!((labels.len(), keys.len()), (Row::ALL.len(), Row::ALL.len()));
    }
}
