//! Comparisons of two runs as markdown, to paste into documents and issues.

use std::fmt::Write;

use crate::markdown::qps;
use etcdlat_core::comparison::{Comparison, Figure, MIN_INTERVALS};
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
            out.push_str("| Metric | Base | New | Change | Beyond noise |\n");
            out.push_str("| --- | ---: | ---: | ---: | :---: |\n");
            for row in &op.rows {
                let value =
                    |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| cell(row.figure, v));
                let change = row.change_pct.map_or_else(|| "-".to_owned(), |p| format!("{p:+.1}%"));
                let marker = match row.significant {
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
            out.push('\n');
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
    }
    out
}

fn cell(figure: Figure, value: f64) -> String {
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
