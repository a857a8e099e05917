//! The findings' section: where the run crossed etcd's guidance or was bound by something
//! other than the load ([`Report::findings`]), one line each, once, at the end of the report:
//!
//! ```text
//!
//! Findings:
//!   m1: WAL fsync p99 was 48.3 ms, over etcd's 10 ms: the disk bound the run, not the load.
//!   the leader changed once during the measurement: requests waited for an election, and the latency includes it.
//! ```

use std::fmt::Write;

use etcdlat_core::report::Report;

use super::Writer;

impl Writer<'_> {
    /// The findings, when there are any.
    pub(super) fn findings(&mut self, report: &Report) {
        let found = report.findings();
        if found.is_empty() {
            return;
        }
        self.out.push_str("\nFindings:\n");
        for f in &found {
            let _ = writeln!(self.out, "  {}.", f.text);
        }
    }
}
