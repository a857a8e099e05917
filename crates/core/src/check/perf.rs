//! `etcdctl check perf` as a scenario: its loads (`s`, `m`, `l`, `xl`: clients, a rate and
//! 60 s of puts of 256-byte keys and 1 KiB values under a prefix, one connection per client)
//! and its rules as thresholds the run is held to: no errors, throughput over 90% of the
//! load's rate, the slowest request within 500 ms, the standard deviation within 100 ms.
//!
//! ```
//! use std::time::Duration;
//! use etcdlat_core::check::PerfLoad;
//!
//! let load: PerfLoad = "small".parse()?;
//! let scenario = load.scenario("/etcdctl-check-perf/", load.duration());
//! assert_eq!((scenario.load.clients, scenario.load.rate), (50, 150));
//! assert_eq!(scenario.thresholds[1], "put.throughput > 135");
//! # Ok::<(), String>(())
//! ```

use std::str::FromStr;
use std::time::Duration;

use crate::op::OpKind;
use crate::report::Report;
use crate::scenario::{Load, Scenario};
use crate::schedule::Schedule;
use crate::threshold::Threshold;
use crate::workload::{Operation, PutOp};

/// etcdctl's default `--prefix`.
pub const DEFAULT_PREFIX: &str = "/etcdctl-check-perf/";

/// Bytes of each key after the prefix, as etcdctl writes them.
pub const KEY_BYTES: u64 = 256;

/// Bytes of each value, as etcdctl writes them.
pub const VALUE_BYTES: u64 = 1024;

/// One of `etcdctl check perf --load`'s workload models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PerfLoad {
    /// `s` (`small`): 50 clients, 150 puts a second.
    Small,
    /// `m` (`medium`): 200 clients, 1000 puts a second.
    Medium,
    /// `l` (`large`): 500 clients, 8000 puts a second.
    Large,
    /// `xl` (`xLarge`): 1000 clients, 15000 puts a second.
    XLarge,
}

impl FromStr for PerfLoad {
    type Err = String;

    /// etcdctl's names and aliases: `s` or `small`, `m` or `medium`, `l` or `large`, `xl` or
    /// `xLarge`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "s" | "small" => Ok(Self::Small),
            "m" | "medium" => Ok(Self::Medium),
            "l" | "large" => Ok(Self::Large),
            "xl" | "xLarge" => Ok(Self::XLarge),
            other => Err(format!("unknown load option {other} (s, m, l, xl)")),
        }
    }
}

impl PerfLoad {
    /// The short name (`s`, `m`, `l`, `xl`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Small => "s",
            Self::Medium => "m",
            Self::Large => "l",
            Self::XLarge => "xl",
        }
    }

    /// The rate the puts are sent at, and the throughput expected: puts per second.
    #[must_use]
    pub fn rate(self) -> u64 {
        match self {
            Self::Small => 150,
            Self::Medium => 1000,
            Self::Large => 8000,
            Self::XLarge => 15000,
        }
    }

    /// Clients, each with a connection of its own (etcdctl makes a client per worker).
    #[must_use]
    pub fn clients(self) -> u32 {
        match self {
            Self::Small => 50,
            Self::Medium => 200,
            Self::Large => 500,
            Self::XLarge => 1000,
        }
    }

    /// How long etcdctl runs every load: 60 s.
    #[must_use]
    pub fn duration(self) -> Duration {
        Duration::from_secs(60)
    }

    /// The rules, as thresholds on the put row: etcdctl fails a run with any error, a
    /// throughput at or under 90% of the rate, a slowest request over 500 ms or a standard
    /// deviation over 100 ms.
    #[must_use]
    pub fn rules(self) -> Vec<String> {
        // 90% of every load's rate is a whole number.
        let floor = self.rate() * 9 / 10;
        vec![
            "put.errors == 0".to_owned(),
            format!("put.throughput > {floor}"),
            "put.max <= 500ms".to_owned(),
            "put.stddev <= 100ms".to_owned(),
        ]
    }

    /// The put scenario of this load under `prefix`, run for `duration` (etcdctl's is
    /// [`PerfLoad::duration`]): keys of [`KEY_BYTES`] after the prefix, random over the
    /// whole key space as etcdctl's, values of [`VALUE_BYTES`], closed loop capped at the
    /// rate (etcdctl's rate limiter feeds its clients; latency is measured from the send),
    /// with [`PerfLoad::rules`] as its thresholds.
    #[must_use]
    pub fn scenario(self, prefix: &str, duration: Duration) -> Scenario {
        let put = PutOp {
            key_size: KEY_BYTES,
            val_size: VALUE_BYTES,
            key_space_size: i64::MAX as u64,
            prefix: prefix.to_owned(),
            ..PutOp::default()
        };
        let mut s = Scenario::new(Operation::Put(put));
        s.name = format!("check-perf-{}", self.name());
        s.description = format!(
            "etcdctl check perf --load={}: {} clients put at {}/s for {}s",
            self.name(),
            self.clients(),
            self.rate(),
            duration.as_secs()
        );
        s.load = Load {
            conns: Some(self.clients()),
            clients: self.clients(),
            total: None,
            duration: Some(duration),
            rate: self.rate(),
            schedule: Schedule::Closed,
            ..Load::default()
        };
        s.thresholds = self.rules();
        s
    }
}

/// A rule (a threshold of the scenario) with the figure the run had and whether it held.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RuleOutcome {
    /// The rule.
    pub threshold: Threshold,
    /// The run's figure, in the metric's unit; `None` when the run has none (no successful
    /// put for a latency).
    pub actual: Option<f64>,
    /// The figure met the rule.
    pub passed: bool,
}

impl RuleOutcome {
    /// Every threshold of `report`'s scenario scoped to an operation kind, with the figure
    /// the run had: passed or not, each with its figure (unlike [`Report::violations`],
    /// which lists only those not met).
    #[must_use]
    pub fn all(report: &Report) -> Vec<RuleOutcome> {
        report
            .scenario
            .thresholds
            .iter()
            .filter_map(|t| t.parse::<Threshold>().ok())
            .filter_map(|threshold| {
                let kind: OpKind = threshold.op?;
                let actual = report.ops.get(&kind).and_then(|row| threshold.metric.value(row));
                let passed = actual.is_some_and(|v| threshold.comparison.holds(v, threshold.limit));
                Some(RuleOutcome { threshold, actual, passed })
            })
            .collect()
    }

    /// `PASS: put.throughput > 135 (was 149.8)`, or `FAIL: ...`.
    #[must_use]
    pub fn line(&self) -> String {
        let word = if self.passed { "PASS" } else { "FAIL" };
        let was = match self.actual {
            Some(v) => self.threshold.metric.format(v),
            None => "none".to_owned(),
        };
        format!("{word}: {} (was {was})", self.threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loads_are_etcdctls() {
        let table: Vec<_> = ["s", "m", "l", "xl"]
            .iter()
            .map(|n| {
                let l: PerfLoad = n.parse().unwrap();
                (l.name(), l.clients(), l.rate())
            })
            .collect();
        assert_eq!(
            table,
            [("s", 50, 150), ("m", 200, 1000), ("l", 500, 8000), ("xl", 1000, 15000)]
        );
        for (alias, load) in [
            ("small", PerfLoad::Small),
            ("medium", PerfLoad::Medium),
            ("large", PerfLoad::Large),
            ("xLarge", PerfLoad::XLarge),
        ] {
            assert_eq!(alias.parse::<PerfLoad>(), Ok(load));
        }
        assert!("xlarge".parse::<PerfLoad>().unwrap_err().starts_with("unknown load option"));
        let s = PerfLoad::Large.scenario(DEFAULT_PREFIX, Duration::from_secs(3));
        s.validate().unwrap();
        assert_eq!((s.load.conns, s.load.clients), (Some(500), 500));
        assert_eq!(s.load.duration, Some(Duration::from_secs(3)));
        let Some(Operation::Put(put)) = &s.op else { panic!() };
        assert_eq!((put.key_size, put.val_size, put.prefix.as_str()), (256, 1024, DEFAULT_PREFIX));
        assert_eq!(s.thresholds[1], "put.throughput > 7200");
    }

    /// A report of the small load with one put row: latencies as given (microseconds, count),
    /// `errors` failed, over `seconds`.
    fn report(latencies_us: &[(u64, u64)], seconds: f64, errors: u64) -> Report {
        use std::time::Instant;

        use crate::report::{OpReport, Params, TargetInfo};
        use crate::{ErrorCode, Recorder};

        let t0 = Instant::now();
        let interval = Duration::from_secs(1);
        let mut rec = Recorder::new(&[OpKind::Put], t0, interval);
        for &(us, n) in latencies_us {
            for _ in 0..n {
                let done = t0 + Duration::from_micros(us);
                rec.record_ok(OpKind::Put, t0, t0, done);
            }
        }
        rec.record_errors(OpKind::Put, ErrorCode::Unavailable, errors, t0);
        let (_, record) = rec.finish().into_iter().find(|(k, _)| *k == OpKind::Put).unwrap();
        let scenario = PerfLoad::Small.scenario(DEFAULT_PREFIX, Duration::from_secs(60));
        let mut r = Report::new(scenario, Params::default(), TargetInfo::default());
        let row = OpReport::from_record(&record, Duration::from_secs_f64(seconds), interval);
        r.ops.insert(OpKind::Put, row);
        r
    }

    #[test]
    fn every_rule_is_reported_with_its_figure() {
        // 9000 puts in 60 s is 150/s; a 20 ms standard deviation, slowest 60 ms.
        let r = report(&[(20_000, 4500), (60_000, 4500)], 60.0, 0);
        let outcomes = RuleOutcome::all(&r);
        assert_eq!(outcomes.len(), 4);
        assert!(outcomes.iter().all(|o| o.passed), "{outcomes:?}");
        let lines: Vec<String> = outcomes.iter().map(RuleOutcome::line).collect();
        assert_eq!(lines[0], "PASS: put.errors == 0 (was 0)");
        assert_eq!(lines[1], "PASS: put.throughput > 135 (was 150)");
        assert!(lines[2].starts_with("PASS: put.max <= 500ms (was 60"), "{}", lines[2]);
        assert!(lines[3].starts_with("PASS: put.stddev <= 100ms (was 20"), "{}", lines[3]);

        // 135/s is not over 90%; a 1 s request; a 0.5 s standard deviation; an error.
        let r = report(&[(1_000, 4050), (1_000_000, 4050)], 60.0, 1);
        let failed: Vec<String> =
            RuleOutcome::all(&r).iter().filter(|o| !o.passed).map(RuleOutcome::line).collect();
        assert_eq!(failed.len(), 4, "{failed:?}");
        assert_eq!(failed[0], "FAIL: put.errors == 0 (was 1)");
        assert_eq!(failed[1], "FAIL: put.throughput > 135 (was 135)");
        assert!(failed[3].starts_with("FAIL: put.stddev <= 100ms (was 49"), "{}", failed[3]);
    }
}
