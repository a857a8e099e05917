//! Turning what is read every sampling period into resource samples: a member's (its
//! `/metrics`, and for a member etcdlat started its process, data dir and disk) and the
//! client's own.
//!
//! Each source keeps the last reading it gave; a sample holds the difference from it, so a
//! reading that failed (a scrape timed out, the process was being restarted) leaves its
//! figures out of one sample and the next one counts from the last good reading: totals
//! stay exact. A process whose pid changed (restarted) starts counting afresh.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcdlat_core::metrics::counter_increase;
use etcdlat_core::metrics::{DiskDevice, ResourceSample, ResourceSeries, SeriesBuilder, source};

use super::host::{self, DirSizes, DiskCounters, ProcessCounters};
use super::scrape::Snapshot;
use crate::cluster::local::MemberProcess;
use crate::transport::Ledger;

/// Why the `/proc` figures of a member etcdlat did not start are missing.
const NOT_STARTED: &str =
    "etcdlat did not start this member: its process and data dir are not known here";

/// What was read from the machine about a member etcdlat started, at one moment.
pub(super) struct HostReading {
    pid: Option<u32>,
    process: Result<ProcessCounters, String>,
    dir: Result<DirSizes, String>,
    disk: Option<Result<DiskCounters, String>>,
}

/// Reads what the machine says of a member etcdlat started: files under `/proc`, a walk
/// of its data dir. Apart from [`MemberResources`], so that the reads can be sent off the
/// runtime's threads ([`super::off_runtime`]).
pub(super) struct HostReader {
    local: MemberProcess,
    disk: Option<host::Disk>,
}

impl HostReader {
    /// Reads the member's process, data dir and disk now.
    pub(super) fn read(&self) -> HostReading {
        let pid = self.local.pid();
        let process = match pid {
            Some(pid) => host::process(pid),
            None => Err("the member's process was not running".to_owned()),
        };
        HostReading {
            pid,
            process,
            dir: host::dir_sizes(self.local.data_dir()),
            disk: self.disk.as_ref().map(host::Disk::read),
        }
    }
}

/// One member's resource samples so far.
pub(super) struct MemberResources {
    local: Option<MemberProcess>,
    disk: Option<host::Disk>,
    series: SeriesBuilder,
    started: Instant,
    last_at: Option<Instant>,
    last_process: Option<(u32, Instant, ProcessCounters)>,
    last_metrics: Option<(Instant, Snapshot)>,
    last_disk: Option<DiskCounters>,
    /// Per source, whether it ever gave figures, and why it last did not.
    process: Outcome,
    io: Outcome,
    dir: Outcome,
    disk_read: Outcome,
}

/// Whether a source ever gave figures, and why it last did not.
#[derive(Default)]
struct Outcome {
    ok: bool,
    error: Option<String>,
}

impl Outcome {
    fn note<T>(&mut self, read: Result<T, String>) -> Option<T> {
        match read {
            Ok(v) => {
                self.ok = true;
                Some(v)
            }
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }

    /// Why the source gave nothing over the whole series; `None` when it gave something.
    fn never(&self) -> Option<&str> {
        (!self.ok).then_some(self.error.as_deref()).flatten()
    }
}

impl MemberResources {
    /// A member's samples every `period` from `started`; `local` when etcdlat started it,
    /// whose data dir's block device is looked up now.
    pub(super) fn new(local: Option<MemberProcess>, period: Duration, started: Instant) -> Self {
        let mut series = SeriesBuilder::new(period);
        let mut disk = None;
        match &local {
            None => {
                for s in [source::PROCESS, source::DATA_DIR, source::DISK] {
                    series.not_available(s, NOT_STARTED);
                }
            }
            Some(local) => match host::disk_of(local.data_dir()) {
                Ok(d) => {
                    series.disk(DiskDevice {
                        name: d.name.clone(),
                        device: format!("{}:{}", d.major, d.minor),
                    });
                    disk = Some(d);
                }
                Err(why) => series.not_available(source::DISK, why),
            },
        }
        Self {
            local,
            disk,
            series,
            started,
            last_at: None,
            last_process: None,
            last_metrics: None,
            last_disk: None,
            process: Outcome::default(),
            io: Outcome::default(),
            dir: Outcome::default(),
            disk_read: Outcome::default(),
        }
    }

    /// What reads the member's process, data dir and disk; `None` for a member etcdlat
    /// did not start.
    pub(super) fn host_reader(&self) -> Option<HostReader> {
        let local = self.local.clone()?;
        Some(HostReader { local, disk: self.disk.clone() })
    }

    /// Adds what was read at `at`: from the machine (`host`) and from `/metrics` (`scraped`,
    /// `None` when the scrape failed), a sample of the measurement when `measured`. The
    /// first call only sets where counting starts.
    ///
    /// A source that had counted from a reading before and failed this time (a scrape that
    /// timed out, a `/proc` read that failed) will count from that reading next time: the
    /// sample is held back and the next one added to it ([`SeriesBuilder::hold`]), so that
    /// what was counted is over the time since the last good reading, never one sample's
    /// span. A member etcdlat started whose process is not running and that does not answer
    /// is down: its sample says so, with no CPU and no memory.
    pub(super) fn add(
        &mut self,
        at: Instant,
        host: Option<HostReading>,
        scraped: Option<&Snapshot>,
        measured: bool,
    ) {
        let previous = self.last_at.replace(at);
        let span_s = previous.map_or(0.0, |p| at.saturating_duration_since(p).as_secs_f64());
        let mut s = ResourceSample {
            t_s: at.saturating_duration_since(self.started).as_secs_f64(),
            span_s,
            ..ResourceSample::default()
        };
        let mut down = false;
        let mut missed = false;
        if let Some(host) = host {
            down = host.pid.is_none() && scraped.is_none();
            missed = self.add_host(&mut s, at, host);
        }
        match scraped {
            Some(now) => self.add_metrics(&mut s, at, now, missed),
            // Back up, it counts afresh: its counters restarted.
            None if down => self.last_metrics = None,
            None => missed |= self.last_metrics.is_some(),
        }
        if down {
            s.down_s = Some(span_s);
            s.cpu_percent = Some(0.0);
            s.cpu_max_percent = Some(0.0);
            s.rss_bytes = Some(0);
        }
        if previous.is_some() && span_s > 0.0 {
            if missed {
                self.series.hold(s);
            } else {
                self.series.push(s, measured);
            }
        }
    }

    /// Adds the machine's figures to `s`, read at `at`; whether a source that had counted
    /// from a reading before failed this time (its counts will be in the next sample).
    fn add_host(&mut self, s: &mut ResourceSample, at: Instant, host: HostReading) -> bool {
        let HostReading { pid, process, dir, disk } = host;
        let mut missed = false;
        match (pid, self.process.note(process)) {
            (Some(pid), Some(now)) => {
                s.rss_bytes = Some(now.rss_bytes);
                let io = self.io.note(now.io.clone());
                if let Some((before_pid, then, before)) = &self.last_process
                    && *before_pid == pid
                {
                    // CPU over the time since the last good reading, which may be longer
                    // than this sample's span.
                    let since_s = at.saturating_duration_since(*then).as_secs_f64();
                    process_delta(
                        s,
                        now.cpu_s - before.cpu_s,
                        since_s,
                        now.ctxt_switches,
                        before.ctxt_switches,
                    );
                    if let (Some(io), Ok(was)) = (&io, &before.io) {
                        s.read_bytes = Some(io.read_bytes.saturating_sub(was.read_bytes));
                        s.write_bytes = Some(io.write_bytes.saturating_sub(was.write_bytes));
                        s.read_syscalls = Some(io.syscr.saturating_sub(was.syscr));
                        s.write_syscalls = Some(io.syscw.saturating_sub(was.syscw));
                        s.read_chars = Some(io.rchar.saturating_sub(was.rchar));
                        s.write_chars = Some(io.wchar.saturating_sub(was.wchar));
                    }
                }
                self.last_process = Some((pid, at, now));
            }
            // Not running (killed, restarting): the next process counts afresh.
            (None, _) => self.last_process = None,
            (Some(_), None) => missed |= self.last_process.is_some(),
        }
        if let Some(sizes) = self.dir.note(dir) {
            s.data_dir_bytes = Some(sizes.total);
            s.wal_bytes = Some(sizes.wal);
            s.snap_bytes = Some(sizes.snap);
        }
        match disk.map(|d| self.disk_read.note(d)) {
            Some(Some(now)) => {
                if let Some(before) = self.last_disk.replace(now) {
                    s.disk_reads_completed =
                        Some(now.reads_completed.saturating_sub(before.reads_completed));
                    s.disk_sectors_read =
                        Some(now.sectors_read.saturating_sub(before.sectors_read));
                    s.disk_writes_completed =
                        Some(now.writes_completed.saturating_sub(before.writes_completed));
                    s.disk_sectors_written =
                        Some(now.sectors_written.saturating_sub(before.sectors_written));
                }
            }
            Some(None) => missed |= self.last_disk.is_some(),
            None => {}
        }
        missed
    }

    /// Adds `/metrics`' figures to `s`, scraped at `at`; the member's own CPU figure too
    /// when `/proc` gave none, unless its reading was `missed` (the next one counts this
    /// span's CPU, which would then be counted twice).
    fn add_metrics(&mut self, s: &mut ResourceSample, at: Instant, now: &Snapshot, missed: bool) {
        let count = |x: f64| x.round().max(0.0) as u64;
        s.rss_bytes = s.rss_bytes.or(now.rss.map(count));
        s.db_size_bytes = now.db_size.map(count);
        s.leader = now.is_leader.map(|l| l > 0.0);
        if let Some((then, before)) = &self.last_metrics {
            [s.wal_fsync_p99_us, s.backend_commit_p99_us, s.apply_p99_us, s.peer_rtt_p99_us] =
                now.p99s_since(before);
            let increase = |get: fn(&Snapshot) -> Option<f64>| {
                Some(count(counter_increase(get(before)?, get(now)?)))
            };
            s.grpc_sent_bytes = increase(|m| m.grpc_sent);
            s.grpc_received_bytes = increase(|m| m.grpc_received);
            s.peer_sent_bytes = increase(|m| m.peer_sent);
            s.peer_received_bytes = increase(|m| m.peer_received);
            s.proposals_committed = increase(Snapshot::committed);
            s.leader_changes = increase(Snapshot::leader_changes);
            // Over the time since the last good scrape.
            let span = at.saturating_duration_since(*then).as_secs_f64();
            if s.cpu_percent.is_none()
                && !missed
                && span > 0.0
                && let (Some(a), Some(b)) = (before.cpu, now.cpu)
            {
                let cpu = counter_increase(a, b) / span * 100.0;
                s.cpu_percent = Some(cpu);
                s.cpu_max_percent = Some(cpu);
            }
        }
        self.last_metrics = Some((at, now.clone()));
    }

    /// The series, on the measurement's clock (`shift_s`, [`SeriesBuilder::finish`]), with
    /// the sources that never gave a figure named, with why.
    pub(super) fn finish(mut self, shift_s: f64) -> ResourceSeries {
        if self.local.is_some() {
            let io = self.io.never().map(|why| format!("I/O counters: {why}"));
            let process = self.process.never().map(str::to_owned).or(io);
            for (source, why) in [
                (source::PROCESS, process),
                (source::DATA_DIR, self.dir.never().map(str::to_owned)),
                (source::DISK, self.disk_read.never().map(str::to_owned)),
            ] {
                if let Some(why) = why {
                    self.series.not_available(source, why);
                }
            }
        }
        self.series.finish(shift_s)
    }
}

/// The client's own resource samples so far: CPU and context switches (`getrusage`, every
/// thread), resident memory, and the load connections' bytes.
pub(super) struct ClientResources {
    traffic: Arc<Ledger>,
    /// Threads whose CPU and context switches are not the client's (the network
    /// emulator's).
    apart: Arc<[i32]>,
    series: SeriesBuilder,
    started: Instant,
    last: Option<(Instant, Option<host::Rusage>, (u64, u64))>,
}

impl ClientResources {
    /// The client's samples every `period` from `started`, with the load's bytes from
    /// `traffic`, leaving threads `apart` out.
    pub(super) fn new(
        traffic: Arc<Ledger>,
        apart: Vec<i32>,
        period: Duration,
        started: Instant,
    ) -> Self {
        let mut series = SeriesBuilder::new(period);
        if host::own_rss_bytes().is_none() {
            series.not_available(source::PROCESS, "resident memory needs Linux's /proc");
        }
        Self { traffic, apart: apart.into(), series, started, last: None }
    }

    /// What reads the process's counters.
    pub(super) fn reader(&self) -> ClientReader {
        ClientReader { traffic: Arc::clone(&self.traffic), apart: Arc::clone(&self.apart) }
    }

    /// Adds a sample of what was read at `at`, of the measurement when `measured`; the
    /// first call only sets where counting starts.
    pub(super) fn add(&mut self, at: Instant, read: ClientReading, measured: bool) {
        let ClientReading { usage, bytes, rss } = read;
        let Some((then, before, bytes_before)) = self.last.replace((at, usage, bytes)) else {
            return;
        };
        let span_s = at.saturating_duration_since(then).as_secs_f64();
        if span_s <= 0.0 {
            return;
        }
        let mut s = ResourceSample {
            t_s: at.saturating_duration_since(self.started).as_secs_f64(),
            span_s,
            rss_bytes: rss,
            sent_bytes: Some(bytes.0.saturating_sub(bytes_before.0)),
            received_bytes: Some(bytes.1.saturating_sub(bytes_before.1)),
            ..ResourceSample::default()
        };
        if let (Some(now), Some(before)) = (usage, before) {
            let cpu_s = (now.user_s + now.system_s) - (before.user_s + before.system_s);
            process_delta(&mut s, cpu_s, span_s, now.ctxt_switches, before.ctxt_switches);
        }
        self.series.push(s, measured);
    }

    /// The series, on the measurement's clock.
    pub(super) fn finish(self, shift_s: f64) -> ResourceSeries {
        self.series.finish(shift_s)
    }
}

/// Reads the client's own counters: `getrusage` less threads `apart`, `/proc`'s resident
/// memory, and the load's bytes. Apart from [`ClientResources`], so that the reads can be
/// sent off the runtime's threads ([`super::off_runtime`]).
pub(super) struct ClientReader {
    traffic: Arc<Ledger>,
    apart: Arc<[i32]>,
}

/// What [`ClientReader::read`] read.
pub(super) struct ClientReading {
    usage: Option<host::Rusage>,
    /// The load's bytes, sent and received.
    bytes: (u64, u64),
    rss: Option<u64>,
}

impl ClientReader {
    /// Reads the counters now.
    pub(super) fn read(&self) -> ClientReading {
        let usage = host::rusage_without(&self.apart);
        let bytes = self.traffic.totals();
        let rss = host::own_rss_bytes();
        ClientReading { usage, bytes, rss }
    }
}

/// Sets `s`'s CPU (from `cpu_s` seconds used over `since_s`, the time since the reading
/// they count from) and context switches (from the counts `now` and `before`, voluntary
/// and involuntary; never below 0).
fn process_delta(
    s: &mut ResourceSample,
    cpu_s: f64,
    since_s: f64,
    now: (u64, u64),
    before: (u64, u64),
) {
    if since_s > 0.0 {
        let cpu = cpu_s.max(0.0) / since_s * 100.0;
        s.cpu_percent = Some(cpu);
        s.cpu_max_percent = Some(cpu);
    }
    s.voluntary_ctxt_switches = Some(now.0.saturating_sub(before.0));
    s.nonvoluntary_ctxt_switches = Some(now.1.saturating_sub(before.1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcdlat_core::metrics::source;

    /// `/metrics` with `cpu` seconds used and `grpc` bytes sent.
    fn scraped(cpu: f64, grpc: f64) -> Option<Snapshot> {
        Some(Snapshot::used(cpu, grpc))
    }

    /// `/proc` of process `pid` having used `cpu` seconds; `None`: its read failed.
    fn host(pid: Option<u32>, cpu: Option<f64>) -> Option<HostReading> {
        let process = match (pid, cpu) {
            (Some(_), Some(cpu_s)) => Ok(ProcessCounters {
                cpu_s,
                rss_bytes: 1000,
                ctxt_switches: (0, 0),
                io: Err("not read here".to_owned()),
            }),
            _ => Err("reading /proc/42/stat: gone".to_owned()),
        };
        Some(HostReading { pid, process, dir: Err("no dir".to_owned()), disk: None })
    }

    fn member() -> (MemberResources, Instant) {
        let started = Instant::now();
        (MemberResources::new(None, Duration::from_secs(1), started), started)
    }

    fn at(started: Instant, s: u64) -> Instant {
        started + Duration::from_secs(s)
    }

    #[test]
    fn a_failed_scrape_leaves_rates_over_the_time_since_the_last_good_one() {
        let (mut m, t0) = member();
        m.add(at(t0, 0), None, scraped(0.0, 0.0).as_ref(), true);
        m.add(at(t0, 1), None, scraped(0.5, 1000.0).as_ref(), true);
        // Timed out after 2 s; the next tick comes late.
        m.add(at(t0, 2), None, None, true);
        m.add(at(t0, 5), None, scraped(2.5, 5000.0).as_ref(), true);
        let s = m.finish(0.0);
        let spans: Vec<f64> = s.samples.iter().map(|x| x.span_s).collect();
        assert_eq!(spans, [1.0, 4.0], "the sample after the failure covers it");
        for x in &s.samples {
            let rate = x.grpc_sent_bytes.unwrap() as f64 / x.span_s;
            assert_eq!(rate, 1000.0, "{x:?}");
            assert_eq!(x.cpu_percent, Some(50.0), "{x:?}");
        }
        assert_eq!(s.total(|x| x.grpc_sent_bytes), Some(5000), "totals stay exact");
    }

    #[test]
    fn cpu_is_counted_once_when_metrics_stand_in_for_a_failed_proc_read() {
        let (mut m, t0) = member();
        let pid = Some(42);
        m.add(at(t0, 0), host(pid, Some(0.0)), scraped(0.0, 0.0).as_ref(), true);
        m.add(at(t0, 1), host(pid, Some(0.5)), scraped(0.5, 0.0).as_ref(), true);
        m.add(at(t0, 2), host(pid, None), scraped(1.0, 0.0).as_ref(), true);
        m.add(at(t0, 3), host(pid, Some(1.5)), scraped(1.5, 0.0).as_ref(), true);
        let s = m.finish(0.0);
        // Half a core throughout: 1.5 s of CPU in 3 s, however the samples fall.
        let cpu_s: f64 = s.samples.iter().map(|x| x.cpu_percent.unwrap() * x.span_s / 100.0).sum();
        assert_eq!(cpu_s, 1.5, "{s:?}");
        assert_eq!(s.cpu_max_percent(), Some(50.0), "{s:?}");
        assert_eq!(s.cpu_avg_percent(), Some(50.0), "{s:?}");
    }

    #[test]
    fn a_killed_member_is_down_with_no_cpu_and_counts_afresh() {
        let (mut m, t0) = member();
        m.add(at(t0, 0), host(Some(42), Some(0.0)), scraped(0.0, 0.0).as_ref(), true);
        m.add(at(t0, 1), host(Some(42), Some(1.0)), scraped(1.0, 100.0).as_ref(), true);
        m.add(at(t0, 2), host(None, None), None, true);
        m.add(at(t0, 3), host(None, None), None, true);
        // Restarted: a new process, counters from 0.
        m.add(at(t0, 4), host(Some(43), Some(0.2)), scraped(0.2, 10.0).as_ref(), true);
        m.add(at(t0, 5), host(Some(43), Some(0.7)), scraped(0.7, 110.0).as_ref(), true);
        let s = m.finish(0.0);
        let down: Vec<Option<f64>> = s.samples.iter().map(|x| x.down_s).collect();
        assert_eq!(down, [None, Some(1.0), Some(1.0), None, None], "{s:?}");
        assert_eq!(s.samples[1].cpu_percent, Some(0.0));
        assert_eq!(s.samples[1].rss_bytes, Some(0));
        // The first second of the new process is its baseline; then half a core.
        assert_eq!(s.samples[4].cpu_percent, Some(50.0), "{s:?}");
        assert_eq!(s.samples[4].grpc_sent_bytes, Some(100), "{s:?}");
        assert!(s.why_not(source::PROCESS).is_some());
    }
}
