//! The Kubernetes SLOs section: the apiserver's requests against Kubernetes' own SLOs.

use std::fmt::Write;

use super::Writer;
use crate::report::Report;

impl Writer<'_> {
    /// Each apiserver request's p99 against Kubernetes' SLO for its kind
    /// ([`crate::workload::kubernetes::slo`]), with conflicts per update: only for runs
    /// that send them.
    pub(super) fn kubernetes_slos(&mut self, report: &Report) {
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
}
