//! One self-contained HTML page of every run: what ran, a summary table per run, the plots
//! of [`crate::render::plot`] inline, the server, member, resource and watch figures when
//! the run has them, and dbtester's figures; the heatmaps of [`crate::render::heatmap`]
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
//! use etcdlat_core::{ReportSet, render};
//! # fn page(runs: Vec<etcdlat_core::Report>) {
//! let page = render::html(&ReportSet::new(runs));
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! # }
//! ```

use std::fmt::Write;

use crate::metrics::{MemberMetrics, ResourceSample, ResourceSeries, metric};
use crate::render::columns::Columns;
use crate::render::markdown::qps;
use crate::render::{heatmap, overlay, plot};
use crate::report::{OpReport, Report, ReportSet, Row, TargetInfo};
use crate::unit::thousands;

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
        p.side_by_side(&set.runs);
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

/// A row of the server metrics table: its name, the metric it is read from (of
/// [`metric`]), and the figure of one member.
type MetricRow = (&'static str, Option<&'static str>, fn(&MemberMetrics) -> String);

/// A row of the resources table: its name, and one series' figure.
type ResourceRow<'a> = (&'static str, &'a dyn Fn(&ResourceSeries) -> String);

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
    fn side_by_side(&mut self, runs: &[Report]) {
        let table = Columns::new(runs);
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
        for figures in &table.rows {
            self.raw("<tr><th>");
            self.text(figures.row.label());
            self.raw("</th>");
            for cell in &figures.cells {
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
        let notes = table.notes();
        if !notes.is_empty() {
            self.raw("<p class=\"description\">n/a: not known to the run, because:</p>\n");
            self.notes(&notes);
        }
        let labels: Vec<String> = (0..runs.len()).map(|i| table.label(i)).collect();
        let overlaid: Vec<overlay::Run<'_>> = labels.iter().map(String::as_str).zip(runs).collect();
        self.heading(3, "Over time");
        self.raw("<div class=\"plots\">\n");
        self.figure(&overlay::throughput_over_time(&overlaid));
        self.figure(&overlay::p99_over_time(&overlaid));
        for svg in
            [overlay::server_cpu_over_time(&overlaid), overlay::server_memory_over_time(&overlaid)]
                .into_iter()
                .flatten()
        {
            self.figure(&svg);
        }
        self.raw("</div>\n");
        let by_keys: Vec<String> =
            [overlay::latency_by_keys(&overlaid), overlay::server_memory_by_keys(&overlaid)]
                .into_iter()
                .flatten()
                .collect();
        if !by_keys.is_empty() {
            self.heading(3, "By keys written");
            self.raw("<div class=\"plots\">\n");
            for svg in &by_keys {
                self.figure(svg);
            }
            self.raw("</div>\n");
        }
        self.raw("</section>\n");
    }

    fn run(&mut self, n: usize, run: &Report) {
        let _ = writeln!(self.out, "<section id=\"run-{n}\">");
        self.heading(2, &format!("Run {n}: {}", run.name));
        if !run.scenario.description.is_empty() {
            self.raw("<p class=\"description\">");
            self.text(&run.scenario.description);
            self.raw("</p>\n");
        }
        if run.interrupted {
            self.raw(
                "<p class=\"warning\">Interrupted: the figures cover what ran before the stop.",
            );
            self.raw("</p>\n");
        }
        if let Some(f) = run.scale {
            self.raw("<p class=\"description\">");
            self.text(&format!(
                "Scaled run (--scale {f}): the scenario's totals and durations multiplied by {f}."
            ));
            self.raw("</p>\n");
        }
        for failure in run.failures() {
            self.raw("<p class=\"failure\">Check failed: ");
            self.text(&failure);
            self.raw("</p>\n");
        }
        if !run.alarms.is_empty() {
            self.heading(3, "Alarms");
            self.raw(
                "<p class=\"warning\">etcd's alarms when the run ended. NOSPACE: the database \
                 reached its quota and the cluster refuses writes.</p>\n",
            );
            let rows = run.alarms.iter().map(|a| vec![cell(&a.member), cell(&a.alarm)]).collect();
            self.table(&["Member", "Alarm"], rows);
        }

        self.heading(3, "What ran");
        self.raw("<div class=\"grid\">\n");
        self.kv_table("Target", &target_rows(run));
        self.kv_table("Load", &load_rows(run));
        self.raw("</div>\n");

        self.heading(3, "Results");
        self.results(run);

        for &kind in run.ops.keys() {
            self.heading(3, &format!("{kind}: latency"));
            self.raw("<div class=\"plots\">\n");
            self.figure(&plot::latency_over_time(run, kind));
            self.figure(&plot::percentile_spectrum(run, kind));
            self.raw("</div>\n");
        }
        self.heading(3, "Throughput");
        self.raw("<div class=\"plots\">\n");
        self.figure(&plot::throughput_over_time(run));
        self.raw("</div>\n");
        if !run.steps.is_empty() {
            self.steps(run);
        }

        if !run.members.is_empty() {
            self.heading(3, "Requests by member");
            let rows = run
                .members
                .iter()
                .map(|m| {
                    vec![
                        cell(&m.name),
                        cell(&m.id),
                        num(thousands(m.ok)),
                        num(qps(m.throughput)),
                        num(ms(m.latency.quantile_us(0.5))),
                        num(ms(m.latency.quantile_us(0.99))),
                        num(ms(m.latency.max_us())),
                    ]
                })
                .collect();
            self.table(
                &[
                    "Member",
                    "ID",
                    "OK",
                    "Throughput (ops/s)",
                    "Latency p50 (ms)",
                    "Latency p99 (ms)",
                    "Latency max (ms)",
                ],
                rows,
            );
        }
        if !run.leader_changes.is_empty() {
            self.heading(3, "Leader changes");
            let rows = run
                .leader_changes
                .iter()
                .map(|c| vec![num(format!("{:.3}", c.t_s)), cell(&c.from), cell(&c.to)])
                .collect();
            self.table(&["At (s since start)", "From", "To"], rows);
        }
        if !run.server.is_empty() {
            self.heading(3, "Server metrics");
            self.server(&run.server, &run.target);
        }
        if let Some(c) = &run.client {
            self.heading(3, "Client (etcdlat)");
            self.kv_table(
                "",
                &[
                    ("CPU user", num(format!("{:.2} s", c.user_cpu_s))),
                    ("CPU system", num(format!("{:.2} s", c.system_cpu_s))),
                    ("Max RSS", num(bytes(Some(c.max_rss_bytes)))),
                ],
            );
        }
        let sampled = run.server.iter().any(|m| !m.resources.is_empty())
            || run.client.as_ref().is_some_and(|c| !c.resources.is_empty());
        if sampled {
            self.heading(3, "Server and client resources");
            self.resources(run);
            self.raw("<div class=\"plots\">\n");
            for what in plot::Resource::ALL {
                self.figure(&plot::resource_over_time(run, what));
            }
            self.raw("</div>\n");
        }
        self.heading(3, "dbtester's figures");
        let study = run.study();
        let rows: Vec<(&str, Cell)> = Row::ALL
            .into_iter()
            .map(|row| {
                let text = match study.why_unknown(row) {
                    Some(why) => format!("{} ({why})", study.cell(row)),
                    None => study.cell(row),
                };
                (row.label(), num(text))
            })
            .collect();
        self.kv_table("", &rows);
        if let Some(w) = &run.watch {
            self.heading(3, "Watch accounting");
            let mut rows = vec![
                ("Streams", num(thousands(w.streams))),
                ("Watchers", num(thousands(w.watchers))),
                ("Puts", num(thousands(w.puts))),
                ("Events expected", num(thousands(w.expected))),
                ("Events received", num(thousands(w.received))),
            ];
            // As in the text report, only when there is something to say.
            if w.uncertain_puts > 0 {
                rows.push((
                    "Events from puts with unknown outcome",
                    num(format!(
                        "up to {} ({} puts)",
                        thousands(w.uncertain_events),
                        thousands(w.uncertain_puts)
                    )),
                ));
            }
            if w.unexplained > 0 {
                rows.push(("Unexplained", fault(w.unexplained)));
            }
            rows.extend([
                ("Missing", fault(w.missing)),
                ("Duplicate", fault(w.duplicate)),
                ("Out of order", fault(w.out_of_order)),
                ("Before put acknowledged", num(thousands(w.before_ack))),
            ]);
            self.kv_table("", &rows);
        }
        if let Some(h) = &run.hashkv {
            self.heading(3, "HashKV check");
            let mut rows = vec![
                ("Revision", num(h.revision.to_string())),
                ("Compact revision", num(h.compact_revision.to_string())),
            ];
            for (member, hash) in &h.members {
                rows.push((member.as_str(), num(hash.to_string())));
            }
            rows.push((
                "Consistent",
                Cell {
                    text: if h.consistent { "yes" } else { "NO" }.to_owned(),
                    numeric: false,
                    bad: !h.consistent,
                },
            ));
            self.kv_table("", &rows);
        }
        if let Some(a) = &run.audit {
            self.audit(a);
        }

        self.raw("<details>\n<summary>Scenario</summary>\n<pre>");
        let scenario = toml::to_string_pretty(&run.scenario)
            .or_else(|_| serde_json::to_string_pretty(&run.scenario))
            .unwrap_or_default();
        self.text(&scenario);
        self.raw("</pre>\n</details>\n</section>\n");
    }

    /// The client steps: a row per step (its errors flagged), and throughput and p99
    /// latency against clients.
    fn steps(&mut self, run: &Report) {
        self.heading(3, "Client steps");
        let rows = run
            .steps
            .iter()
            .map(|s| {
                let latency = |q: f64| {
                    num(if s.ok == 0 { MISSING.to_owned() } else { ms(s.latency.quantile_us(q)) })
                };
                vec![
                    num(thousands(u64::from(s.clients))),
                    num(thousands(s.active_clients)),
                    num(format!("{:.3}", s.start_s)),
                    num(format!("{:.3}", s.duration_s)),
                    num(thousands(s.requests())),
                    fault(s.errors_total),
                    num(qps(s.throughput)),
                    latency(0.5),
                    latency(0.9),
                    latency(0.99),
                    latency(0.999),
                ]
            })
            .collect();
        self.table(
            &[
                "Clients",
                "Clients that sent",
                "Start (s)",
                "Duration (s)",
                "Requests",
                "Errors",
                "Throughput (ops/s)",
                "p50 (ms)",
                "p90 (ms)",
                "p99 (ms)",
                "p99.9 (ms)",
            ],
            rows,
        );
        self.raw("<div class=\"plots\">\n");
        self.figure(&plot::steps(run));
        self.raw("</div>\n");
    }

    /// The audit: its counts (violations flagged), serializable staleness per member, and
    /// the first offending requests.
    fn audit(&mut self, a: &crate::audit::AuditReport) {
        self.heading(3, "Audit");
        let mut rows = vec![
            (
                "Requests audited",
                num(format!("{} of {}", thousands(a.audited), thousands(a.issued))),
            ),
            ("Writes acknowledged", num(thousands(a.writes))),
            ("Revisions", num(format!("{} to {}", a.first_revision, a.last_revision))),
            ("Writes refused", num(thousands(a.failed_writes))),
            ("Writes of unknown outcome", num(thousands(a.unknown_outcome))),
        ];
        match &a.read_back_error {
            Some(e) => {
                rows.push(("Read back", Cell { text: e.clone(), numeric: false, bad: true }))
            }
            None => rows.extend([
                ("Keys read back", num(thousands(a.keys_read_back))),
                ("Puts read at their revision", num(thousands(a.puts_read_at_revision))),
                ("Puts compacted before read", num(thousands(a.puts_compacted))),
            ]),
        }
        rows.extend([
            ("Lost writes", fault(a.lost)),
            ("Order violations", fault(a.order_violations)),
            ("Duplicate revisions", fault(a.duplicate_revisions)),
            ("Linearizable reads", num(thousands(a.linearizable_reads))),
            ("Stale linearizable reads", fault(a.stale_reads)),
            ("Serializable reads", num(thousands(a.serializable_reads))),
        ]);
        self.kv_table("", &rows);
        if let Some(all) = &a.serializable_staleness {
            let row = |name: &str, s: &crate::audit::Staleness| {
                vec![
                    cell(name),
                    num(thousands(s.reads)),
                    num(thousands(s.behind)),
                    num(s.p50_revisions.to_string()),
                    num(s.p99_revisions.to_string()),
                    num(s.max_revisions.to_string()),
                    num(format!("{:.3}", s.p50_ms)),
                    num(format!("{:.3}", s.p99_ms)),
                    num(format!("{:.3}", s.max_ms)),
                ]
            };
            let mut rows = vec![row("all", all)];
            rows.extend(a.members.iter().map(|m| row(&m.name, &m.staleness)));
            self.table(
                &[
                    "Serializable staleness",
                    "Reads",
                    "Behind",
                    "Revisions p50",
                    "Revisions p99",
                    "Revisions max",
                    "ms p50",
                    "ms p99",
                    "ms max",
                ],
                rows,
            );
        }
        if !a.violations.is_empty() {
            let rows = a
                .violations
                .iter()
                .map(|v| {
                    vec![Cell { text: v.check.clone(), numeric: false, bad: true }, cell(&v.detail)]
                })
                .collect();
            self.table(&["Check", "Offending request"], rows);
        }
    }

    /// One row per operation kind (and one for all kinds together, if the run has it).
    fn results(&mut self, run: &Report) {
        self.raw("<div class=\"scroll\">\n<table class=\"results\">\n<thead>\n<tr>");
        self.raw("<th rowspan=\"2\">Operation</th><th rowspan=\"2\" class=\"n\">OK</th>");
        self.raw("<th rowspan=\"2\" class=\"n\">Errors</th><th rowspan=\"2\">Errors by code</th>");
        self.raw("<th rowspan=\"2\" class=\"n\">Throughput (ops/s)</th>");
        self.raw("<th colspan=\"8\">Latency (ms)</th>");
        self.raw("<th colspan=\"2\">Service time (ms)</th></tr>\n<tr>");
        for h in ["min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max", "p50", "p99"] {
            let _ = write!(self.out, "<th class=\"n\">{h}</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        let all = run.all.as_ref().map(|a| ("all", a));
        for (name, op) in run.ops.iter().map(|(k, o)| (k.name(), o)).chain(all) {
            self.row(result_row(name, op));
        }
        self.raw("</tbody>\n</table>\n</div>\n");
        let mut notes = Vec::new();
        for (kind, op) in &run.ops {
            if op.clamped > 0 {
                notes.push(format!(
                    "{kind}: {} values outside 1 µs .. 1 h were clamped into the histograms",
                    thousands(op.clamped)
                ));
            }
            if op.retries > 0 {
                notes.push(format!(
                    "{kind}: {} retries (counted in latency)",
                    thousands(op.retries)
                ));
            }
            if op.keys > 0 || op.value_bytes > 0 {
                notes.push(format!(
                    "{kind}: {} keys, {} of values",
                    thousands(op.keys),
                    bytes(Some(op.value_bytes))
                ));
            }
        }
        self.notes(&notes);
    }

    /// A list of notes under a table; nothing when there are none.
    fn notes(&mut self, notes: &[String]) {
        if notes.is_empty() {
            return;
        }
        self.raw("<ul class=\"notes\">\n");
        for n in notes {
            self.raw("<li>");
            self.text(n);
            self.raw("</li>\n");
        }
        self.raw("</ul>\n");
    }

    /// Server metrics with a column per member and a row per figure; a figure the member's
    /// etcd does not export is "unavailable on etcd X".
    fn server(&mut self, members: &[MemberMetrics], target: &TargetInfo) {
        let figures: [MetricRow; 18] = [
            ("Scrapes ok / failed", None, |m| format!("{} / {}", m.samples, m.failed_samples)),
            ("RSS avg", Some(metric::RSS), |m| bytes(m.rss_avg_bytes)),
            ("RSS max", Some(metric::RSS), |m| bytes(m.rss_max_bytes)),
            ("CPU", Some(metric::CPU), |m| {
                m.cpu_s.map_or_else(|| MISSING.to_owned(), |s| format!("{s:.2} s"))
            }),
            ("DB size", Some(metric::DB_SIZE), |m| bytes(m.db_size_bytes)),
            ("WAL fsync p50 (ms)", Some(metric::WAL_FSYNC), |m| opt_ms(m.wal_fsync_p50_us)),
            ("WAL fsync p99 (ms)", Some(metric::WAL_FSYNC), |m| opt_ms(m.wal_fsync_p99_us)),
            ("Backend commit p50 (ms)", Some(metric::BACKEND_COMMIT), |m| {
                opt_ms(m.backend_commit_p50_us)
            }),
            ("Backend commit p99 (ms)", Some(metric::BACKEND_COMMIT), |m| {
                opt_ms(m.backend_commit_p99_us)
            }),
            ("Proposals committed", Some(metric::PROPOSALS_COMMITTED), |m| {
                opt_count(m.proposals_committed)
            }),
            ("Proposals failed", Some(metric::PROPOSALS_FAILED), |m| opt_count(m.proposals_failed)),
            ("Proposals pending (max)", Some(metric::PROPOSALS_PENDING), |m| {
                opt_count(m.proposals_pending_max)
            }),
            ("Leader changes seen", Some(metric::LEADER_CHANGES), |m| opt_count(m.leader_changes)),
            ("Peer sent", Some(metric::PEER_SENT), |m| bytes(m.peer_sent_bytes)),
            ("Peer received", Some(metric::PEER_RECEIVED), |m| bytes(m.peer_received_bytes)),
            ("gRPC sent", Some(metric::GRPC_SENT), |m| bytes(m.grpc_sent_bytes)),
            ("gRPC received", Some(metric::GRPC_RECEIVED), |m| bytes(m.grpc_received_bytes)),
            ("Last scrape error", None, |m| {
                m.last_error.clone().unwrap_or_else(|| MISSING.to_owned())
            }),
        ];
        self.raw("<div class=\"scroll\">\n<table class=\"server\">\n<thead>\n<tr><th>Metric</th>");
        for m in members {
            self.raw("<th class=\"n\">");
            self.text(&m.name);
            self.raw("</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        for (name, read_from, figure) in figures {
            let shown = |m: &MemberMetrics| match (figure(m), read_from) {
                (v, Some(metric)) if v == MISSING => {
                    m.absent(metric, &target.etcd_version, target.members, MISSING)
                }
                (v, _) => v,
            };
            let values: Vec<String> = members.iter().map(shown).collect();
            if name == "Last scrape error" && values.iter().all(|v| v == MISSING) {
                continue;
            }
            let mut row = vec![Cell { text: name.to_owned(), numeric: false, bad: false }];
            row.extend(values.into_iter().map(num));
            self.row(row);
        }
        self.raw("</tbody>\n</table>\n</div>\n");
    }

    /// Each member's and the client's resources over the run, a column each: CPU, memory,
    /// context switches, storage I/O, data dir, disk, network, and what could not be
    /// sampled, with why.
    fn resources(&mut self, run: &Report) {
        let mut columns: Vec<(&str, &ResourceSeries)> =
            run.server.iter().map(|m| (m.name.as_str(), &m.resources)).collect();
        if let Some(c) = &run.client {
            columns.push(("client", &c.resources));
        }
        let count = |n: Option<u64>| n.map_or_else(|| MISSING.to_owned(), thousands);
        // A member's traffic is its gRPC and peer bytes; the client's its sockets'.
        let in_out = |grpc: Option<u64>, peer: Option<u64>, socket: Option<u64>| match (grpc, peer)
        {
            (None, None) => bytes(socket),
            (g, p) => bytes(Some(g.unwrap_or(0) + p.unwrap_or(0))),
        };
        let rows: [ResourceRow<'_>; 15] = [
            ("CPU average (% of a core)", &|r| percent(r.cpu_avg_percent())),
            ("CPU busiest second (% of a core)", &|r| percent(r.cpu_max_percent())),
            ("RSS max", &|r| bytes(r.max(|s| s.rss_bytes))),
            ("Context switches, voluntary", &|r| count(r.total(|s| s.voluntary_ctxt_switches))),
            ("Context switches, involuntary", &|r| {
                count(r.total(|s| s.nonvoluntary_ctxt_switches))
            }),
            ("Storage read", &|r| bytes(r.total(|s| s.read_bytes))),
            ("Storage written", &|r| bytes(r.total(|s| s.write_bytes))),
            ("Read / write system calls", &|r| {
                format!(
                    "{} / {}",
                    count(r.total(|s| s.read_syscalls)),
                    count(r.total(|s| s.write_syscalls))
                )
            }),
            ("Data dir (end)", &|r| bytes(r.last(|s| s.data_dir_bytes))),
            ("WAL / snapshots and db (end)", &|r| {
                format!("{} / {}", bytes(r.last(|s| s.wal_bytes)), bytes(r.last(|s| s.snap_bytes)))
            }),
            ("Disk (machine-wide)", &|r| {
                r.disk.as_ref().map_or_else(
                    || MISSING.to_owned(),
                    |d| {
                        let n = |f: fn(&ResourceSample) -> Option<u64>| count(r.total(f));
                        format!(
                            "{} ({}): {} reads, {} writes, {} / {} sectors",
                            d.name,
                            d.device,
                            n(|s| s.disk_reads_completed),
                            n(|s| s.disk_writes_completed),
                            n(|s| s.disk_sectors_read),
                            n(|s| s.disk_sectors_written)
                        )
                    },
                )
            }),
            ("Network in", &|r| {
                in_out(
                    r.total(|s| s.grpc_received_bytes),
                    r.total(|s| s.peer_received_bytes),
                    r.total(|s| s.received_bytes),
                )
            }),
            ("Network out", &|r| {
                in_out(
                    r.total(|s| s.grpc_sent_bytes),
                    r.total(|s| s.peer_sent_bytes),
                    r.total(|s| s.sent_bytes),
                )
            }),
            ("Samples", &|r| format!("{} every {} s", r.samples.len(), r.period_s)),
            ("Not available", &|r| {
                if r.not_available.is_empty() {
                    return MISSING.to_owned();
                }
                r.not_available
                    .iter()
                    .map(|n| format!("{}: {}", n.source.replace('_', " "), n.why))
                    .collect::<Vec<_>>()
                    .join("; ")
            }),
        ];
        self.raw(
            "<div class=\"scroll\">\n<table class=\"resources\">\n<thead>\n<tr><th>Figure</th>",
        );
        for (name, _) in &columns {
            self.raw("<th class=\"n\">");
            self.text(name);
            self.raw("</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        for (name, figure) in rows {
            let values: Vec<String> = columns.iter().map(|(_, r)| figure(r)).collect();
            if name == "Not available" && values.iter().all(|v| v == MISSING) {
                continue;
            }
            // Words wrap; numbers stay on one line, aligned.
            let words = matches!(name, "Disk (machine-wide)" | "Not available");
            let mut row = vec![cell(name)];
            row.extend(values.into_iter().map(if words { cell } else { num }));
            self.row(row);
        }
        self.raw("</tbody>\n</table>\n</div>\n");
        self.raw(
            "<p class=\"description\">CPU is in percent of one core (200: two cores busy). \
             The disk figures count every process's I/O on the device that holds the data \
             dir, not only the member's: members on one disk count the same requests.</p>\n",
        );
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

fn result_row(name: &str, op: &OpReport) -> Vec<Cell> {
    let errors_by_code = if op.errors.is_empty() {
        MISSING.to_owned()
    } else {
        op.errors
            .iter()
            .map(|(code, n)| match op.error_messages.get(code) {
                Some(message) => format!("{code} {} ({message})", thousands(*n)),
                None => format!("{code} {}", thousands(*n)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lat = &op.latency;
    let svc = &op.service_time;
    let latency = |us: u64| if lat.count() > 0 { ms(us) } else { MISSING.to_owned() };
    let service = |us: u64| if svc.count() > 0 { ms(us) } else { MISSING.to_owned() };
    let mut row = vec![
        cell(name),
        num(thousands(op.ok)),
        fault(op.errors_total),
        Cell { text: errors_by_code, numeric: false, bad: op.errors_total > 0 },
        num(qps(op.throughput)),
        num(latency(lat.min_us())),
        num(if lat.count() > 0 {
            format!("{:.3}", lat.mean_us() / 1e3)
        } else {
            MISSING.to_owned()
        }),
    ];
    for q in [0.5, 0.9, 0.99, 0.999, 0.9999] {
        row.push(num(latency(lat.quantile_us(q))));
    }
    row.push(num(latency(lat.max_us())));
    row.push(num(service(svc.quantile_us(0.5))));
    row.push(num(service(svc.quantile_us(0.99))));
    row
}

fn target_rows(run: &Report) -> Vec<(&'static str, Cell)> {
    let t = &run.target;
    let or_missing = |s: &str| if s.is_empty() { MISSING.to_owned() } else { s.to_owned() };
    let endpoints =
        if t.endpoints.is_empty() { MISSING.to_owned() } else { t.endpoints.join(", ") };
    vec![
        ("Cluster", cell(if t.local { "throwaway local cluster" } else { "given endpoints" })),
        ("Endpoints", cell(endpoints)),
        ("Load sent to", cell(t.role_summary().unwrap_or_else(|| run.targeting().to_string()))),
        ("etcd version", cell(or_missing(&t.etcd_version))),
        ("Members", num(t.members.to_string())),
        ("Leader", cell(or_missing(&t.leader))),
        ("Cluster ID", cell(or_missing(&t.cluster_id))),
        ("Started", cell(or_missing(&run.started_at))),
        ("Measured time", num(format!("{:.3} s", run.duration_s))),
    ]
}

fn load_rows(run: &Report) -> Vec<(&'static str, Cell)> {
    let p = &run.params;
    let mut rows = vec![
        ("Operation", cell(&p.op)),
        ("Connections", num(thousands(u64::from(p.conns)))),
        ("Clients", num(thousands(u64::from(p.clients)))),
        ("Workers", num(thousands(u64::from(p.workers)))),
        (
            "Rate",
            num(if p.rate == 0 {
                "unlimited (closed loop)".to_owned()
            } else {
                format!("{} req/s (open loop)", thousands(p.rate))
            }),
        ),
    ];
    if let Some(total) = p.total {
        rows.push(("Total requests", num(thousands(total))));
    }
    if let Some(d) = p.duration_s {
        rows.push(("Duration", num(format!("{d} s"))));
    }
    if p.warmup_s > 0.0 {
        rows.push(("Warm-up", num(format!("{} s", p.warmup_s))));
    }
    if let Some(v) = p.key_size {
        rows.push(("Key size", num(format!("{} B", thousands(v)))));
    }
    if let Some(v) = p.val_size {
        rows.push(("Value size", num(format!("{} B", thousands(v)))));
    }
    if let Some(v) = p.key_space_size {
        rows.push(("Key space", num(thousands(v))));
    }
    if let Some(v) = p.sequential_keys {
        rows.push(("Sequential keys", cell(if v { "yes" } else { "no" })));
    }
    if let Some(c) = &p.consistency {
        let name = match c.as_str() {
            "l" => "linearizable (l)",
            "s" => "serializable (s)",
            other => other,
        };
        rows.push(("Consistency", cell(name)));
    }
    rows.push(("Seed", num(p.seed.to_string())));
    rows
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
