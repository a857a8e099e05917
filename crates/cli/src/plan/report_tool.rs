//! `etcdlat merge` and `etcdlat compare`, validated: the reports they read and the files
//! they write.

use std::path::PathBuf;

use anyhow::{Result, bail};
use etcdlat_core::repeat::LEVEL;
use etcdlat_render::TextOptions;

use crate::command_line::{CompareArgs, Global, MergeArgs};
use crate::output::{Heatmaps, Outputs, Target, check_dir, targets};

/// `etcdlat merge`, validated.
#[derive(Debug)]
pub struct MergePlan {
    /// The shards' reports, in order.
    pub inputs: Vec<PathBuf>,
    /// `--threshold` expressions, checked on the merged report with the scenario's own.
    pub thresholds: Vec<String>,
    /// Text report options.
    pub text: TextOptions,
    /// Print the text report of the merged runs.
    pub print_text: bool,
    /// The merged report's files: JSON, markdown, interval CSV, HTML, perfdash, plots,
    /// heatmaps.
    pub outputs: Outputs,
}

/// `etcdlat compare`, validated.
#[derive(Debug)]
pub struct ComparePlan {
    /// The reports, one or more: cells of repeats are compared with the first cell; else,
    /// with two reports, the first is the base the second is compared against.
    pub inputs: Vec<PathBuf>,
    /// Print the markdown comparison on standard output.
    pub print: bool,
    /// Markdown comparison destination.
    pub markdown: Option<Target>,
    /// JSON comparison destination (of cells of repeats, or of two reports).
    pub json: Option<Target>,
    /// HTML page destination: the reports' runs side by side and overlaid.
    pub html: Option<Target>,
    /// Directory the SVG plots are written into: each run's, and those that overlay them.
    pub plots: Option<PathBuf>,
    /// Where the heatmaps of the change go, when the reports are of a matrix over two axes.
    pub heatmap: Option<Heatmaps>,
    /// The level of Welch's t-test on repeats (`--level`, 0.05 unless told).
    pub level: f64,
}

/// The report files of `merge` and `compare`, checked (`--plots`' directory too); at most
/// one writes to standard output.
fn output_flags(g: &Global) -> Result<[Option<Target>; 5]> {
    if g.jsonl.is_some() {
        bail!("--jsonl streams a run as it goes; it does not apply to merge or compare");
    }
    let targets = targets([
        ("--json", g.json.as_deref()),
        ("--markdown", g.markdown.as_deref()),
        ("--csv", g.csv.as_deref()),
        ("--perfdash", g.perfdash.as_deref()),
        ("--html", g.html.as_deref()),
    ])?;
    if let Some(dir) = &g.plots {
        check_dir(dir, "--plots")?;
    }
    Ok(targets)
}

/// `etcdlat merge REPORT...`.
pub fn merge_plan(args: &MergeArgs, g: &Global) -> Result<MergePlan> {
    let [json, markdown, csv, perfdash, html] = output_flags(g)?;
    let heatmap = g.heatmap.as_deref().map(Heatmaps::new).transpose()?;
    let plots = g.plots.clone();
    let outputs =
        Outputs { json, markdown, csv, html, perfdash, plots, heatmap, ..Outputs::default() };
    Ok(MergePlan {
        inputs: args.reports.clone(),
        thresholds: g.threshold.clone(),
        text: TextOptions { precise: g.precise, sample: g.sample },
        print_text: !g.quiet && !outputs.to_stdout(),
        outputs,
    })
}

/// `etcdlat compare REPORT REPORT...`.
pub fn compare_plan(args: &CompareArgs, g: &Global) -> Result<ComparePlan> {
    if !g.threshold.is_empty() {
        bail!("--threshold applies to runs and merged reports, not to compare");
    }
    let [json, markdown, csv, perfdash, html] = output_flags(g)?;
    if csv.is_some() {
        bail!("--csv does not apply to compare");
    }
    if perfdash.is_some() {
        bail!("--perfdash does not apply to compare");
    }
    let level = args.level.unwrap_or(LEVEL);
    if !(level > 0.0 && level < 1.0) {
        bail!("--level is the test's level, between 0 and 1 (like 0.05), got {level}");
    }
    let to_stdout = [&json, &markdown, &html].iter().any(|t| matches!(t, Some(Target::Stdout)));
    Ok(ComparePlan {
        inputs: args.reports.clone(),
        print: !g.quiet && !to_stdout,
        markdown,
        json,
        html,
        plots: g.plots.clone(),
        heatmap: g.heatmap.as_deref().map(Heatmaps::new).transpose()?,
        level,
    })
}
