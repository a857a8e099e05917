//! `[report]`: how results are reported (precision, samples, the Prometheus endpoint's
//! address), and how a run's time series is cut into intervals.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{MAX_DURATION, ScenarioError};
use crate::unit;

/// How results are reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ReportOptions {
    /// Full floating-point precision in the text report (etcd's `--precise`).
    #[serde(default)]
    pub precise: bool,
    /// Print the per-second samples in the text report (etcd's `--sample`).
    #[serde(default)]
    pub sample: bool,
    /// Print dbtester's upper-case figures (`SERVER-AVG-CPU`, ...) in the text report of
    /// each run, after its resources (the command line's `--dbtester-rows`). A study's
    /// runs side by side always have them; a single run's text keeps etcd's tool's layout
    /// unless its scenario (a dbtester one) or the command line asks.
    #[serde(default)]
    pub dbtester_rows: bool,
    /// Length of one interval of the time series. Absent: chosen from the run's length
    /// ([`super::Scenario::series_interval`]).
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// Where etcdlat serves Prometheus metrics while it runs, `HOST:PORT` (the command
    /// line's `--metrics-addr`, which wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_addr: Option<String>,
}

impl ReportOptions {
    /// Checks the `[report]` section.
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
        if self.interval.is_some_and(|i| i < MIN_INTERVAL) {
            return Err(ScenarioError::invalid("report.interval", "must be at least 10ms"));
        }
        if let Some(addr) = &self.metrics_addr {
            let port = addr.rsplit_once(':').map(|(host, port)| (host, port.parse::<u16>()));
            if !matches!(port, Some((host, Ok(_))) if !host.is_empty()) {
                return Err(ScenarioError::invalid(
                    "report.metrics-addr",
                    format!("{addr:?} is not HOST:PORT"),
                ));
            }
        }
        Ok(())
    }
}

/// The shortest interval of a time series.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// How a run's time series is cut into intervals ([`super::Scenario::series_interval`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesInterval {
    /// The first interval's length.
    pub length: Duration,
    /// Whether the interval doubles as the run goes, to keep the series at 100 to 200
    /// points (a run whose length is not known in advance).
    pub adaptive: bool,
}

/// The shortest of 10 ms, 20 ms, 50 ms, 100 ms, ... that cuts `run` into at most
/// [`crate::recorder::MAX_INTERVALS`] intervals.
pub(super) fn interval_for(run: Duration) -> Duration {
    let most = crate::recorder::MAX_INTERVALS as f64;
    let mut decade = MIN_INTERVAL;
    loop {
        for step in [1, 2, 5] {
            let length = decade * step;
            if run.as_secs_f64() / length.as_secs_f64() <= most || length >= MAX_DURATION {
                return length;
            }
        }
        decade *= 10;
    }
}
