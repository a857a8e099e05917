//! The members' `/metrics` and the members' and client's resources over the run.

use std::fmt::Write;

use super::{MISSING, Writer};
use crate::decimal_bytes;
use etcdlat_core::metrics::{self, MemberMetrics, ResourceSample, ResourceSeries, metric};
use etcdlat_core::report::{Report, Row, TargetInfo, Unit};

impl Writer<'_> {
    /// One line per member: what its `/metrics` said over the run; a figure its etcd does
    /// not export is "unavailable on etcd X".
    pub(super) fn server(&mut self, members: &[MemberMetrics], target: &TargetInfo) {
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
    /// under the members (machine-wide), then, with `dbtester_rows`, dbtester's figures that
    /// etcd's layout above does not show (throughput per second, network, peaks, disk), as
    /// dbtester writes them.
    pub(super) fn resources(&mut self, report: &Report, dbtester_rows: bool) {
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
        if !dbtester_rows {
            return;
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
}

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
    if let Some(down) = r.down_s() {
        parts.push(format!("down {down:.1} s (no CPU, no memory)"));
    }
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
pub(super) fn megabytes(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| MISSING.to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6))
}

/// Microseconds as milliseconds with three decimals (`1.900 ms`), or `-`.
fn millis(us: Option<u64>) -> String {
    us.map_or_else(|| MISSING.to_owned(), |us| format!("{:.3} ms", us as f64 / 1e3))
}
