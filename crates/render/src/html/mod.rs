//! One self-contained HTML page of every run: what ran, a summary table per run, the plots
//! of [`crate::plot`] inline, the server, member, resource and watch figures when
//! the run has them, and dbtester's figures; the heatmaps of [`crate::heatmap`]
//! first when the runs are a matrix over two axes.
//!
//! The page needs nothing but itself: the style is inline, the plots are inline SVG, and it
//! refers to no script, stylesheet, font or image, so it can be mailed, attached to an issue
//! or opened offline; its content security policy has the browser refuse anything else.
//! It is also well-formed XML, so tools can parse it. Every text from a report (scenario
//! and member names, endpoints, error codes) is escaped.
//!
//! Latencies in the tables are milliseconds with three decimals; sizes are in decimal units
//! (`33.6 MB`).
//!
//! ```
//! use etcdlat_core::ReportSet;
//! use etcdlat_render as render;
//! # fn page(runs: Vec<etcdlat_core::Report>) {
//! let page = render::html(&ReportSet::new(runs));
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! # }
//! ```

use std::fmt::Write;

use crate::columns::Columns;
use crate::markdown::qps;
use crate::{heatmap, overlay, plot};
use etcdlat_core::metrics::{MemberMetrics, ResourceSample, ResourceSeries, metric};
use etcdlat_core::report::{OpReport, Report, ReportSet, Row, TargetInfo};
use etcdlat_core::unit::thousands;

mod finding;
mod kubernetes;
mod run;
mod server;

/// Shown where a cell has no value.
const MISSING: &str = "–";

/// A content security policy that holds the page to what it is: nothing to load, nothing to
/// run, only its inline style.
const CSP: &str = concat!(
    "<meta http-equiv=\"Content-Security-Policy\" ",
    "content=\"default-src 'none'; style-src 'unsafe-inline'\"/>\n"
);

/// The page's style: readable tables with right-aligned numbers, plots scaled to the width.
const STYLE: &str = "
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif;
  margin: 0 auto; padding: 1.5rem 2rem 3rem; max-width: 1280px; color: #1f2328; background: #fff;
  line-height: 1.45; }
h1 { font-size: 1.7rem; margin: 0 0 .25rem; }
h2 { font-size: 1.35rem; margin: 2.5rem 0 .5rem; padding-top: .75rem;
  border-top: 2px solid #d0d7de; }
h3 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
p.meta { color: #59636e; margin: 0 0 1rem; }
p.description { margin: .25rem 0 .75rem; }
.warning, .failure { padding: .5rem .75rem; border-radius: 4px; }
.warning { background: #fff8c5; border: 1px solid #d4a72c; }
.failure { background: #ffebe9; border: 1px solid #cf222e; }
.grid { display: flex; flex-wrap: wrap; gap: 1rem 2.5rem; align-items: flex-start; }
table { border-collapse: collapse; font-size: .9rem; margin: .25rem 0 1rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .6rem; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; }
table.kv th { background: #f6f8fa; font-weight: 600; }
table.kv td.n { text-align: left; }
table.columns tbody th { text-align: right; background: #f6f8fa; font-weight: 600; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.scroll { overflow-x: auto; }
.bad { color: #cf222e; font-weight: 600; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(480px, 1fr)); gap: 1rem; }
figure { margin: 0; border: 1px solid #d0d7de; border-radius: 4px; padding: .25rem; }
figure svg { display: block; width: 100%; height: auto; }
pre { background: #f6f8fa; padding: .75rem; overflow-x: auto; font-size: .85rem; }
footer { margin-top: 3rem; color: #59636e; font-size: .85rem; }
";

/// Renders every run of `set` as one HTML page.
///
/// When the runs are those of a matrix over two axes, its heatmaps come first
/// ([`heatmap::of_runs`]). With several runs, the page then shows them side by side:
/// dbtester's figures in a column per run ([`Columns`]), and plots with a line per run
/// ([`overlay`]): throughput and p99 latency over time, the members' average CPU and memory
/// over time when the reports sampled them, and latency and memory by keys written when the
/// runs wrote keys.
///
/// Then for each run, in order: what ran (scenario, target, etcd version and members, load
/// parameters); a results table with a row per operation kind (requests, errors by code
/// with the server's message for each when there was one, throughput, latency
/// min/mean/p50/p90/p99/p99.9/p99.99/max and service time p50/p99); per kind, its latency
/// per interval and percentile spectrum; the throughput per interval; the client steps, a
/// row each and their plot against clients, when the run had them; then, when present,
/// requests by member, leader changes, server metrics, etcdlat's own usage, each member's
/// and the client's resources (a table, and plots over time of CPU, memory, context
/// switches, storage I/O, disk requests and sectors, network and data dir size), watch
/// accounting and the HashKV check; dbtester's figures (every row of its table, each
/// unknown one with why); and the scenario itself.
#[must_use]
pub fn html(set: &ReportSet) -> String {
    page(set, &Columns::new(&set.runs))
}

/// Renders the runs of several report files as one HTML page, as [`html()`] renders the
/// runs of one (`etcdlat compare` and `etcdlat merge` with `--html`): each file's runs in
/// order, the files in order, side by side in a column each headed by its file's name
/// ([`Columns::of_files`]), and overlaid in the plots, a line each named by its column.
#[must_use]
pub fn of_files(files: &[(&str, &ReportSet)]) -> String {
    let runs: Vec<Report> = files.iter().flat_map(|(_, set)| set.runs.iter().cloned()).collect();
    let mut set = ReportSet::new(runs);
    if let Some((_, first)) = files.first() {
        set.etcdlat_version.clone_from(&first.etcdlat_version);
    }
    let table = Columns::of_files(files.iter().map(|(name, set)| (*name, &set.runs[..])));
    page(&set, &table)
}

/// The page of `set`, its runs side by side as `table` has them.
fn page(set: &ReportSet, table: &Columns) -> String {
    let mut p = Page { out: String::with_capacity(64 * 1024) };
    let names: Vec<&str> = set.runs.iter().map(|r| r.name.as_str()).collect();
    p.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    // The browser itself refuses anything but the inline style: no script, no fetch.
    p.raw(CSP);
    p.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    p.raw("<title>");
    p.text(&format!("etcdlat report: {}", names.join(", ")));
    p.raw("</title>\n<style>");
    p.raw(STYLE);
    p.raw("</style>\n</head>\n<body>\n<header>\n<h1>etcdlat report</h1>\n<p class=\"meta\">");
    let s = if set.runs.len() == 1 { "" } else { "s" };
    p.text(&format!(
        "{} run{s} · etcdlat {} · report schema {}",
        set.runs.len(),
        set.etcdlat_version,
        set.schema_version
    ));
    p.raw("</p>\n");
    if set.runs.len() > 1 {
        p.raw("<nav>\n<ol>\n<li><a href=\"#side-by-side\">Runs side by side</a></li>\n");
        for (i, r) in set.runs.iter().enumerate() {
            let _ = write!(p.out, "<li><a href=\"#run-{}\">", i + 1);
            p.text(&r.name);
            p.raw("</a></li>\n");
        }
        p.raw("</ol>\n</nav>\n");
    }
    p.raw("</header>\n<main>\n");
    if set.runs.is_empty() {
        p.raw("<p>No runs.</p>\n");
    }
    if let Ok(maps) = heatmap::of_runs(&set.runs) {
        p.heatmaps(&maps);
    }
    if set.runs.len() > 1 {
        p.side_by_side(&set.runs, table);
    }
    for (i, run) in set.runs.iter().enumerate() {
        p.run(i + 1, run);
    }
    p.raw("</main>\n<footer>Written by etcdlat ");
    p.text(&set.etcdlat_version);
    p.raw(". Latency counts from a request's intended start, service time from its send.");
    p.raw("</footer>\n</body>\n</html>\n");
    p.out
}

/// The page being written.
struct Page {
    out: String,
}

/// A table cell: escaped text, right-aligned when numeric, flagged when it reports a fault.
struct Cell {
    text: String,
    numeric: bool,
    bad: bool,
}

fn cell(text: impl Into<String>) -> Cell {
    Cell { text: text.into(), numeric: false, bad: false }
}

fn num(text: impl Into<String>) -> Cell {
    Cell { text: text.into(), numeric: true, bad: false }
}

/// A count, flagged when it is not zero.
fn fault(n: u64) -> Cell {
    Cell { text: thousands(n), numeric: true, bad: n > 0 }
}

impl Page {
    fn raw(&mut self, html: &str) {
        self.out.push_str(html);
    }

    fn text(&mut self, text: &str) {
        escape_into(&mut self.out, text);
    }

    fn heading(&mut self, level: u8, text: &str) {
        let _ = write!(self.out, "<h{level}>");
        self.text(text);
        let _ = writeln!(self.out, "</h{level}>");
    }

    /// Every run side by side: dbtester's figures in a column each, and the plots that
    /// overlay them.
    fn side_by_side(&mut self, runs: &[Report], table: &Columns) {
        self.raw("<section id=\"side-by-side\">\n");
        self.heading(2, "Runs side by side");
        self.raw("<div class=\"scroll\">\n<table class=\"columns\">\n<thead>\n<tr><th>");
        self.text(&table.corner);
        self.raw("</th>");
        for header in &table.headers {
            self.raw("<th class=\"n\">");
            for (i, line) in header.iter().enumerate() {
                if i > 0 {
                    self.raw("<br/>");
                }
                self.text(line);
            }
            self.raw("</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        for (label, cells) in table.labelled() {
            self.raw("<tr><th>");
            self.text(&label);
            self.raw("</th>");
            for cell in cells {
                match &cell.why_unknown {
                    // The reason on hover; the notes below say it too.
                    Some(why) => {
                        self.raw("<td class=\"n\" title=\"");
                        self.text(why);
                        self.raw("\">");
                    }
                    None => self.raw("<td class=\"n\">"),
                }
                self.text(&cell.text);
                self.raw("</td>");
            }
            self.raw("</tr>\n");
        }
        self.raw("</tbody>\n</table>\n</div>\n");
        for line in table.method() {
            self.raw("<p class=\"description\">");
            self.text(&line);
            self.raw("</p>\n");
        }
        let notes = table.notes();
        if !notes.is_empty() {
            self.raw("<p class=\"description\">n/a: not known to the run, because:</p>\n");
            self.notes(&notes);
        }
        let labels = table.line_labels(runs);
        let overlaid: Vec<overlay::Run<'_>> = labels.iter().map(String::as_str).zip(runs).collect();
        self.heading(3, "Over time");
        self.raw("<div class=\"plots\">\n");
        for (_, svg) in overlay::over_time(&overlaid) {
            self.figure(&svg);
        }
        self.raw("</div>\n");
        let members = overlay::members_over_time(&overlaid);
        if !members.is_empty() {
            self.heading(3, "etcd's own figures, per member");
            self.raw("<div class=\"plots\">\n");
            for (_, svg) in &members {
                self.figure(svg);
            }
            self.raw("</div>\n");
        }
        let by_keys = overlay::by_keys_written(&overlaid);
        if !by_keys.is_empty() {
            self.heading(3, "By keys written");
            self.raw("<div class=\"plots\">\n");
            for (_, svg) in &by_keys {
                self.figure(svg);
            }
            self.raw("</div>\n");
        }
        self.raw("</section>\n");
    }

    /// The heatmaps of a matrix over two axes, a figure each.
    fn heatmaps(&mut self, maps: &[heatmap::Heatmap]) {
        let Some(first) = maps.first() else { return };
        self.raw("<section id=\"heatmaps\">\n");
        self.heading(2, &format!("Heatmaps: {} × {}", first.rows.name, first.columns.name));
        self.raw("<div class=\"plots\">\n");
        for map in maps {
            self.figure(&heatmap::svg(std::slice::from_ref(map)));
        }
        self.raw("</div>\n</section>\n");
    }

    fn figure(&mut self, svg: &str) {
        self.raw("<figure>\n");
        // plotters writes an XML prolog-free <svg> root: it embeds in HTML as it is.
        self.raw(svg.trim());
        self.raw("\n</figure>\n");
    }

    fn table(&mut self, headers: &[&str], rows: Vec<Vec<Cell>>) {
        self.raw("<div class=\"scroll\">\n<table>\n<thead>\n<tr>");
        let numeric: Vec<bool> =
            rows.first().map_or_else(Vec::new, |r| r.iter().map(|c| c.numeric).collect());
        for (i, h) in headers.iter().enumerate() {
            self.raw(if numeric.get(i) == Some(&true) { "<th class=\"n\">" } else { "<th>" });
            self.text(h);
            self.raw("</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        for row in rows {
            self.row(row);
        }
        self.raw("</tbody>\n</table>\n</div>\n");
    }

    fn kv_table(&mut self, caption: &str, rows: &[(&str, Cell)]) {
        self.raw("<table class=\"kv\">\n");
        if !caption.is_empty() {
            self.raw("<caption>");
            self.text(caption);
            self.raw("</caption>\n");
        }
        for (name, value) in rows {
            self.raw("<tr><th>");
            self.text(name);
            self.raw("</th>");
            self.cell(value);
            self.raw("</tr>\n");
        }
        self.raw("</table>\n");
    }

    fn row(&mut self, cells: Vec<Cell>) {
        self.raw("<tr>");
        for c in &cells {
            self.cell(c);
        }
        self.raw("</tr>\n");
    }

    fn cell(&mut self, c: &Cell) {
        self.raw(match (c.numeric, c.bad) {
            (true, true) => "<td class=\"n bad\">",
            (true, false) => "<td class=\"n\">",
            (false, true) => "<td class=\"bad\">",
            (false, false) => "<td>",
        });
        self.text(&c.text);
        self.raw("</td>");
    }
}

/// Microseconds as milliseconds with three decimals.
fn ms(us: u64) -> String {
    format!("{:.3}", us as f64 / 1e3)
}

fn opt_ms(us: Option<u64>) -> String {
    us.map_or_else(|| MISSING.to_owned(), ms)
}

fn opt_count(n: Option<u64>) -> String {
    n.map_or_else(|| MISSING.to_owned(), thousands)
}

/// Bytes in decimal units with one decimal (`33.6 MB`), or `–`.
fn bytes(n: Option<u64>) -> String {
    n.map_or_else(|| MISSING.to_owned(), super::decimal_bytes)
}

/// Percent with one decimal, or `–`.
fn percent(p: Option<f64>) -> String {
    p.map_or_else(|| MISSING.to_owned(), |p| format!("{p:.1}"))
}

/// Escapes text for HTML element content and double-quoted attribute values.
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        let mut out = String::new();
        escape_into(&mut out, "<a href='x'>&\"</a>");
        assert_eq!(out, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
    }

    #[test]
    fn figures_are_formatted_with_units() {
        assert_eq!(ms(815), "0.815");
        assert_eq!(ms(4_000_000), "4000.000");
        assert_eq!(bytes(Some(33_600_000)), "33.6 MB");
        assert_eq!(bytes(Some(10_001)), "10.0 kB");
        assert_eq!(bytes(Some(512)), "512 B");
        assert_eq!(bytes(None), MISSING);
    }
}
