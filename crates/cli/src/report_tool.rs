//! `etcdlat merge` and `etcdlat compare`: commands that read JSON reports instead of
//! running load.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::comparison::compare_sets;
use etcdlat_core::merge::merge_labeled;
use etcdlat_core::repeat::Repeats;
use etcdlat_core::report::SCHEMA_VERSION;
use etcdlat_core::{ReportSet, Threshold};
use etcdlat_render as render;
use etcdlat_render::columns::Columns;
use etcdlat_render::heatmap;

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

/// `etcdlat compare`: every run of the reports side by side as markdown (dbtester's figures,
/// a column per run, or per cell of repeats with each figure's interval); before it, when
/// the runs are repeats of cells, every cell compared with the first by Welch's t-test on
/// the repeats' values, else, for two reports, the second's runs beside the first's, run `i`
/// with run `i`, no change marked (one run: no interval); with `--heatmap` (two reports),
/// the heatmaps of the change from one matrix's runs to the other's; with `--html` and
/// `--plots`, the runs of every report side by side and overlaid, as a matrix's are.
pub fn compare(plan: &ComparePlan) -> Result<Verdict> {
    let sets = plan.inputs.iter().map(|p| read_set(p)).collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = plan.inputs.iter().map(|p| p.display().to_string()).collect();
    // Checked before anything is written.
    let heatmaps = match (&plan.heatmap, &sets[..]) {
        (Some(to), [base, new]) => {
            let maps = heatmap::difference(&base.runs, &new.runs)
                .map_err(|e| anyhow!("--heatmap: {e}"))?;
            Some((to, maps))
        }
        (Some(_), _) => bail!("--heatmap compares exactly two reports, not {}", sets.len()),
        (None, _) => None,
    };
    let headers = file_names(&plan.inputs);
    let labelled = sets.iter().zip(&headers).flat_map(|(set, name)| {
        let label = (sets.len() > 1).then_some(name.as_str());
        set.runs.iter().map(move |r| (label, r))
    });
    let mut text = String::new();
    if let Some(repeats) = Repeats::of_labeled(labelled) {
        // Repeats: every cell against the first, judged from the runs' variance.
        let comparisons = repeats.compare(plan.level);
        text = render::comparison::repeats_markdown(&comparisons);
        text.push('\n');
        if let Some(t) = &plan.json {
            let json = serde_json::to_string_pretty(&comparisons).context("writing JSON")?;
            t.write(&(json + "\n"))?;
        }
    } else if sets.len() == 1 {
        bail!(
            "compare needs two REPORTs, or one REPORT whose matrix repeats its cells (run --repeat 3); {} has no repeats",
            names[0]
        );
    } else if let [base, new] = &sets[..] {
        if base.runs.len() != new.runs.len() {
            bail!(
                "{}: {} runs, but {} has {}; runs are compared one to one",
                names[1],
                new.runs.len(),
                names[0],
                base.runs.len()
            );
        }
        let mut comparisons = compare_sets(base, new)?;
        // One run each has no interval across runs: no change is claimed.
        for row in comparisons.iter_mut().flat_map(|c| &mut c.ops).flat_map(|op| &mut op.rows) {
            row.significant = None;
            row.noise = None;
        }
        text = render::comparison::markdown_one_run(&comparisons);
        text.push('\n');
        if let Some(t) = &plan.json {
            let json = serde_json::to_string_pretty(&comparisons).context("writing JSON")?;
            t.write(&(json + "\n"))?;
        }
    } else if plan.json.is_some() {
        bail!(
            "--json writes the comparison of two reports (BASE NEW), or of cells of repeats, not of {} reports of single runs",
            sets.len()
        );
    }
    let files = || headers.iter().map(String::as_str).zip(sets.iter().map(|s| &s.runs[..]));
    text.push_str("## Runs side by side\n\n");
    text.push_str(&Columns::of_files(files()).markdown());
    if plan.print {
        output::print(&text)?;
    }
    if let Some(t) = &plan.markdown {
        t.write(&text)?;
    }
    if let Some(t) = &plan.html {
        let files: Vec<(&str, &ReportSet)> =
            headers.iter().map(String::as_str).zip(&sets).collect();
        t.write(&render::html::of_files(&files))?;
    }
    if let Some(dir) = &plan.plots {
        let runs: Vec<etcdlat_core::Report> =
            sets.iter().flat_map(|s| s.runs.iter().cloned()).collect();
        output::write_plots(dir, &runs, &Columns::of_files(files()))?;
    }
    if let Some((to, maps)) = heatmaps {
        to.write(&maps)?;
    }
    Ok(Verdict::Done)
}

/// What heads each file's columns: its name without the directories when those tell the
/// files apart (`a.json`), else the path as given.
fn file_names(paths: &[PathBuf]) -> Vec<String> {
    let short: Vec<String> = paths
        .iter()
        .map(|p| {
            p.file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
        })
        .collect();
    let distinct = short.iter().enumerate().all(|(i, n)| !short[..i].contains(n));
    if distinct { short } else { paths.iter().map(|p| p.display().to_string()).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_as_briefly_as_tells_them_apart() {
        let paths = |ps: &[&str]| ps.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(file_names(&paths(&["/tmp/x/a.json", "b.json"])), ["a.json", "b.json"]);
        assert_eq!(file_names(&paths(&["v1/r.json", "v2/r.json"])), ["v1/r.json", "v2/r.json"]);
    }
}
