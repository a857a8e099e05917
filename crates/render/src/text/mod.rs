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
//!   [2]    Cancelled: abandoned: no answer within the grace after the run ended or was stopped
//!
//! Accounting:
//!   Requests:    2005 (ok 2000, errors 5)
//!   Abandoned at the end:    2, out for 2.0412 to 2.4037 secs.
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
//! device once (its figures are machine-wide), and, when asked
//! ([`TextOptions::dbtester_rows`]), dbtester's figures that etcd's layout does not show, as
//! dbtester writes them:
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

mod audit;
mod fault;
mod finding;
mod kubernetes;
mod op;
mod server;
mod steps;

use std::fmt::Write;

use crate::{decimal_bytes, go};
use etcdlat_core::report::Report;

/// Choices of the text report, as etcd's tool's flags of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextOptions {
    /// Full floating-point precision (Go's `%g`) instead of four decimals (etcd's `--precise`).
    pub precise: bool,
    /// Print the per-interval samples as CSV (etcd's `--sample`).
    pub sample: bool,
    /// Print dbtester's upper-case figures (`SERVER-AVG-CPU`, ...) after the resources
    /// (`--dbtester-rows`, or a dbtester scenario's `[report] dbtester-rows`). Without it a
    /// run reads as etcd's tool prints one, with a line per member: dbtester's rows say
    /// again what those lines say, and belong to studies, whose runs side by side
    /// ([`crate::columns::Columns`]) always have them.
    pub dbtester_rows: bool,
}

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
                    "  emulator:\tCPU {:.2} s user, {:.2} s system (not in the client's figures), \
                     {} threads",
                    e.user_cpu_s,
                    e.system_cpu_s,
                    if e.realtime { "real-time" } else { "ordinary" }
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
            let _ = write!(self.out, ", max RSS {}", server::megabytes(Some(c.max_rss_bytes)));
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
        if let Some(machine) = &report.target.machine {
            let _ = writeln!(self.out, "Machine: {}.", machine.summary());
        }
        if let [first, .., last] = report.target.source_addresses.as_slice() {
            let _ = writeln!(
                self.out,
                "Connections came from {} loopback addresses ({first} to {last}): one has too few ephemeral ports for them.",
                report.target.source_addresses.len()
            );
        }
        self.resources(report, opts.dbtester_rows);
        self.findings(report);
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
    pub(super) fn secs_us(&mut self, us: f64) {
        self.number(us / 1e6);
        self.out.push_str(" secs");
    }

    pub(super) fn line_secs(&mut self, label: &str, us: f64) {
        let _ = write!(self.out, "  {label}:\t");
        self.secs_us(us);
        self.out.push_str(".\n");
    }
}

/// Shown where a server figure was not exported.
const MISSING: &str = "-";
