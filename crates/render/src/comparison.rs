//! Comparisons as markdown, to paste into documents and issues: of two runs
//! ([`markdown`], [`markdown_one_run`]), or of cells of repeats ([`repeats_markdown`]).

use std::fmt::Write;

use crate::markdown::qps;
use etcdlat_core::comparison::{Comparison, Figure, MIN_INTERVALS};
use etcdlat_core::repeat::{CellComparison, Estimate, MIN_REPEATS, Verdict};
use etcdlat_core::unit::thousands;

/// Renders comparisons as markdown: a `##` heading per pair of runs (the name, or
/// `base vs new` when they differ), a `###` heading and a table per operation kind with the
/// columns *Metric*, *Base*, *New*, *Change* and *Beyond noise* (`yes`, `no`, or `-` when
/// the noise could not be estimated), and a line saying how the noise was estimated.
///
/// Throughput has one decimal and thousands separators, latencies are milliseconds with
/// three decimals (seconds from one second on), changes are percent with one decimal and a
/// sign; `-` where a run has no value.
#[must_use]
pub fn markdown(comparisons: &[Comparison]) -> String {
    tables(comparisons, true)
}

/// Renders comparisons of single runs as markdown, honestly: the figures and their change,
/// and no change marked, since one run has no interval across runs to judge a change by
/// (the spread inside a run ignores how runs differ from each other); each comparison says
/// so ([`ONE_RUN`]).
#[must_use]
pub fn markdown_one_run(comparisons: &[Comparison]) -> String {
    tables(comparisons, false)
}

/// The tables of [`markdown`] (`judged`: marked beyond noise or not from the runs'
/// intervals) or of [`markdown_one_run`].
fn tables(comparisons: &[Comparison], judged: bool) -> String {
    let mut out = String::new();
    for (i, c) in comparisons.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if c.base == c.new {
            let _ = writeln!(out, "## {}", c.base);
        } else {
            let _ = writeln!(out, "## {} vs {}", c.base, c.new);
        }
        for op in &c.ops {
            let _ = writeln!(out, "\n### {}\n", op.kind);
            let column = if judged { "Beyond noise" } else { "Changed" };
            let _ = writeln!(out, "| Metric | Base | New | Change | {column} |");
            out.push_str("| --- | ---: | ---: | ---: | :---: |\n");
            for row in &op.rows {
                let value =
                    |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| cell(row.figure, v));
                let change = row.change_pct.map_or_else(|| "-".to_owned(), |p| format!("{p:+.1}%"));
                let marker = match row.significant {
                    _ if !judged => "one run: no interval",
                    Some(true) => "**yes**",
                    Some(false) => "no",
                    None => "-",
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {change} | {marker} |",
                    row.figure.title(),
                    value(row.base),
                    value(row.new),
                );
            }
            if judged {
                out.push('\n');
                noise_note(&mut out, op);
            }
        }
        if !judged {
            let _ = writeln!(out, "\n{ONE_RUN}");
        }
    }
    out
}

/// How an operation's noise was estimated, or why not.
fn noise_note(out: &mut String, op: &etcdlat_core::comparison::OpComparison) {
    if op.base_intervals == 0 || op.new_intervals == 0 {
        let only = if op.base_intervals == 0 { "new" } else { "base" };
        let _ = writeln!(out, "Only the {only} run sent {} requests.", op.kind);
    } else if op.noise_estimated() {
        let _ = writeln!(
            out,
            "Beyond noise: the change exceeds twice its standard error, estimated from the spread over {} base and {} new intervals.",
            op.base_intervals, op.new_intervals
        );
    } else {
        let _ = writeln!(
            out,
            "Not enough intervals to estimate noise ({} base, {} new; {MIN_INTERVALS} needed in each).",
            op.base_intervals, op.new_intervals
        );
    }
}

/// What a comparison of single runs says of its changes.
pub const ONE_RUN: &str = "One run each: no interval, so no change is marked. Repeat the runs (`--repeat 3` or more) to judge changes by Welch's t-test on the repeats.";

/// Renders comparisons of cells of repeats as markdown: a `##` heading per cell compared
/// with the base, a table of every figure (dbtester's, then each operation's) with the
/// means ± their 95% intervals, the change of the means, the p-value of Welch's t-test and
/// whether it is a change at the level (`**changed**`, `no`, `not enough repeats` below
/// three repeats on a side, `-` when unknown), and a line that states the test.
#[must_use]
pub fn repeats_markdown(comparisons: &[CellComparison]) -> String {
    let mut out = String::new();
    for (i, c) in comparisons.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "## {} vs {}\n", c.new, c.base);
        out.push_str("| Figure | Base | New | Change | p | Changed |\n");
        out.push_str("| --- | ---: | ---: | ---: | ---: | :---: |\n");
        for change in &c.changes {
            let format = |v: f64| match (change.row(), change.op_figure()) {
                (Some(row), _) => row.format(v),
                (None, Some(figure)) => cell(figure, v),
                (None, None) => format!("{v:.3}"),
            };
            let estimate = |e: &Option<Estimate>| match e {
                Some(Estimate { mean, half_width: Some(h), .. }) => {
                    format!("{} ± {}", format(*mean), format(*h))
                }
                Some(e) => format(e.mean),
                None => "-".to_owned(),
            };
            let label = match (change.op, change.row(), change.op_figure()) {
                (None, Some(row), _) => row.label().to_owned(),
                (Some(kind), _, Some(figure)) => format!("{kind} {}", figure.title()),
                _ => change.figure.clone(),
            };
            let pct = change.change_pct.map_or_else(|| "-".to_owned(), |p| format!("{p:+.1}%"));
            let p = change.welch.map_or_else(|| "-".to_owned(), |w| format!("{:.3}", w.p));
            let verdict = match change.verdict {
                Verdict::Changed => "**changed**",
                v => v.describe(),
            };
            let _ = writeln!(
                out,
                "| {label} | {} | {} | {pct} | {p} | {verdict} |",
                estimate(&change.base),
                estimate(&change.new)
            );
        }
        let changed = c.changes.iter().filter(|x| x.verdict == Verdict::Changed).count();
        let _ = writeln!(
            out,
            "\n{changed} changed. {} at level {} ({} and {} repeats; a change is judged with at least {MIN_REPEATS} on each side); each figure is the mean ± its 95% confidence interval (Student's t).",
            c.test, c.level, c.base_repeats, c.new_repeats
        );
    }
    out
}

/// A figure's value as the tables write it: throughput with one decimal, latencies in
/// milliseconds (seconds from one second on), errors as a count.
pub(crate) fn cell(figure: Figure, value: f64) -> String {
    match figure {
        Figure::Throughput => qps(value),
        Figure::Errors => thousands(value as u64),
        Figure::P50 | Figure::P99 | Figure::P99_9 if value >= 1e6 => {
            format!("{:.3}s", value / 1e6)
        }
        Figure::P50 | Figure::P99 | Figure::P99_9 => format!("{:.3}ms", value / 1e3),
        // A figure core adds later (`Figure` grows) shows its value until it has a format.
        _ => format!("{value:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells() {
        assert_eq!(cell(Figure::P99, 815.0), "0.815ms");
        assert_eq!(cell(Figure::P99_9, 4_000_000.0), "4.000s");
        assert_eq!(cell(Figure::Throughput, 44_341.0), "44,341.0");
        assert_eq!(cell(Figure::Errors, 1234.0), "1,234");
    }
}
