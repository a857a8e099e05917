//! The client steps' section: a line per step, in columns.

use std::fmt::Write;

use super::{MISSING, Writer};
use etcdlat_core::report::StepReport;

impl Writer<'_> {
    /// A line per client step, in columns: its clients, requests, errors, successful
    /// requests per second and latency percentiles (`-` for a step without a success).
    pub(super) fn steps(&mut self, steps: &[StepReport]) {
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
}
