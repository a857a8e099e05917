//! An operation kind's sections in etcd benchmark's layout (summary, response time
//! histogram, latency distribution, `--sample` CSV) and etcdlat's accounting.

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use super::Writer;
use crate::go;
use etcdlat_core::report::{Distribution, OpReport, Report};

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
impl Writer<'_> {
    pub(super) fn summary(&mut self, op: &OpReport) {
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
    pub(super) fn histogram(&mut self, lat: &Distribution) {
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

    pub(super) fn latencies(&mut self, lat: &Distribution) {
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
    pub(super) fn samples(&mut self, report: &Report, op: &OpReport) {
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

    pub(super) fn accounting(&mut self, op: &OpReport) {
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
        if let Some(abandoned) = &op.abandoned {
            let _ = write!(self.out, "  Abandoned at the end:\t{}, out for ", abandoned.count());
            self.number(abandoned.min_us() as f64 / 1e6);
            self.out.push_str(" to ");
            self.secs_us(abandoned.max_us() as f64);
            self.out.push_str(".\n");
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
