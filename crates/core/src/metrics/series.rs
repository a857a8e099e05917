//! Resource series: what a member, or the client, used over a run, one sample a second,
//! kept in bounded memory; the samples of the measurement apart from those before it
//! (setup, warm-up) and after it (fault steps undone).
//!
//! A [`ResourceSample`] holds levels at the moment it was taken (resident memory, sizes on
//! disk) and what happened since the sample before it (CPU time as a share of that span,
//! bytes, system calls, context switches, disk requests). A [`SeriesBuilder`] keeps at most
//! [`MAX_SAMPLES`] of them: when full, it folds each pair of neighbours into one and from
//! then on folds as many periods into each sample, so that a run of any length keeps between
//! half and all of [`MAX_SAMPLES`] samples (as the latency series keeps its intervals).
//! Folding keeps totals exact: counts add up, CPU is averaged over the span, and the peak
//! CPU of a single period is kept beside it.
//!
//! A sample after a reading that failed covers the time since that source's last good
//! reading ([`SeriesBuilder::hold`]), so that what it counted is never divided by one
//! period's span.
//!
//! A figure a source could not give is `None`; why a whole source is missing (a member
//! etcdlat did not start has no process or data dir it can look at; a data dir on tmpfs has
//! no block device) is in [`ResourceSeries::not_available`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Most samples a series keeps; past it, neighbours are folded in pairs.
pub const MAX_SAMPLES: usize = 200;

/// The sources of a series' figures beyond `/metrics`, as [`NotAvailable::source`] names them.
#[doc(hidden)] // internal: the driver's readers of /proc and /metrics; not part of the API
pub mod source {
    /// The process's own counters from `/proc/PID`: CPU time (`stat`), resident memory and
    /// context switches (`status`), and I/O (`io`). Without them a member's CPU and memory
    /// come from its `/metrics`; its context switches and I/O are not known.
    pub const PROCESS: &str = "process";
    /// The member's data dir: its size, its WAL's and its snapshots' (`member/wal`,
    /// `member/snap`, which holds the backend database `db`).
    pub const DATA_DIR: &str = "data_dir";
    /// `/proc/diskstats` of the block device that holds the data dir.
    pub const DISK: &str = "disk";
}

/// One sample of a resource series.
///
/// Levels (`rss_bytes` and the sizes) are read when the sample is taken; the other figures
/// count what happened during `span_s`, since the sample before. Figures a series' source
/// does not give are `None` and left out of the JSON: a member's series has no
/// `sent_bytes`, the client's no `grpc_*` or disk figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ResourceSample {
    /// When the sample was taken, seconds since measurement started (negative before it:
    /// sampling starts before warm-up).
    pub t_s: f64,
    /// The time the sample covers, seconds: since the sample before it.
    pub span_s: f64,
    /// CPU time over the span, user and system, all threads, percent of one core (200: two
    /// cores busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f64>,
    /// The highest `cpu_percent` of one sampling period within the span (the same as
    /// `cpu_percent` until samples are folded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_max_percent: Option<f64>,
    /// Resident memory, bytes: the largest reading within the span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Seconds of the span the member was down: a member etcdlat started whose process
    /// was not running (killed by a fault step, restarting) and that did not answer. Down,
    /// it used no CPU and no memory: its `cpu_percent` and `rss_bytes` count 0 for that
    /// time. Absent when it was up the whole span, and in the client's series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_s: Option<f64>,
    /// Size of the backend database when taken, bytes (`/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_size_bytes: Option<u64>,
    /// Bytes sent to gRPC clients during the span (`/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_sent_bytes: Option<u64>,
    /// Bytes received from gRPC clients during the span (`/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_received_bytes: Option<u64>,
    /// Bytes sent to the other members during the span (`/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_sent_bytes: Option<u64>,
    /// Bytes received from the other members during the span (`/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_received_bytes: Option<u64>,
    /// Whether the member was the leader when the sample was taken (`/metrics`'
    /// `etcd_server_is_leader`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<bool>,
    /// 99th percentile of the member's WAL fsyncs during the span, microseconds (`/metrics`'
    /// `etcd_disk_wal_fsync_duration_seconds`); `None` when none happened. Folded samples
    /// keep the highest of their periods'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_fsync_p99_us: Option<u64>,
    /// 99th percentile of its backend commits during the span, microseconds
    /// (`etcd_disk_backend_commit_duration_seconds`), as `wal_fsync_p99_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_commit_p99_us: Option<u64>,
    /// 99th percentile of the requests it applied during the span, microseconds
    /// (`etcd_server_apply_duration_seconds`, etcd 3.5 and later), as `wal_fsync_p99_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_p99_us: Option<u64>,
    /// 99th percentile of the round trips it timed to its peers during the span, all peers,
    /// microseconds (`etcd_network_peer_round_trip_time_seconds`; etcd probes each peer
    /// every few seconds, so most spans have none), as `wal_fsync_p99_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_rtt_p99_us: Option<u64>,
    /// Raft proposals it committed during the span (`etcd_server_proposals_committed_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposals_committed: Option<u64>,
    /// Leader changes it saw during the span (`etcd_server_leader_changes_seen_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_changes: Option<u64>,
    /// Bytes the client's load connections wrote to their sockets during the span (HTTP/2
    /// frames, TLS records when encrypted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    /// Bytes the client's load connections read from their sockets during the span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    /// Bytes the process caused to be read from storage during the span
    /// (`/proc/PID/io` `read_bytes`: not what the page cache served).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
    /// Bytes the process caused to be written to storage during the span
    /// (`/proc/PID/io` `write_bytes`: pages it dirtied, counted when dirtied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes: Option<u64>,
    /// Read system calls during the span (`syscr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_syscalls: Option<u64>,
    /// Write system calls during the span (`syscw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_syscalls: Option<u64>,
    /// Bytes read by system calls during the span, from storage, cache, sockets or pipes
    /// (`rchar`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_chars: Option<u64>,
    /// Bytes written by system calls during the span, to any file or socket (`wchar`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_chars: Option<u64>,
    /// Voluntary context switches during the span, all threads (a thread waited: for I/O,
    /// a lock, a timer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voluntary_ctxt_switches: Option<u64>,
    /// Involuntary context switches during the span, all threads (a thread was preempted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonvoluntary_ctxt_switches: Option<u64>,
    /// Size of the member's data dir when taken, all files, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir_bytes: Option<u64>,
    /// Size of its WAL (`member/wal`) when taken, bytes; etcd preallocates WAL segments
    /// 64 MB at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_bytes: Option<u64>,
    /// Size of its snapshots and backend database (`member/snap`, `db` included) when
    /// taken, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snap_bytes: Option<u64>,
    /// Reads completed by the data dir's block device during the span, machine-wide
    /// (`/proc/diskstats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_reads_completed: Option<u64>,
    /// Sectors (512 bytes) read from the device during the span, machine-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_sectors_read: Option<u64>,
    /// Writes completed by the device during the span, machine-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_writes_completed: Option<u64>,
    /// Sectors (512 bytes) written to the device during the span, machine-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_sectors_written: Option<u64>,
}

impl ResourceSample {
    /// Folds `later`, the sample that follows this one, into it: the span grows to cover
    /// both, counts add, CPU is averaged over the spans it was measured in, resident memory
    /// keeps the larger reading and sizes the later one.
    fn absorb(&mut self, later: &Self) {
        let add = |a: &mut Option<u64>, b: Option<u64>| {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0) + b);
            }
        };
        let max = |a: &mut Option<u64>, b: Option<u64>| *a = (*a).max(b);
        let latest = |a: &mut Option<u64>, b: Option<u64>| *a = b.or(*a);
        self.cpu_percent = match (self.cpu_percent, later.cpu_percent) {
            (Some(a), Some(b)) if self.span_s + later.span_s > 0.0 => {
                Some((a * self.span_s + b * later.span_s) / (self.span_s + later.span_s))
            }
            (a, b) => a.or(b),
        };
        self.cpu_max_percent = match (self.cpu_max_percent, later.cpu_max_percent) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.t_s = later.t_s;
        self.span_s += later.span_s;
        self.down_s = match (self.down_s, later.down_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        max(&mut self.rss_bytes, later.rss_bytes);
        latest(&mut self.db_size_bytes, later.db_size_bytes);
        latest(&mut self.data_dir_bytes, later.data_dir_bytes);
        latest(&mut self.wal_bytes, later.wal_bytes);
        latest(&mut self.snap_bytes, later.snap_bytes);
        self.leader = later.leader.or(self.leader);
        for (a, b) in [
            (&mut self.wal_fsync_p99_us, later.wal_fsync_p99_us),
            (&mut self.backend_commit_p99_us, later.backend_commit_p99_us),
            (&mut self.apply_p99_us, later.apply_p99_us),
            (&mut self.peer_rtt_p99_us, later.peer_rtt_p99_us),
        ] {
            max(a, b);
        }
        for (a, b) in [
            (&mut self.grpc_sent_bytes, later.grpc_sent_bytes),
            (&mut self.grpc_received_bytes, later.grpc_received_bytes),
            (&mut self.peer_sent_bytes, later.peer_sent_bytes),
            (&mut self.peer_received_bytes, later.peer_received_bytes),
            (&mut self.proposals_committed, later.proposals_committed),
            (&mut self.leader_changes, later.leader_changes),
            (&mut self.sent_bytes, later.sent_bytes),
            (&mut self.received_bytes, later.received_bytes),
            (&mut self.read_bytes, later.read_bytes),
            (&mut self.write_bytes, later.write_bytes),
            (&mut self.read_syscalls, later.read_syscalls),
            (&mut self.write_syscalls, later.write_syscalls),
            (&mut self.read_chars, later.read_chars),
            (&mut self.write_chars, later.write_chars),
            (&mut self.voluntary_ctxt_switches, later.voluntary_ctxt_switches),
            (&mut self.nonvoluntary_ctxt_switches, later.nonvoluntary_ctxt_switches),
            (&mut self.disk_reads_completed, later.disk_reads_completed),
            (&mut self.disk_sectors_read, later.disk_sectors_read),
            (&mut self.disk_writes_completed, later.disk_writes_completed),
            (&mut self.disk_sectors_written, later.disk_sectors_written),
        ] {
            add(a, b);
        }
    }
}

/// A source of figures a series does not have, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotAvailable {
    /// The source, one of [`source`]: `process`, `data_dir` or `disk`.
    pub source: String,
    /// Why, in words: `etcdlat did not start this member: its process is not known here`,
    /// `the data dir is on tmpfs, which has no block device`.
    pub why: String,
}

/// The block device whose `/proc/diskstats` line a member's disk figures come from: the one
/// that holds its data dir (the partition's line; the whole disk's when the partition has
/// none of its own).
///
/// Its figures are machine-wide: they count every process's I/O on the device, not only
/// the member's (members of a local cluster share it, and count the same requests).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskDevice {
    /// The device's name in `/proc/diskstats` (`sda1`, `nvme0n1p2`, `vda`).
    pub name: String,
    /// Its device number, `major:minor`.
    pub device: String,
}

/// One member's, or the client's, resource use over a run: samples, and what could not be
/// sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ResourceSeries {
    /// How often samples were taken, seconds (each sample spans one period until samples
    /// are folded in pairs, [`MAX_SAMPLES`]).
    pub period_s: f64,
    /// The samples of the measurement, in time order: from its start (the first spans from
    /// it) to the load's end. Every figure of a report is made of these.
    pub samples: Vec<ResourceSample>,
    /// The samples outside the measurement, in time order, in no figure of the report:
    /// before it (setup and warm-up, negative `t_s`) and after the load ended (fault steps
    /// undone, the checks after the run). Empty in reports that predate it, whose
    /// `samples` hold them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<ResourceSample>,
    /// The sources this series has no figures from, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_available: Vec<NotAvailable>,
    /// The block device the disk figures are read from, when they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskDevice>,
}

impl ResourceSeries {
    /// Whether nothing was sampled and nothing said: a report that predates series, or a
    /// part that was not sampled.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
            && self.outside.is_empty()
            && self.not_available.is_empty()
            && self.disk.is_none()
    }

    /// A count over the whole series: the sum of `figure` over the samples that have it;
    /// `None` when none has.
    #[must_use]
    pub fn total(&self, figure: fn(&ResourceSample) -> Option<u64>) -> Option<u64> {
        self.samples.iter().filter_map(figure).reduce(|a, b| a + b)
    }

    /// The largest of `figure` over the series; `None` when no sample has it.
    #[must_use]
    pub fn max(&self, figure: fn(&ResourceSample) -> Option<u64>) -> Option<u64> {
        self.samples.iter().filter_map(figure).max()
    }

    /// The last sample's `figure` that has one: a level at the end of the series.
    #[must_use]
    pub fn last(&self, figure: fn(&ResourceSample) -> Option<u64>) -> Option<u64> {
        self.samples.iter().rev().find_map(figure)
    }

    /// CPU over the whole series, percent of one core: CPU time over the time it was
    /// measured in.
    #[must_use]
    pub fn cpu_avg_percent(&self) -> Option<f64> {
        let (weighted, span) = self
            .samples
            .iter()
            .filter_map(|s| s.cpu_percent.map(|c| (c * s.span_s, s.span_s)))
            .fold((0.0, 0.0), |(w, t), (c, s)| (w + c, t + s));
        (span > 0.0).then(|| weighted / span)
    }

    /// How long the member was down over the series, seconds; `None` when it never was.
    #[must_use]
    pub fn down_s(&self) -> Option<f64> {
        self.samples.iter().filter_map(|s| s.down_s).reduce(|a, b| a + b)
    }

    /// The highest CPU of one sampling period, percent of one core.
    #[must_use]
    pub fn cpu_max_percent(&self) -> Option<f64> {
        self.samples.iter().filter_map(|s| s.cpu_max_percent.or(s.cpu_percent)).reduce(f64::max)
    }

    /// Why the figures of `source` (one of [`source`]) are missing, when they are.
    #[must_use]
    pub fn why_not(&self, source: &str) -> Option<&str> {
        self.not_available.iter().find(|n| n.source == source).map(|n| n.why.as_str())
    }
}

/// Builds a [`ResourceSeries`] one sample at a time, in at most [`MAX_SAMPLES`] samples of
/// the measurement and as many outside it.
#[derive(Debug, Clone)]
#[doc(hidden)] // internal: the driver's; not part of the API
pub struct SeriesBuilder {
    series: ResourceSeries,
    measured: Folded,
    outside: Folded,
    /// A sample held back ([`SeriesBuilder::hold`]), that the next one is added to.
    held: Option<ResourceSample>,
}

/// Samples kept in at most [`MAX_SAMPLES`], folded in pairs when full.
#[derive(Debug, Clone)]
struct Folded {
    samples: Vec<ResourceSample>,
    /// Sampling periods folded into each full sample.
    width: u32,
    /// Periods folded into the last sample so far.
    in_last: u32,
}

impl Folded {
    fn new() -> Self {
        Self { samples: Vec::new(), width: 1, in_last: 0 }
    }

    fn push(&mut self, sample: ResourceSample) {
        let samples = &mut self.samples;
        if self.in_last > 0
            && self.in_last < self.width
            && let Some(last) = samples.last_mut()
        {
            last.absorb(&sample);
            self.in_last += 1;
            return;
        }
        if samples.len() >= MAX_SAMPLES {
            let folded: Vec<ResourceSample> = samples
                .chunks(2)
                .map(|pair| {
                    let mut first = pair[0].clone();
                    if let Some(second) = pair.get(1) {
                        first.absorb(second);
                    }
                    first
                })
                .collect();
            *samples = folded;
            self.width *= 2;
        }
        samples.push(sample);
        self.in_last = 1;
    }
}

impl SeriesBuilder {
    /// A series of samples taken every `period`.
    #[must_use]
    pub fn new(period: Duration) -> Self {
        let series = ResourceSeries { period_s: period.as_secs_f64(), ..ResourceSeries::default() };
        Self { series, measured: Folded::new(), outside: Folded::new(), held: None }
    }

    /// Holds back `sample`, of a period in which a source failed to read: that source's
    /// next reading counts from its last good one, so the next sample is added to this one
    /// and their spans together are the time its counts cover.
    pub fn hold(&mut self, sample: ResourceSample) {
        match &mut self.held {
            Some(held) => held.absorb(&sample),
            None => self.held = Some(sample),
        }
    }

    /// Adds the sample of one sampling period (to the one held back, if any), of the
    /// measurement when `measured` (its span is the measurement's), else outside it;
    /// folding samples in pairs when [`MAX_SAMPLES`] are full.
    pub fn push(&mut self, sample: ResourceSample, measured: bool) {
        let sample = match self.held.take() {
            Some(mut held) => {
                held.absorb(&sample);
                held
            }
            None => sample,
        };
        if measured { &mut self.measured } else { &mut self.outside }.push(sample);
    }

    /// Says that the figures of `source` (one of [`source`]) are missing, and why; said
    /// again, the later reason stands.
    pub fn not_available(&mut self, source: &str, why: impl Into<String>) {
        let why = why.into();
        match self.series.not_available.iter_mut().find(|n| n.source == source) {
            Some(n) => n.why = why,
            None => self.series.not_available.push(NotAvailable { source: source.to_owned(), why }),
        }
    }

    /// Names the block device the disk figures are read from.
    pub fn disk(&mut self, device: DiskDevice) {
        self.series.disk = Some(device);
    }

    /// Samples of the measurement so far (folded ones count once).
    #[must_use]
    pub fn len(&self) -> usize {
        self.measured.samples.len()
    }

    /// Whether no sample of the measurement was added yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.measured.samples.is_empty()
    }

    /// The series, its times moved by `shift_s` seconds (from the sampler's clock to the
    /// measurement's), times rounded to milliseconds and CPU to hundredths of a percent.
    #[must_use]
    pub fn finish(mut self, shift_s: f64) -> ResourceSeries {
        // A sample still held: its source never read again.
        if let Some(held) = self.held.take() {
            self.outside.push(held);
        }
        let mut series = self.series;
        series.samples = self.measured.samples;
        series.outside = self.outside.samples;
        let round = |x: f64, per: f64| (x * per).round() / per;
        for s in series.samples.iter_mut().chain(&mut series.outside) {
            s.t_s = round(s.t_s + shift_s, 1e3);
            s.span_s = round(s.span_s, 1e3);
            s.down_s = s.down_s.map(|d| round(d, 1e3));
            s.cpu_percent = s.cpu_percent.map(|c| round(c, 100.0));
            s.cpu_max_percent = s.cpu_max_percent.map(|c| round(c, 100.0));
        }
        series
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u32, cpu: f64, writes: u64, rss: u64) -> ResourceSample {
        ResourceSample {
            t_s: f64::from(t),
            span_s: 1.0,
            cpu_percent: Some(cpu),
            cpu_max_percent: Some(cpu),
            rss_bytes: Some(rss),
            write_bytes: Some(writes),
            data_dir_bytes: Some(u64::from(t) * 10),
            ..ResourceSample::default()
        }
    }

    #[test]
    fn a_long_series_stays_bounded_and_keeps_its_totals() {
        let mut b = SeriesBuilder::new(Duration::from_secs(1));
        let n = 1_000u32;
        for t in 1..=n {
            // CPU 10% except one second at 90%.
            let cpu = if t == 777 { 90.0 } else { 10.0 };
            b.push(second(t, cpu, u64::from(t), u64::from(t % 50)), true);
            assert!(b.len() <= MAX_SAMPLES, "at {t}: {}", b.len());
        }
        let s = b.finish(0.0);
        assert!((MAX_SAMPLES / 2..=MAX_SAMPLES).contains(&s.samples.len()), "{}", s.samples.len());
        let n64 = u64::from(n);
        assert_eq!(s.total(|s| s.write_bytes), Some(n64 * (n64 + 1) / 2), "counts add up");
        let spans: f64 = s.samples.iter().map(|s| s.span_s).sum();
        assert_eq!(spans, f64::from(n), "the spans cover every second once");
        assert_eq!(s.samples.last().unwrap().t_s, f64::from(n));
        assert_eq!(s.cpu_max_percent(), Some(90.0), "the peak second survives folding");
        let avg = s.cpu_avg_percent().unwrap();
        assert!((avg - (10.0 + 80.0 / f64::from(n))).abs() < 1e-6, "{avg}");
        assert_eq!(s.max(|s| s.rss_bytes), Some(49));
        assert_eq!(s.last(|s| s.data_dir_bytes), Some(u64::from(n) * 10));
        // Equal widths: every folded sample spans the same time but the last.
        let width = s.samples[0].span_s;
        assert!(s.samples[..s.samples.len() - 1].iter().all(|x| x.span_s == width));
    }

    #[test]
    fn a_figure_missing_from_one_sample_is_kept_from_the_other() {
        let mut a = second(1, 50.0, 100, 7);
        let b = ResourceSample { t_s: 2.0, span_s: 1.0, ..ResourceSample::default() };
        a.absorb(&b);
        assert_eq!((a.t_s, a.span_s), (2.0, 2.0));
        assert_eq!((a.cpu_percent, a.write_bytes, a.rss_bytes), (Some(50.0), Some(100), Some(7)));
        assert_eq!(a.data_dir_bytes, Some(10), "the last size known");
        assert_eq!(a.sent_bytes, None, "never measured stays unknown");
    }

    #[test]
    fn etcds_figures_fold_as_counts_peaks_and_the_latest_role() {
        let etcd = |t: u32, p99: u64, committed: u64, leader: bool| ResourceSample {
            t_s: f64::from(t),
            span_s: 1.0,
            leader: Some(leader),
            wal_fsync_p99_us: Some(p99),
            peer_rtt_p99_us: (t == 2).then_some(900),
            proposals_committed: Some(committed),
            leader_changes: Some(u64::from(t == 2)),
            ..ResourceSample::default()
        };
        let mut a = etcd(1, 4000, 100, false);
        a.absorb(&etcd(2, 2500, 50, true));
        assert_eq!(a.wal_fsync_p99_us, Some(4000), "the slower period's p99 is kept");
        assert_eq!(a.peer_rtt_p99_us, Some(900), "a period without round trips is no 0");
        assert_eq!((a.proposals_committed, a.leader_changes), (Some(150), Some(1)));
        assert_eq!(a.leader, Some(true), "the role at the end of the span");
    }

    #[test]
    fn times_move_to_the_measurement_clock() {
        let mut b = SeriesBuilder::new(Duration::from_secs(1));
        b.push(second(1, 33.333_33, 0, 0), true);
        b.not_available(source::DISK, "first");
        b.not_available(source::DISK, "second");
        let s = b.finish(-0.2501);
        assert_eq!(s.samples[0].t_s, 0.75);
        assert_eq!(s.samples[0].cpu_percent, Some(33.33));
        assert_eq!(s.why_not(source::DISK), Some("second"));
        assert_eq!(s.why_not(source::PROCESS), None);
    }
}
