//! The consistency audit's section.

use std::fmt::Write;

use super::Writer;

impl Writer<'_> {
    /// The audit's counts, serializable staleness (all members, then each), and the first
    /// offending requests.
    pub(super) fn audit(&mut self, a: &etcdlat_core::audit::AuditReport) {
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
        let staleness = |s: &etcdlat_core::audit::Staleness| {
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
}
