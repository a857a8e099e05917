//! The text report, laid out as etcd's benchmark tool prints it so that existing readers
//! (people and scripts) can compare the two, followed by etcdlat's accounting section.
//!
//! For each operation kind (headed `== put ==` when the run has more than one), with a tab
//! after each label (shown here as spaces). Each error code is followed, as in etcd's tool,
//! by a message the server gave for it (the first one seen), when there was one:
//!
//! ```text
//!
//! Summary:
//!   Total:    3.0000 secs.
//!   Slowest:    0.0064 secs.
//!   ...
//!   Requests/sec:    666.6667
//!
//! Response time histogram:
//!   0.0004 [160]    |∎∎∎∎∎
//!   0.0010 [1100]    |∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎∎
//!   ...
//!
//! Latency distribution:
//!   10% in 0.0004 secs.
//!   ...
//!
//! Error distribution:
//!   [3]    InvalidArgument: etcdserver: request is too large
//!   [2]    Unavailable
//!
//! Accounting:
//!   Requests:    2005 (ok 2000, errors 5)
//!   p99.99:    0.0064 secs.
//!   Service time p50/p99:    0.0006 / 0.0027 secs.
//! ```
//!
//! A run whose load went to members chosen by role or name (`--target leader`) names them,
//! before the members that served it; a run made with `--scale` says so on its first line:
//!
//! ```text
//!
//! Target:    leader (member m1 at http://127.0.0.1:2379)
//! ```
//!
//! A run in client steps (`load.client-steps`) has a line per step, in columns:
//!
//! ```text
//!
//! Client steps (latency in secs.):
//!   Clients  Requests  Errors  Requests/sec     p50     p90     p99   p99.9
//!         1       200       0     1000.0000  0.0014  0.0018  0.0019  0.0019
//!         4       800       0     2500.0000  0.0020  0.0024  0.0025  0.0025
//!        16      1601       1     6666.6667  0.0029  0.0033  0.0034  0.0034
//! ```
//!
//! A report merged from shards (`etcdlat merge`) lists each shard's own figures:
//!
//! ```text
//!
//! Shards:
//!   a.json:    started 2026-11-21T21:00:00.123Z, 3.0000 secs., 10 clients, 1 conns, 1500 ok, 3 errors
//! ```
//!
//! A watch run's accounting has two lines that appear only when not zero: the most events
//! that puts of unknown outcome (timed out, connection lost) could have made, and the events
//! that no put of the run accounts for (`Unexplained:`, after it). Here 169 puts timed out,
//! and some were applied all the same:
//!
//! ```text
//!
//! Watch accounting:
//!   ...
//!   Events expected:    3100000
//!   Events received:    3900000
//!   Events from puts with unknown outcome:    up to 16900000 (169 puts)
//!   Missing:    0
//!   ...
//! ```
//!
//! When the run scraped the members' `/metrics` and measured itself, one line per member and
//! one for etcdlat follow (sizes in decimal megabytes, durations in milliseconds, `-` where a
//! member does not export the figure):
//!
//! ```text
//!
//! Server:
//!   m0:    RSS avg/max 31.5 MB / 33.6 MB, CPU 0.25 s, db 21.0 MB, WAL fsync p99 1.900 ms, backend commit p99 7.500 ms, proposals committed 11
//!
//! Client:    CPU user/system 1.25 / 0.50 s (1164.2 us per request), max RSS 50.3 MB
//! ```
//!
//! Then, when the run sampled resources, a line per member and for the client (CPU in
//! percent of one core, its average and busiest sampling period; largest resident memory;
//! context switches voluntary / involuntary; storage I/O and data dir for members etcdlat
//! started, socket bytes for the client; what could not be sampled, and why), each block
//! device once (its figures are machine-wide), and dbtester's figures that etcd's layout
//! does not show, as dbtester writes them:
//!
//! ```text
//!
//! Server and client resources:
//!   m0:    CPU avg/max 30.0 / 40.0 %, RSS max 33.6 MB, context switches 2600 / 30, storage read/write 0 B / 3.1 MB, data dir 157.3 MB (WAL 134.2 MB, snap 23.1 MB)
//!   m2:    CPU avg/max 70.0 / 80.0 %, RSS max 35.7 MB, not available: process, data dir, disk (etcdlat did not start this member: ...)
//!   client:    CPU avg/max 60.0 / 65.0 %, RSS max 50.3 MB, context switches 700 / 11, sent/received 450.0 kB / 1.0 MB
//!   disk vda (254:0):    reads 2 (16 sectors), writes 800 (16000 sectors), machine-wide: every process's I/O on it
//!   MAX-THROUGHPUT:    769 req/sec
//!   ...
//!   SERVER-AVG-DISK-SPACE-USAGE:    n/a (m2: etcdlat did not start this member: ...)
//! ```

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use crate::metrics::{self, MemberMetrics, ResourceSample, ResourceSeries, metric};
use crate::render::{decimal_bytes, go};
use crate::report::{Distribution, OpReport, Report, Row, StepReport, TargetInfo, Unit};

/// Choices of the text report, as etcd's tool's flags of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextOptions {
    /// Full floating-point precision (Go's `%g`) instead of four decimals (etcd's `--precise`).
    pub precise: bool,
    /// Print the per-interval samples as CSV (etcd's `--sample`).
    pub sample: bool,
}

/// Rows of the response time histogram: ten equal-width buckets, then one at the slowest.
const HISTOGRAM_BUCKETS: usize = 10;

/// Widest bar of the histogram, in characters.
const BAR_WIDTH: u64 = 40;

/// The percentiles of etcd's latency distribution, as its tool prints them.
const PERCENTILES: [(f64, &str); 8] = [
    (0.10, "10"),
    (0.25, "25"),
    (0.50, "50"),
    (0.75, "75"),
    (0.90, "90"),
    (0.95, "95"),
    (0.99, "99"),
    (0.999, "99.9"),
];

/// Renders `report` as text: etcd's benchmark layout per operation kind, then etcdlat's
/// accounting.
///
/// As in etcd's tool, an operation with no successful request has no summary, histogram
/// or latency distribution; its errors and request count are still printed.
#[must_use]
pub fn text(report: &Report, opts: &TextOptions) -> String {
    let mut out = String::new();
    Writer { out: &mut out, precise: opts.precise }.report(report, opts);
    out
}

struct Writer<'a> {
    out: &'a mut String,
    precise: bool,
}

impl Writer<'_> {
    fn report(mut self, report: &Report, opts: &TextOptions) {
        if report.interrupted {
            self.out.push_str("Run interrupted: figures cover what ran before the stop.\n");
        }
        if let Some(f) = report.scale {
            let _ = writeln!(
                self.out,
                "Scaled run (--scale {f}): the scenario's totals and durations multiplied by {f}."
            );
        }
        let headed = report.ops.len() > 1;
        for (i, (kind, op)) in report.ops.iter().enumerate() {
            if headed {
                if i > 0 {
                    self.out.push('\n');
                }
                let _ = writeln!(self.out, "== {kind} ==");
            }
            if op.ok > 0 {
                self.summary(op);
                self.histogram(&op.latency);
                self.latencies(&op.latency);
                if opts.sample {
                    self.samples(report, op);
                }
            }
            if op.errors_total > 0 {
                self.out.push_str("\nError distribution:\n");
                for (code, n) in &op.errors {
                    let _ = match op.error_messages.get(code) {
                        Some(message) => writeln!(self.out, "  [{n}]\t{code}: {message}"),
                        None => writeln!(self.out, "  [{n}]\t{code}"),
                    };
                }
            }
            self.accounting(op);
        }
        self.kubernetes_slos(report);
        if let Some(all) = &report.all {
            let _ = writeln!(
                self.out,
                "\n== all ==\n  Requests:\t{} (ok {}, errors {})\n  Requests/sec:\t{:.4}\n  Average:\t{:.4} secs.\n  p99:\t{:.4} secs.",
                all.ok + all.errors_total,
                all.ok,
                all.errors_total,
                all.throughput,
                all.latency.mean_us() / 1e6,
                all.latency.quantile_us(0.99) as f64 / 1e6,
            );
        }
        if !report.steps.is_empty() {
            self.steps(&report.steps);
        }
        if let Some(w) = &report.watch {
            let _ = writeln!(
                self.out,
                "\nWatch accounting:\n  Streams:\t{}\n  Watchers:\t{}\n  Puts:\t{}\n  Events expected:\t{}\n  Events received:\t{}",
                w.streams, w.watchers, w.puts, w.expected, w.received,
            );
            // Only when there is something to say: most runs have neither.
            if w.uncertain_puts > 0 {
                let _ = writeln!(
                    self.out,
                    "  Events from puts with unknown outcome:\tup to {} ({} puts)",
                    w.uncertain_events, w.uncertain_puts
                );
            }
            if w.unexplained > 0 {
                let _ = writeln!(self.out, "  Unexplained:\t{}", w.unexplained);
            }
            let _ = writeln!(
                self.out,
                "  Missing:\t{}\n  Duplicate:\t{}\n  Out of order:\t{}\n  Before put acknowledged:\t{}",
                w.missing, w.duplicate, w.out_of_order, w.before_ack,
            );
        }
        if let Some(p) = &report.pacing {
            let _ = writeln!(
                self.out,
                "\nSchedule:\t{} loop{}, {:.1}/s asked, {:.1}/s achieved",
                p.schedule,
                if p.schedule == "open" {
                    format!(", {} arrivals", p.arrivals)
                } else {
                    String::new()
                },
                p.target_rate,
                p.achieved_rate,
            );
            let _ = write!(self.out, "  Late starts:\t{} of {} (p99 ", p.late, p.paced);
            self.secs_us(p.lateness.quantile_us(0.99) as f64);
            self.out.push_str(" late)\n  Timer lateness p99:\t");
            self.secs_us(p.timer_lateness.quantile_us(0.99) as f64);
            self.out.push_str(".\n");
            if let Some(v) = &p.verdict {
                let _ = writeln!(self.out, "  Note:\t{v}");
            }
        }
        if let Some(target) = report.target.role_summary() {
            let _ = writeln!(self.out, "\nTarget:\t{target}");
        }
        if !report.members.is_empty() {
            self.out.push_str("\nServed by:\n");
            for m in &report.members {
                let _ = write!(self.out, "  {}:\t{} ok, {:.1}/s, p50 ", m.name, m.ok, m.throughput);
                self.secs_us(m.latency.quantile_us(0.5) as f64);
                self.out.push_str(", p99 ");
                self.secs_us(m.latency.quantile_us(0.99) as f64);
                self.out.push('\n');
            }
        }
        if let Some(network) = &report.target.network {
            let _ = writeln!(self.out, "\nNetwork:\t{}", network.summary);
            for link in network.links.iter().filter(|l| l.bytes > 0) {
                let _ = write!(
                    self.out,
                    "  {} -> {}:\t{}",
                    link.from,
                    link.to,
                    decimal_bytes(link.bytes)
                );
                if let (Some(p50), Some(p99)) = (link.late_p50_us, link.late_p99_us) {
                    let _ = write!(self.out, ", delivered late by p50 {p50} µs, p99 {p99} µs");
                }
                self.out.push('\n');
            }
            if let Some(e) = &network.emulator {
                let _ = writeln!(
                    self.out,
                    "  emulator:\tCPU {:.2} s user, {:.2} s system (not in the client's figures)",
                    e.user_cpu_s, e.system_cpu_s
                );
            }
        }
        if !report.leader_changes.is_empty() {
            self.out.push_str("\nLeader changes:\n");
            for c in &report.leader_changes {
                let _ = writeln!(self.out, "  at {:.3} s:\t{} -> {}", c.t_s, c.from, c.to);
            }
        }
        if !report.faults.is_empty() {
            self.faults(&report.faults);
        }
        if !report.shards.is_empty() {
            self.out.push_str("\nShards:\n");
            for s in &report.shards {
                let _ = writeln!(
                    self.out,
                    "  {}:\tstarted {}, {:.4} secs., {} clients, {} conns, {} ok, {} errors",
                    s.name, s.started_at, s.duration_s, s.clients, s.conns, s.ok, s.errors_total
                );
            }
        }
        if !report.alarms.is_empty() {
            // NOSPACE: the database reached its quota and the cluster refuses writes.
            self.out.push_str("\nAlarms:\n");
            for a in &report.alarms {
                let _ = writeln!(self.out, "  {}:\t{}", a.member, a.alarm);
            }
        }
        if let Some(h) = &report.hashkv {
            let _ = writeln!(
                self.out,
                "\nHashKV Summary:\n  Revision:\t{}\n  Compact revision:\t{}",
                h.revision, h.compact_revision
            );
            for (member, hash) in &h.members {
                let _ = writeln!(self.out, "  {member}:\t{hash}");
            }
            let _ =
                writeln!(self.out, "  Consistent:\t{}", if h.consistent { "yes" } else { "NO" });
        }
        if let Some(a) = &report.audit {
            self.audit(a);
        }
        self.server(&report.server, &report.target);
        if let Some(c) = &report.client {
            let requests = report.requests().max(1) as f64;
            let per_request_us = (c.user_cpu_s + c.system_cpu_s) / requests * 1e6;
            let _ = write!(
                self.out,
                "\nClient:\tCPU user/system {:.2} / {:.2} s ({per_request_us:.1} us per request)",
                c.user_cpu_s, c.system_cpu_s,
            );
            if let Some(w) = c.worker_cpu_s {
                let _ = write!(
                    self.out,
                    ", worker threads {w:.2} s ({:.1} us per request)",
                    w / requests * 1e6
                );
            }
            let _ = write!(self.out, ", max RSS {}", megabytes(Some(c.max_rss_bytes)));
            if let Some(b) = &c.busy {
                let _ = write!(self.out, ", busy: process {:.0}%", b.process * 100.0);
                if let (Some(max), Some(peak)) = (b.worker_max, b.worker_peak) {
                    let _ = write!(
                        self.out,
                        ", busiest worker {:.0}% ({:.0}% in its busiest second)",
                        max * 100.0,
                        peak * 100.0
                    );
                }
            }
            self.out.push('\n');
        }
        if let [first, .., last] = report.target.source_addresses.as_slice() {
            let _ = writeln!(
                self.out,
                "Connections came from {} loopback addresses ({first} to {last}): one has too few ephemeral ports for them.",
                report.target.source_addresses.len()
            );
        }
        self.resources(report);
        if let Some(warning) = report.client_limit() {
            let _ = writeln!(self.out, "\nWarning: {warning}.");
        }
        if let Some(warning) = report.network_limit() {
            let _ = writeln!(self.out, "\nWarning: {warning}.");
        }
    }

    /// A line per client step, in columns: its clients, requests, errors, successful
    /// requests per second and latency percentiles (`-` for a step without a success).
    fn steps(&mut self, steps: &[StepReport]) {
        const HEADER: [&str; 8] =
            ["Clients", "Requests", "Errors", "Requests/sec", "p50", "p90", "p99", "p99.9"];
        let mut rows = vec![HEADER.map(str::to_owned)];
        for s in steps {
            let latency = |q: f64| {
                if s.ok == 0 {
                    MISSING.to_owned()
                } else {
                    self.formatted(s.latency.quantile_us(q) as f64 / 1e6)
                }
            };
            rows.push([
                s.clients.to_string(),
                s.requests().to_string(),
                s.errors_total.to_string(),
                self.formatted(s.throughput),
                latency(0.5),
                latency(0.9),
                latency(0.99),
                latency(0.999),
            ]);
        }
        let mut widths = [0; HEADER.len()];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        self.out.push_str("\nClient steps (latency in secs.):\n");
        for row in rows {
            for (w, cell) in widths.iter().zip(row) {
                let _ = write!(self.out, "  {cell:>w$}");
            }
            self.out.push('\n');
        }
    }

    /// The audit's counts, serializable staleness (all members, then each), and the first
    /// offending requests.
    fn audit(&mut self, a: &crate::audit::AuditReport) {
        let _ = writeln!(
            self.out,
            "\nAudit:\n  Requests audited:\t{} of {} (limit {})\n  Writes:\t{} acknowledged (revisions {} to {}), {} refused, {} of unknown outcome",
            a.audited,
            a.issued,
            a.limit,
            a.writes,
            a.first_revision,
            a.last_revision,
            a.failed_writes,
            a.unknown_outcome,
        );
        match &a.read_back_error {
            Some(e) => {
                let _ = writeln!(self.out, "  Read back:\tfailed: {e}");
            }
            None => {
                let _ = writeln!(
                    self.out,
                    "  Read back:\t{} keys, {} puts at their revision, {} compacted",
                    a.keys_read_back, a.puts_read_at_revision, a.puts_compacted
                );
            }
        }
        let _ = writeln!(
            self.out,
            "  Lost writes:\t{}\n  Order violations:\t{}\n  Duplicate revisions:\t{}\n  Stale linearizable reads:\t{} of {}",
            a.lost, a.order_violations, a.duplicate_revisions, a.stale_reads, a.linearizable_reads,
        );
        let staleness = |s: &crate::audit::Staleness| {
            format!(
                "{} reads, {} behind, revisions p50/p99/max {} / {} / {}, ms p50/p99/max {:.3} / {:.3} / {:.3}",
                s.reads,
                s.behind,
                s.p50_revisions,
                s.p99_revisions,
                s.max_revisions,
                s.p50_ms,
                s.p99_ms,
                s.max_ms
            )
        };
        if let Some(s) = &a.serializable_staleness {
            let _ = writeln!(self.out, "  Serializable staleness:\t{}", staleness(s));
            for m in &a.members {
                let _ = writeln!(self.out, "    {}:\t{}", m.name, staleness(&m.staleness));
            }
        }
        for v in &a.violations {
            let _ = writeln!(self.out, "  Violation:\t{}", v.detail);
        }
    }

    /// One line per member: what its `/metrics` said over the run; a figure its etcd does
    /// not export is "unavailable on etcd X".
    fn server(&mut self, members: &[MemberMetrics], target: &TargetInfo) {
        if members.is_empty() {
            return;
        }
        self.out.push_str("\nServer:\n");
        for m in members {
            let _ = write!(self.out, "  {}:\t", m.name);
            if m.samples == 0 {
                let why = m.last_error.as_deref().unwrap_or("no scrape");
                let _ = writeln!(self.out, "not scraped ({why})");
                continue;
            }
            let shown = |metric: &str, value: Option<String>| {
                value.unwrap_or_else(|| {
                    m.absent(metric, &target.etcd_version, target.members, MISSING)
                })
            };
            let mb = |b: u64| megabytes(Some(b));
            let ms = |us: u64| millis(Some(us));
            let avg = shown(metric::RSS, m.rss_avg_bytes.map(mb));
            let max = shown(metric::RSS, m.rss_max_bytes.map(mb));
            let cpu = shown(metric::CPU, m.cpu_s.map(|s| format!("{s:.2} s")));
            let db = shown(metric::DB_SIZE, m.db_size_bytes.map(mb));
            let fsync = shown(metric::WAL_FSYNC, m.wal_fsync_p99_us.map(ms));
            let commit = shown(metric::BACKEND_COMMIT, m.backend_commit_p99_us.map(ms));
            let proposals =
                shown(metric::PROPOSALS_COMMITTED, m.proposals_committed.map(|n| n.to_string()));
            let _ = write!(
                self.out,
                "RSS avg/max {avg} / {max}, CPU {cpu}, db {db}, WAL fsync p99 {fsync}, \
                 backend commit p99 {commit}, proposals committed {proposals}"
            );
            if m.failed_samples > 0 {
                let why = m.last_error.as_deref().unwrap_or("unknown");
                let _ = write!(self.out, " ({} scrapes failed: {why})", m.failed_samples);
            }
            self.out.push('\n');
        }
    }

    /// Each member's and the client's resources over the run, one line each, the disks
    /// under the members (machine-wide), then dbtester's figures that etcd's layout above
    /// does not show (throughput per second, network, peaks, disk), as dbtester writes them.
    fn resources(&mut self, report: &Report) {
        let sampled = report.server.iter().any(|m| !m.resources.is_empty())
            || report.client.as_ref().is_some_and(|c| !c.resources.is_empty());
        if !sampled {
            return;
        }
        self.out.push_str("\nServer and client resources:\n");
        for m in &report.server {
            let _ = writeln!(self.out, "  {}:\t{}", m.name, resource_line(&m.resources, false));
        }
        if let Some(c) = &report.client {
            let _ = writeln!(self.out, "  client:\t{}", resource_line(&c.resources, true));
        }
        for (disk, r) in metrics::disks(&report.server) {
            let n = |f: fn(&ResourceSample) -> Option<u64>| r.total(f).unwrap_or(0);
            let _ = writeln!(
                self.out,
                "  disk {} ({}):\treads {} ({} sectors), writes {} ({} sectors), machine-wide: every process's I/O on it",
                disk.name,
                disk.device,
                n(|s| s.disk_reads_completed),
                n(|s| s.disk_sectors_read),
                n(|s| s.disk_writes_completed),
                n(|s| s.disk_sectors_written),
            );
        }
        let study = report.study();
        for row in Row::ALL.into_iter().filter(|&r| shown_with_resources(r)) {
            let cell = match study.why_unknown(row) {
                Some(why) => format!("{} ({why})", study.cell(row)),
                None => study.cell(row),
            };
            let _ = writeln!(self.out, "  {}:\t{cell}", row.label());
        }
    }

    /// A number as etcd's `%4.4f`, or `%g` with `--precise`.
    fn number(&mut self, x: f64) {
        let text = self.formatted(x);
        self.out.push_str(&text);
    }

    /// [`Writer::number`]'s text.
    fn formatted(&self, x: f64) -> String {
        let mut text = String::new();
        if self.precise || !x.is_finite() {
            go::write_g(&mut text, x);
        } else {
            let _ = write!(text, "{x:4.4}");
        }
        text
    }

    /// `<number> secs`, microseconds given.
    /// One block per fault step: what it did, the unavailability window, the first write
    /// after it, and the load before, during and after it.
    fn faults(&mut self, faults: &[crate::fault::FaultReport]) {
        self.out.push_str("\nFaults:\n");
        for f in faults {
            let _ = writeln!(
                self.out,
                "  {}. {} at {:.3} s (started {:.3} s):\t{}",
                f.step + 1,
                f.action,
                f.at_s,
                f.started_s,
                f.what
            );
            if let Some(e) = &f.error {
                let _ = writeln!(self.out, "     not done:\t{e}");
            }
            let at = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s"));
            let _ = writeln!(
                self.out,
                "     unavailable:\t{:.3} s (last success {}, first after {}), first write after {}",
                f.unavailable_s,
                at(f.last_success_before_s),
                at(f.first_success_after_s),
                f.first_write_after_s.map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s")),
            );
            for (label, w) in [("before", &f.before), ("during", &f.during), ("after", &f.after)] {
                let _ = write!(
                    self.out,
                    "     {label}:\t{:.1}-{:.1} s, {} ok, {} errors, {:.1}/s, p99 ",
                    w.from_s, w.to_s, w.ok, w.errors, w.throughput
                );
                self.secs_us(w.p99_us as f64);
                self.out.push('\n');
            }
        }
    }

    fn secs_us(&mut self, us: f64) {
        self.number(us / 1e6);
        self.out.push_str(" secs");
    }

    fn line_secs(&mut self, label: &str, us: f64) {
        let _ = write!(self.out, "  {label}:\t");
        self.secs_us(us);
        self.out.push_str(".\n");
    }

    fn summary(&mut self, op: &OpReport) {
        let lat = &op.latency;
        self.out.push_str("\nSummary:\n");
        self.line_secs("Total", op.duration_s * 1e6);
        self.line_secs("Slowest", lat.max_us() as f64);
        self.line_secs("Fastest", lat.min_us() as f64);
        self.line_secs("Average", lat.mean_us());
        self.line_secs("Stddev", lat.stddev_us());
        self.out.push_str("  Requests/sec:\t");
        self.number(op.throughput);
        self.out.push('\n');
    }

    /// etcd's response time histogram, counted from the HDR histogram rather than from
    /// samples: each recorded HDR bucket is placed by its lowest equivalent value, so the
    /// fastest value (which the histogram reports as its bucket's lowest equivalent) lands
    /// in the first row, as in etcd.
    fn histogram(&mut self, lat: &Distribution) {
        let (fastest, slowest) = (lat.min_us() as f64 / 1e6, lat.max_us() as f64 / 1e6);
        let width = (slowest - fastest) / HISTOGRAM_BUCKETS as f64;
        let mut bounds = [slowest; HISTOGRAM_BUCKETS + 1];
        for (i, b) in bounds.iter_mut().take(HISTOGRAM_BUCKETS).enumerate() {
            *b = fastest + width * i as f64;
        }
        let mut counts = [0u64; HISTOGRAM_BUCKETS + 1];
        let h = lat.histogram();
        for v in h.iter_recorded() {
            let secs = h.lowest_equivalent(v.value_iterated_to()) as f64 / 1e6;
            let row = bounds.iter().position(|&b| secs <= b).unwrap_or(HISTOGRAM_BUCKETS);
            counts[row] += v.count_at_value();
        }
        let most = counts.iter().copied().max().unwrap_or(0);
        self.out.push_str("\nResponse time histogram:\n");
        for (bound, count) in bounds.into_iter().zip(counts) {
            let bar = (count * BAR_WIDTH).checked_div(most).unwrap_or(0);
            self.out.push_str("  ");
            self.number(bound);
            let _ = write!(self.out, " [{count}]\t|");
            (0..bar).for_each(|_| self.out.push('∎'));
            self.out.push('\n');
        }
    }

    fn latencies(&mut self, lat: &Distribution) {
        self.out.push_str("\nLatency distribution:\n");
        for (q, name) in PERCENTILES {
            let us = lat.quantile_us(q);
            if us > 0 {
                let _ = write!(self.out, "  {name}% in ");
                self.secs_us(us as f64);
                self.out.push_str(".\n");
            }
        }
    }

    /// etcd's `--sample` CSV. Our intervals are relative to the start of measurement, so the
    /// UNIX second is `started_at + t_s` (whole seconds); when `started_at` cannot be read it
    /// is taken as the epoch, leaving the relative second. Throughput is per second of the
    /// interval, which is the interval's count with the default one-second interval.
    fn samples(&mut self, report: &Report, op: &OpReport) {
        let start = humantime::parse_rfc3339(&report.started_at)
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .unwrap_or(Duration::ZERO);
        let interval_s = report.interval().as_secs_f64();
        self.out.push_str("\nSample in one second (unix latency throughput):\n");
        self.out
            .push_str("UNIX-SECOND,MIN-LATENCY-MS,AVG-LATENCY-MS,MAX-LATENCY-MS,AVG-THROUGHPUT\n");
        for i in &op.intervals {
            let unix = (start.as_secs_f64() + i.t_s).floor() as u64;
            let _ = write!(self.out, "{unix},");
            go::write_duration(self.out, Duration::from_micros(i.min_us));
            self.out.push(',');
            go::write_duration(self.out, Duration::from_nanos((i.mean_us * 1e3).round() as u64));
            self.out.push(',');
            go::write_duration(self.out, Duration::from_micros(i.max_us));
            let per_second =
                if interval_s > 0.0 { (i.count as f64 / interval_s).round() as u64 } else { 0 };
            let _ = writeln!(self.out, ",{per_second}");
        }
        // etcd prints the series with a trailing newline of its own.
        self.out.push('\n');
    }

    /// Each apiserver request's p99 against Kubernetes' SLO for its kind
    /// ([`crate::workload::kubernetes::slo`]), with conflicts per update: only for runs
    /// that send them.
    fn kubernetes_slos(&mut self, report: &Report) {
        let mut held = report.ops.iter().filter_map(|(kind, op)| {
            crate::workload::kubernetes::slo(*kind).map(|slo| (*kind, op, slo))
        });
        let Some(first) = held.next() else { return };
        self.out.push_str("\nKubernetes SLOs (p99; Kubernetes' own are over a day):\n");
        for (kind, op, (class, limit)) in std::iter::once(first).chain(held) {
            let _ = write!(self.out, "  {kind}:\tp99 ");
            let p99_us = op.latency.quantile_us(0.99);
            self.secs_us(p99_us as f64);
            let verdict = match op.ok {
                0 => "no successful requests",
                _ if p99_us <= limit.as_micros() as u64 => "met",
                _ => "missed",
            };
            let _ = write!(self.out, " <= {}s ({class}): {verdict}", limit.as_secs());
            if op.errors_total > 0 {
                let _ = write!(self.out, ", {} errors", op.errors_total);
            }
            if kind == crate::OpKind::K8sUpdate && op.ok > 0 {
                let _ = write!(
                    self.out,
                    "; {:.3} conflicts per update",
                    op.conflicts as f64 / op.ok as f64
                );
            }
            self.out.push('\n');
        }
    }

    fn accounting(&mut self, op: &OpReport) {
        self.out.push_str("\nAccounting:\n");
        let _ = writeln!(
            self.out,
            "  Requests:\t{} (ok {}, errors {})",
            op.ok + op.errors_total,
            op.ok,
            op.errors_total
        );
        if op.retries > 0 {
            let _ = writeln!(self.out, "  Retries:\t{}", op.retries);
        }
        if op.ok == 0 {
            // No latency was measured: zeros would read as instant answers.
            return;
        }
        self.line_secs("p99.99", op.latency.quantile_us(0.9999) as f64);
        self.out.push_str("  Service time p50/p99:\t");
        self.number(op.service_time.quantile_us(0.5) as f64 / 1e6);
        self.out.push_str(" / ");
        self.secs_us(op.service_time.quantile_us(0.99) as f64);
        self.out.push_str(".\n");
    }
}

/// Shown where a server figure was not exported.
const MISSING: &str = "-";

/// Whether the resources section shows dbtester's `row`: those etcd's layout above does not
/// (it has the time, the requests, the average throughput, latencies and errors).
fn shown_with_resources(row: Row) -> bool {
    let above = matches!(
        row,
        Row::TotalSeconds | Row::TotalRequests | Row::AvgThroughput | Row::ClientErrors
    );
    !above && row.unit() != Unit::Micros
}

/// One member's (or the client's) resources over the run, in one line: CPU average and
/// busiest period, largest resident memory, context switches, storage I/O and data dir (a
/// member), socket bytes (the client), and the sources it had none from, with why.
fn resource_line(r: &ResourceSeries, client: bool) -> String {
    let mut parts = Vec::new();
    if let (Some(avg), Some(max)) = (r.cpu_avg_percent(), r.cpu_max_percent()) {
        parts.push(format!("CPU avg/max {avg:.1} / {max:.1} %"));
    }
    if let Some(rss) = r.max(|s| s.rss_bytes) {
        parts.push(format!("RSS max {}", decimal_bytes(rss)));
    }
    if let (Some(v), Some(n)) =
        (r.total(|s| s.voluntary_ctxt_switches), r.total(|s| s.nonvoluntary_ctxt_switches))
    {
        parts.push(format!("context switches {v} / {n}"));
    }
    if client
        && let (Some(sent), Some(received)) =
            (r.total(|s| s.sent_bytes), r.total(|s| s.received_bytes))
    {
        parts.push(format!("sent/received {} / {}", decimal_bytes(sent), decimal_bytes(received)));
    }
    if let (Some(read), Some(written)) = (r.total(|s| s.read_bytes), r.total(|s| s.write_bytes)) {
        parts.push(format!(
            "storage read/write {} / {}",
            decimal_bytes(read),
            decimal_bytes(written)
        ));
    }
    if let Some(dir) = r.last(|s| s.data_dir_bytes) {
        let wal = r.last(|s| s.wal_bytes).map_or_else(|| MISSING.to_owned(), decimal_bytes);
        let snap = r.last(|s| s.snap_bytes).map_or_else(|| MISSING.to_owned(), decimal_bytes);
        parts.push(format!("data dir {} (WAL {wal}, snap {snap})", decimal_bytes(dir)));
    }
    // Sources missing for the same reason are named together.
    let mut missing: Vec<(Vec<&str>, &str)> = Vec::new();
    for n in &r.not_available {
        match missing.iter_mut().find(|(_, why)| *why == n.why) {
            Some((sources, _)) => sources.push(&n.source),
            None => missing.push((vec![&n.source], &n.why)),
        }
    }
    for (sources, why) in missing {
        let sources: Vec<String> = sources.iter().map(|s| s.replace('_', " ")).collect();
        parts.push(format!("not available: {} ({why})", sources.join(", ")));
    }
    if parts.is_empty() {
        return "not sampled".to_owned();
    }
    parts.join(", ")
}

/// Bytes as decimal megabytes with one decimal (`33.6 MB`), or `-`.
fn megabytes(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| MISSING.to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6))
}

/// Microseconds as milliseconds with three decimals (`1.900 ms`), or `-`.
fn millis(us: Option<u64>) -> String {
    us.map_or_else(|| MISSING.to_owned(), |us| format!("{:.3} ms", us as f64 / 1e3))
}
