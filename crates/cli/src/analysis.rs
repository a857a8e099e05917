//! Reading reports: `etcdlat merge` and `etcdlat compare`, which work on JSON reports
//! instead of running load, and the verdict every command that makes reports ends with
//! (failed checks and thresholds not met, one line each on stderr, exit 1).

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::compare::{compare_sets, markdown};
use etcdlat_core::merge::merge_labeled;
use etcdlat_core::report::SCHEMA_VERSION;
use etcdlat_core::{Report, ReportSet, Threshold, render};

use crate::Status;
use crate::output::Target;
use crate::plan::{ComparePlan, MergePlan};

/// Reads a JSON report file, with one-line errors that name it: missing, not JSON, not a
/// report, or of another layout version.
fn read_set(path: &Path) -> Result<ReportSet> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow!("{name}: not an etcdlat JSON report: {e}"))?;
    match value.get("schema_version").map(serde_json::Value::as_u64) {
        None => bail!("{name}: not an etcdlat JSON report (no schema_version)"),
        Some(Some(v)) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => bail!(
            "{name}: schema_version {}, but this etcdlat reads version {SCHEMA_VERSION}",
            v.map_or_else(|| "that is not a number".to_owned(), |v| v.to_string())
        ),
    }
    serde_json::from_value(value).map_err(|e| anyhow!("{name}: not an etcdlat JSON report: {e}"))
}

/// `etcdlat merge`: the reports of shards of one run, merged into one.
pub fn merge(plan: &MergePlan) -> Result<Status> {
    let sets = plan.inputs.iter().map(|p| read_set(p)).collect::<Result<Vec<_>>>()?;
    let labels: Vec<String> = plan.inputs.iter().map(|p| p.display().to_string()).collect();
    let shards: Vec<(&str, &ReportSet)> = labels.iter().map(String::as_str).zip(&sets).collect();
    let mut merged = merge_labeled(&shards)?;
    for run in &mut merged.runs {
        for t in &plan.thresholds {
            if !run.scenario.thresholds.contains(t) {
                run.scenario.thresholds.push(t.clone());
            }
        }
        // A scenario read back from JSON was not validated: its thresholds may not parse.
        Threshold::parse_all(&run.scenario.thresholds)
            .map_err(|e| anyhow!("{}: run {:?}: {e}", labels[0], run.name))?;
    }
    if plan.print_text {
        for run in &merged.runs {
            println!("{}", render::text(run, &plan.text));
        }
    }
    if let Some(t) = &plan.json {
        t.write(&render::json(&merged))?;
    }
    if let Some(t) = &plan.markdown {
        t.write(&render::markdown(&merged.runs))?;
    }
    if let Some(t) = &plan.csv {
        write_csv(t, &merged.runs)?;
    }
    Ok(if passed(&merged.runs) { Status::Done } else { Status::Failed })
}

/// The interval CSV of every run, with one header.
fn write_csv(target: &Target, runs: &[Report]) -> Result<()> {
    let mut text = String::new();
    for (i, r) in runs.iter().enumerate() {
        let csv = render::intervals_csv(r);
        text.push_str(if i == 0 {
            &csv
        } else {
            csv.split_once('\n').map_or("", |(_, rows)| rows)
        });
    }
    target.write(&text)
}

/// `etcdlat compare`: two reports side by side as markdown, run `i` with run `i`.
pub fn compare(plan: &ComparePlan) -> Result<Status> {
    let base = read_set(&plan.base)?;
    let new = read_set(&plan.new)?;
    if base.runs.len() != new.runs.len() {
        bail!(
            "{}: {} runs, but {} has {}; runs are compared one to one",
            plan.new.display(),
            new.runs.len(),
            plan.base.display(),
            base.runs.len()
        );
    }
    let comparisons = compare_sets(&base, &new)?;
    let text = markdown(&comparisons);
    if plan.print {
        print!("{text}");
    }
    if let Some(t) = &plan.markdown {
        t.write(&text)?;
    }
    if let Some(t) = &plan.json {
        let json = serde_json::to_string_pretty(&comparisons).context("writing JSON")?;
        t.write(&(json + "\n"))?;
    }
    Ok(Status::Done)
}

/// Prints every failed check and every threshold not met, one line each on stderr (the run
/// named when there are several); true when there was none.
pub fn passed(reports: &[Report]) -> bool {
    verdict(reports, true)
}

/// As [`passed`], for the checks alone: a shard's thresholds are held against the whole, by
/// `etcdlat merge`.
pub fn checks_passed(reports: &[Report]) -> bool {
    verdict(reports, false)
}

fn verdict(reports: &[Report], thresholds: bool) -> bool {
    let mut passed = true;
    for r in reports {
        let run = if reports.len() > 1 { format!("{}: ", r.name) } else { String::new() };
        for f in r.failures() {
            eprintln!("etcdlat: check failed: {run}{f}");
            passed = false;
        }
        let violations = if thresholds { r.violations() } else { Vec::new() };
        for v in violations {
            eprintln!("etcdlat: threshold failed: {run}{v}");
            passed = false;
        }
    }
    passed
}
