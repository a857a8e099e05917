//! The server's side of a run on the page: each member's `/metrics` figures, and each
//! member's and the client's resources over the run.

use super::*;

/// A row of the server metrics table: its name, the metric it is read from (of
/// [`metric`]), and the figure of one member.
type MetricRow = (&'static str, Option<&'static str>, fn(&MemberMetrics) -> String);

/// A row of the resources table: its name, and one series' figure.
type ResourceRow<'a> = (&'static str, &'a dyn Fn(&ResourceSeries) -> String);

impl Page {
    /// Server metrics with a column per member and a row per figure; a figure the member's
    /// etcd does not export is "unavailable on etcd X".
    pub(super) fn server(&mut self, members: &[MemberMetrics], target: &TargetInfo) {
        let figures: [MetricRow; 18] = [
            ("Scrapes ok / failed", None, |m| format!("{} / {}", m.samples, m.failed_samples)),
            ("RSS avg", Some(metric::RSS), |m| bytes(m.rss_avg_bytes)),
            ("RSS max", Some(metric::RSS), |m| bytes(m.rss_max_bytes)),
            ("CPU", Some(metric::CPU), |m| {
                m.cpu_s.map_or_else(|| MISSING.to_owned(), |s| format!("{s:.2} s"))
            }),
            ("DB size", Some(metric::DB_SIZE), |m| bytes(m.db_size_bytes)),
            ("WAL fsync p50 (ms)", Some(metric::WAL_FSYNC), |m| opt_ms(m.wal_fsync_p50_us)),
            ("WAL fsync p99 (ms)", Some(metric::WAL_FSYNC), |m| opt_ms(m.wal_fsync_p99_us)),
            ("Backend commit p50 (ms)", Some(metric::BACKEND_COMMIT), |m| {
                opt_ms(m.backend_commit_p50_us)
            }),
            ("Backend commit p99 (ms)", Some(metric::BACKEND_COMMIT), |m| {
                opt_ms(m.backend_commit_p99_us)
            }),
            ("Proposals committed", Some(metric::PROPOSALS_COMMITTED), |m| {
                opt_count(m.proposals_committed)
            }),
            ("Proposals failed", Some(metric::PROPOSALS_FAILED), |m| opt_count(m.proposals_failed)),
            ("Proposals pending (max)", Some(metric::PROPOSALS_PENDING), |m| {
                opt_count(m.proposals_pending_max)
            }),
            ("Leader changes seen", Some(metric::LEADER_CHANGES), |m| opt_count(m.leader_changes)),
            ("Peer sent", Some(metric::PEER_SENT), |m| bytes(m.peer_sent_bytes)),
            ("Peer received", Some(metric::PEER_RECEIVED), |m| bytes(m.peer_received_bytes)),
            ("gRPC sent", Some(metric::GRPC_SENT), |m| bytes(m.grpc_sent_bytes)),
            ("gRPC received", Some(metric::GRPC_RECEIVED), |m| bytes(m.grpc_received_bytes)),
            ("Last scrape error", None, |m| {
                m.last_error.clone().unwrap_or_else(|| MISSING.to_owned())
            }),
        ];
        self.raw("<div class=\"scroll\">\n<table class=\"server\">\n<thead>\n<tr><th>Metric</th>");
        for m in members {
            self.raw("<th class=\"n\">");
            self.text(&m.name);
            self.raw("</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        for (name, read_from, figure) in figures {
            let shown = |m: &MemberMetrics| match (figure(m), read_from) {
                (v, Some(metric)) if v == MISSING => {
                    m.absent(metric, &target.etcd_version, target.members, MISSING)
                }
                (v, _) => v,
            };
            let values: Vec<String> = members.iter().map(shown).collect();
            if name == "Last scrape error" && values.iter().all(|v| v == MISSING) {
                continue;
            }
            let mut row = vec![Cell { text: name.to_owned(), numeric: false, bad: false }];
            row.extend(values.into_iter().map(num));
            self.row(row);
        }
        self.raw("</tbody>\n</table>\n</div>\n");
    }

    /// Each member's and the client's resources over the run, a column each: CPU, memory,
    /// context switches, storage I/O, data dir, disk, network, and what could not be
    /// sampled, with why.
    pub(super) fn resources(&mut self, run: &Report) {
        let mut columns: Vec<(&str, &ResourceSeries)> =
            run.server.iter().map(|m| (m.name.as_str(), &m.resources)).collect();
        if let Some(c) = &run.client {
            columns.push(("client", &c.resources));
        }
        let count = |n: Option<u64>| n.map_or_else(|| MISSING.to_owned(), thousands);
        // A member's traffic is its gRPC and peer bytes; the client's its sockets'.
        let in_out = |grpc: Option<u64>, peer: Option<u64>, socket: Option<u64>| match (grpc, peer)
        {
            (None, None) => bytes(socket),
            (g, p) => bytes(Some(g.unwrap_or(0) + p.unwrap_or(0))),
        };
        let rows: [ResourceRow<'_>; 15] = [
            ("CPU average (% of a core)", &|r| percent(r.cpu_avg_percent())),
            ("CPU busiest second (% of a core)", &|r| percent(r.cpu_max_percent())),
            ("RSS max", &|r| bytes(r.max(|s| s.rss_bytes))),
            ("Context switches, voluntary", &|r| count(r.total(|s| s.voluntary_ctxt_switches))),
            ("Context switches, involuntary", &|r| {
                count(r.total(|s| s.nonvoluntary_ctxt_switches))
            }),
            ("Storage read", &|r| bytes(r.total(|s| s.read_bytes))),
            ("Storage written", &|r| bytes(r.total(|s| s.write_bytes))),
            ("Read / write system calls", &|r| {
                format!(
                    "{} / {}",
                    count(r.total(|s| s.read_syscalls)),
                    count(r.total(|s| s.write_syscalls))
                )
            }),
            ("Data dir (end)", &|r| bytes(r.last(|s| s.data_dir_bytes))),
            ("WAL / snapshots and db (end)", &|r| {
                format!("{} / {}", bytes(r.last(|s| s.wal_bytes)), bytes(r.last(|s| s.snap_bytes)))
            }),
            ("Disk (machine-wide)", &|r| {
                r.disk.as_ref().map_or_else(
                    || MISSING.to_owned(),
                    |d| {
                        let n = |f: fn(&ResourceSample) -> Option<u64>| count(r.total(f));
                        format!(
                            "{} ({}): {} reads, {} writes, {} / {} sectors",
                            d.name,
                            d.device,
                            n(|s| s.disk_reads_completed),
                            n(|s| s.disk_writes_completed),
                            n(|s| s.disk_sectors_read),
                            n(|s| s.disk_sectors_written)
                        )
                    },
                )
            }),
            ("Network in", &|r| {
                in_out(
                    r.total(|s| s.grpc_received_bytes),
                    r.total(|s| s.peer_received_bytes),
                    r.total(|s| s.received_bytes),
                )
            }),
            ("Network out", &|r| {
                in_out(
                    r.total(|s| s.grpc_sent_bytes),
                    r.total(|s| s.peer_sent_bytes),
                    r.total(|s| s.sent_bytes),
                )
            }),
            ("Samples", &|r| format!("{} every {} s", r.samples.len(), r.period_s)),
            ("Not available", &|r| {
                if r.not_available.is_empty() {
                    return MISSING.to_owned();
                }
                r.not_available
                    .iter()
                    .map(|n| format!("{}: {}", n.source.replace('_', " "), n.why))
                    .collect::<Vec<_>>()
                    .join("; ")
            }),
        ];
        self.raw(
            "<div class=\"scroll\">\n<table class=\"resources\">\n<thead>\n<tr><th>Figure</th>",
        );
        for (name, _) in &columns {
            self.raw("<th class=\"n\">");
            self.text(name);
            self.raw("</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        for (name, figure) in rows {
            let values: Vec<String> = columns.iter().map(|(_, r)| figure(r)).collect();
            if name == "Not available" && values.iter().all(|v| v == MISSING) {
                continue;
            }
            // Words wrap; numbers stay on one line, aligned.
            let words = matches!(name, "Disk (machine-wide)" | "Not available");
            let mut row = vec![cell(name)];
            row.extend(values.into_iter().map(if words { cell } else { num }));
            self.row(row);
        }
        self.raw("</tbody>\n</table>\n</div>\n");
        self.raw(
            "<p class=\"description\">CPU is in percent of one core (200: two cores busy). \
             The disk figures count every process's I/O on the device that holds the data \
             dir, not only the member's: members on one disk count the same requests.</p>\n",
        );
    }
}
