//! The time series as CSV, one row per operation kind and interval, for plotting.

use std::fmt::Write;

use etcdlat_core::report::Report;

/// The header of [`intervals_csv`].
pub const INTERVALS_CSV_HEADER: &str =
    "op,t_s,count,errors,min_us,mean_us,p50_us,p90_us,p99_us,max_us";

/// Renders the intervals of every operation kind of `report` as CSV: a header, then one row
/// per kind (in report order) and interval (in time order). `t_s` is the start of the
/// interval in seconds since measurement started; latencies are microseconds; `count` is
/// successful requests and `errors` failed ones.
#[must_use]
pub fn intervals_csv(report: &Report) -> String {
    let mut out = String::with_capacity(
        64 * (1 + report.ops.values().map(|o| o.intervals.len()).sum::<usize>()),
    );
    out.push_str(INTERVALS_CSV_HEADER);
    out.push('\n');
    for (kind, op) in &report.ops {
        for i in &op.intervals {
            let _ = writeln!(
                out,
                "{kind},{},{},{},{},{},{},{},{},{}",
                i.t_s,
                i.count,
                i.errors,
                i.min_us,
                i.mean_us,
                i.p50_us,
                i.p90_us,
                i.p99_us,
                i.max_us
            );
        }
    }
    out
}
