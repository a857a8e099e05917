//! `etcdlat check disk`'s figures and verdict: fdatasync latency of the WAL's write pattern
//! (small sequential writes, each followed by fdatasync, as etcd's hardware guidance tests
//! it with `fio --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300`) held to
//! etcd's 10 ms for the 99th percentile, and sequential write bandwidth beside it.
//!
//! ```
//! use std::time::Duration;
//! use etcdlat_core::check::DiskReport;
//! use etcdlat_core::hdrhistogram::Histogram;
//!
//! let mut fdatasync = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3)?;
//! fdatasync.record_n(2_100, 100)?; // 100 fdatasyncs of 2.1 ms, in microseconds
//! let report = DiskReport::new("/var/lib/etcd".into(), 2300, fdatasync, 64 << 20, Duration::from_millis(500));
//! assert!(report.verdict().passed);
//! assert_eq!(report.verdict().to_string(), "passes: fdatasync p99 2.1 ms <= 10 ms");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::report::Distribution;

/// etcd's guidance: the 99th percentile of the WAL's fdatasync under 10 ms
/// (etcd's "Hardware recommendations" and its `wal_fsync_duration_seconds` alerts).
pub const FDATASYNC_P99_LIMIT: Duration = Duration::from_millis(10);

/// The size of each small write, bytes: fio's `--bs=2300` in etcd's guidance, about a WAL
/// entry of a small put.
pub const WAL_WRITE_BYTES: u64 = 2300;

/// How much the small writes add up to, bytes: fio's `--size=22m`.
pub const WAL_TEST_BYTES: u64 = 22 << 20;

/// The size of each write of the bandwidth test, bytes.
pub const BANDWIDTH_WRITE_BYTES: u64 = 64 << 10;

/// How much the bandwidth test writes before its one fdatasync, bytes.
pub const BANDWIDTH_TEST_BYTES: u64 = 64 << 20;

/// What `check disk` measured in one directory.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct DiskReport {
    /// The directory the test file was written in.
    pub dir: String,
    /// Bytes of each small write.
    pub write_bytes: u64,
    /// Small writes, each followed by one fdatasync.
    pub writes: u64,
    /// fdatasync latency after each small write, microseconds.
    #[serde(rename = "fdatasync_us")]
    pub fdatasync: Distribution,
    /// Bytes the bandwidth test wrote (in writes of [`BANDWIDTH_WRITE_BYTES`]) before its
    /// one fdatasync.
    pub bandwidth_bytes: u64,
    /// Time of the bandwidth test, its writes and the fdatasync, seconds.
    pub bandwidth_s: f64,
    /// Sequential write bandwidth: `bandwidth_bytes` over `bandwidth_s`, in MB/s (10^6 bytes).
    pub bandwidth_mb_per_s: f64,
    /// The 99th percentile of fdatasync held to etcd's limit.
    pub verdict: DiskVerdict,
}

impl DiskReport {
    /// The report of `writes` small writes of `write_bytes` whose fdatasync latencies are
    /// `fdatasync` (microseconds), and of a bandwidth test that wrote `bandwidth_bytes` in
    /// `bandwidth_time`; its verdict is worked out here.
    #[must_use]
    pub fn new(
        dir: String,
        write_bytes: u64,
        fdatasync: Histogram<u64>,
        bandwidth_bytes: u64,
        bandwidth_time: Duration,
    ) -> Self {
        let fdatasync = Distribution::new(fdatasync);
        let bandwidth_s = bandwidth_time.as_secs_f64();
        let bandwidth_mb_per_s =
            if bandwidth_s > 0.0 { bandwidth_bytes as f64 / bandwidth_s / 1e6 } else { 0.0 };
        let verdict = DiskVerdict::of(&fdatasync);
        Self {
            dir,
            write_bytes,
            writes: fdatasync.count(),
            fdatasync,
            bandwidth_bytes,
            bandwidth_s,
            bandwidth_mb_per_s,
            verdict,
        }
    }

    /// Whether the disk meets etcd's guidance, and the figure that says so.
    #[must_use]
    pub fn verdict(&self) -> &DiskVerdict {
        &self.verdict
    }
}

/// fdatasync's 99th percentile against [`FDATASYNC_P99_LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DiskVerdict {
    /// The p99 is within the limit.
    pub passed: bool,
    /// fdatasync's 99th percentile, microseconds.
    pub p99_us: u64,
    /// etcd's limit, microseconds.
    pub limit_us: u64,
}

impl DiskVerdict {
    fn of(fdatasync: &Distribution) -> Self {
        let p99_us = fdatasync.quantile_us(0.99);
        let limit_us = FDATASYNC_P99_LIMIT.as_micros() as u64;
        // No fdatasync measured is no evidence that the disk is fast enough.
        let passed = fdatasync.count() > 0 && p99_us <= limit_us;
        Self { passed, p99_us, limit_us }
    }
}

impl fmt::Display for DiskVerdict {
    /// `passes: fdatasync p99 2.1 ms <= 10 ms`, or `fails: fdatasync p99 14.2 ms > 10 ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |us: u64| {
            let text = format!("{:.1}", us as f64 / 1e3);
            text.strip_suffix(".0").map_or(text.clone(), str::to_owned)
        };
        let (word, sign) = if self.passed { ("passes", "<=") } else { ("fails", ">") };
        write!(f, "{word}: fdatasync p99 {} ms {sign} {} ms", ms(self.p99_us), ms(self.limit_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::new_histogram;

    fn report(latencies_us: &[(u64, u64)]) -> DiskReport {
        let mut h = new_histogram();
        for &(us, n) in latencies_us {
            h.record_n(us, n).unwrap();
        }
        DiskReport::new("/d".into(), WAL_WRITE_BYTES, h, 10_000_000, Duration::from_millis(250))
    }

    #[test]
    fn the_verdict_holds_p99_to_ten_milliseconds() {
        // 99 fast and 1 slow of 100: the p99 is the 99th value, fast.
        let r = report(&[(2_100, 99), (50_000, 1)]);
        assert!(r.verdict().passed);
        // HDR's 3 digits: a value reads back as the top of its bucket.
        assert!((2_100..=2_102).contains(&r.verdict().p99_us), "{}", r.verdict().p99_us);
        assert_eq!(r.verdict().to_string(), "passes: fdatasync p99 2.1 ms <= 10 ms");
        // 2 slow of 100: the p99 is slow.
        let r = report(&[(2_100, 98), (14_200, 2)]);
        assert!(!r.verdict().passed);
        assert_eq!(r.verdict().to_string(), "fails: fdatasync p99 14.2 ms > 10 ms");
        assert!(report(&[(9_990, 100)]).verdict().passed);
        assert!(!report(&[(10_020, 100)]).verdict().passed);
        assert!(!report(&[]).verdict().passed, "nothing measured proves nothing");
    }

    #[test]
    fn bandwidth_is_bytes_over_time_in_megabytes_a_second() {
        let r = report(&[(1_000, 10)]);
        assert_eq!(r.writes, 10);
        assert!((r.bandwidth_mb_per_s - 40.0).abs() < 1e-9, "{}", r.bandwidth_mb_per_s);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["verdict"]["passed"], true);
        assert_eq!(json["fdatasync_us"]["count"], 10);
    }
}
