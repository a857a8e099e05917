//! The JSON report: the project's data contract, read by scripts, plots and comparisons.
//!
//! The layout comes from the serde derives of [`etcdlat_core::report`]; this function is the one
//! place that writes it, so every command produces the same bytes for the same reports.
//! Each run also carries its dbtester figures (`study`, [`etcdlat_core::report::Study`]), computed
//! from the run as it is written: a report read back computes them again
//! ([`Report::study`]), so they are never out of step with the rest; so does its `findings`
//! ([`Report::findings`]), where it crossed etcd's guidance. When runs are repeats
//! of a cell, the set carries `repeats` ([`Repeats`]): the order they ran in and each cell's
//! figures over its repeats (each repeat's value, mean, median, confidence interval),
//! computed the same way. Its shape is locked by
//! the `json_contract` test, and [`ReportSet::schema_version`] changes whenever it changes
//! incompatibly.

use serde::Serialize;

use etcdlat_core::repeat::Repeats;
use etcdlat_core::report::find_max::FindMaxReport;
use etcdlat_core::report::{Finding, Report, ReportSet, Study};

/// A run as written: the report, then its dbtester figures and its findings.
#[derive(Serialize)]
struct Run<'a> {
    #[serde(flatten)]
    report: &'a Report,
    study: Study,
    findings: Vec<Finding>,
}

/// The top level as written: [`ReportSet`]'s fields, each run with its figures.
#[derive(Serialize)]
struct Set<'a> {
    schema_version: u32,
    etcdlat_version: &'a str,
    runs: Vec<Run<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    find_max: Option<&'a FindMaxReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeats: Option<Repeats>,
}

/// Renders `set` as pretty-printed JSON, ending with a newline.
#[must_use]
pub fn json(set: &ReportSet) -> String {
    // Destructured so that a field added to the set cannot be left out here.
    let ReportSet { schema_version, etcdlat_version, runs, find_max, .. } = set;
    let set = Set {
        schema_version: *schema_version,
        etcdlat_version,
        runs: runs
            .iter()
            .map(|report| Run { report, study: report.study(), findings: report.findings() })
            .collect(),
        find_max: find_max.as_ref(),
        repeats: Repeats::of(runs),
    };
    // Serializing plain data with string map keys into memory cannot fail; the fallback
    // keeps rendering infallible should that ever change.
    let mut out = serde_json::to_string_pretty(&set)
        .unwrap_or_else(|e| format!("{{\"error\": {}}}", serde_json::Value::String(e.to_string())));
    out.push('\n');
    out
}
