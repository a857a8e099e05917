//! `etcdlat merge` and `etcdlat compare`: commands that read JSON reports instead of
//! running load.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::comparison::compare_sets;
use etcdlat_core::merge::merge_labeled;
use etcdlat_core::render::heatmap;
use etcdlat_core::report::SCHEMA_VERSION;
use etcdlat_core::{ReportSet, Threshold, render};

use crate::output;
use crate::plan::{ComparePlan, MergePlan};
use crate::verdict::{self, Verdict};

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
pub fn merge(plan: &MergePlan) -> Result<Verdict> {
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
            output::print(&format!("{}\n", render::text(run, &plan.text)))?;
        }
    }
    plan.outputs.write(&merged)?;
    Ok(if verdict::passed(&merged.runs) { Verdict::Done } else { Verdict::Failed })
}

/// `etcdlat compare`: two reports side by side as markdown, run `i` with run `i`; with
/// `--heatmap`, the heatmaps of the change from one matrix's runs to the other's.
pub fn compare(plan: &ComparePlan) -> Result<Verdict> {
    let base = read_set(&plan.base)?;
    let new = read_set(&plan.new)?;
    // Checked before anything is written.
    let heatmaps = match &plan.heatmap {
        Some(to) => {
            let maps = heatmap::difference(&base.runs, &new.runs)
                .map_err(|e| anyhow!("--heatmap: {e}"))?;
            Some((to, maps))
        }
        None => None,
    };
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
    let text = render::comparison::markdown(&comparisons);
    if plan.print {
        output::print(&text)?;
    }
    if let Some(t) = &plan.markdown {
        t.write(&text)?;
    }
    if let Some(t) = &plan.json {
        let json = serde_json::to_string_pretty(&comparisons).context("writing JSON")?;
        t.write(&(json + "\n"))?;
    }
    if let Some((to, maps)) = heatmaps {
        to.write(&maps)?;
    }
    Ok(Verdict::Done)
}
