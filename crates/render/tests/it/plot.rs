//! The SVG plots and the HTML page, on the fixed reports of [`crate::fixture`].
//!
//! Pixels are not compared: each document is parsed as XML and its outline (elements and
//! their counts, the texts of titles, axes, ticks and legends; the page's headings and
//! table headers) is snapshotted, and key properties are asserted: the spectrum has its two
//! series and percentile ticks, an empty plot says why it is empty, and the page refers to
//! nothing outside itself and escapes what it shows.

use std::collections::BTreeMap;
use std::fmt::Write;

use etcdlat_core::{HashKvCheck, OpKind, Report, ReportSet, WatchAccounting};
use etcdlat_render::{self as render, plot};

use crate::fixture::{mixed_interrupted_report, put_report, range_report, steps_report};

/// The colors plot.rs draws latency and service time in, as the SVG writes them.
const LATENCY_STROKE: &str = "#D62728";
const SERVICE_STROKE: &str = "#1F77B4";
/// The colors of the client steps' throughput and p99 latency.
const THROUGHPUT_STROKE: &str = "#1F77B4";
const P99_STROKE: &str = "#FF7F0E";

/// Parses a document as XML, failing the test with the parser's message.
pub(crate) fn parse(doc: &str) -> roxmltree::Document<'_> {
    // The page starts with `<!DOCTYPE html>`, a DTD to an XML parser.
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    roxmltree::Document::parse_with_options(doc, options)
        .unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{}", excerpt(doc, &e)))
}

fn excerpt(doc: &str, e: &roxmltree::Error) -> String {
    let line = e.pos().row as usize;
    doc.lines().skip(line.saturating_sub(3)).take(5).collect::<Vec<_>>().join("\n")
}

/// An SVG's outline: each element name with its count, then every text in document order.
pub(crate) fn svg_outline(svg: &str) -> String {
    let doc = parse(svg);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
    assert!(root.attribute("viewBox").is_some(), "a viewBox, so the plot scales");
    let mut counts = BTreeMap::new();
    for n in root.descendants().filter(roxmltree::Node::is_element) {
        *counts.entry(n.tag_name().name()).or_insert(0) += 1;
    }
    let mut out = String::from("elements:\n");
    for (name, n) in counts {
        let _ = writeln!(out, "  {name}: {n}");
    }
    out.push_str("texts:\n");
    for t in texts(&doc) {
        let _ = writeln!(out, "  {t}");
    }
    out
}

/// The contents of every `<text>` element, in order.
pub(crate) fn texts(doc: &roxmltree::Document<'_>) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_owned())
        .collect()
}

/// The points of every polyline drawn in `stroke`.
pub(crate) fn polylines(doc: &roxmltree::Document<'_>, stroke: &str) -> Vec<Vec<(f64, f64)>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(stroke))
        .map(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').expect("x,y");
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

/// A report with no operations at all: nothing ran.
fn empty_report() -> Report {
    let mut r = put_report();
    r.ops.clear();
    r.duration_s = 0.0;
    r
}

#[test]
fn latency_over_time_outline() {
    let svg = plot::latency_over_time(&put_report(), OpKind::Put);
    insta::assert_snapshot!(svg_outline(&svg));
}

#[test]
fn throughput_over_time_outline_with_two_kinds() {
    let svg = plot::throughput_over_time(&mixed_interrupted_report());
    insta::assert_snapshot!(svg_outline(&svg));
}

#[test]
fn percentile_spectrum_outline() {
    let svg = plot::percentile_spectrum(&put_report(), OpKind::Put);
    insta::assert_snapshot!(svg_outline(&svg));
}

#[test]
fn spectrum_has_latency_and_service_time_on_a_percentile_axis() {
    let svg = plot::percentile_spectrum(&put_report(), OpKind::Put);
    let doc = parse(&svg);
    let texts = texts(&doc);
    for label in [
        "put-256b: put latency by percentile (2,000 requests)",
        "percentile",
        "latency (ms)",
        "latency (from intended start)",
        "service time (from send)",
    ] {
        assert!(texts.iter().any(|t| t == label), "{label:?} in {texts:?}");
    }
    // One tick per nine, equally spaced: the log scale of 1 / (1 - q).
    let ticks: Vec<&str> = texts.iter().map(String::as_str).filter(|t| t.ends_with('%')).collect();
    assert_eq!(ticks, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);

    // Each series is one curve plus its legend mark.
    let latency = polylines(&doc, LATENCY_STROKE);
    let service = polylines(&doc, SERVICE_STROKE);
    assert_eq!(latency.len(), 2, "latency curve and legend");
    assert_eq!(service.len(), 2, "service time curve and legend");
    let (latency, service) = (&latency[0], &service[0]);
    assert_eq!(latency.len(), 251, "50 points per decade over five decades");
    // Latency never falls as the percentile rises (SVG y grows downwards).
    assert!(latency.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 <= w[0].1), "{latency:?}");
    // The fixture queued requests before sending them: service time is below latency.
    assert!(
        latency.iter().zip(service).any(|(l, s)| s.1 > l.1),
        "service time below latency somewhere"
    );
    assert!(latency.iter().zip(service).all(|(l, s)| s.1 >= l.1), "never above");
}

#[test]
fn coinciding_latency_and_service_time_are_one_line_and_titles_name_the_kind_once() {
    let mut report = put_report();
    report.name = "put".to_owned();
    let op = report.ops.get_mut(&OpKind::Put).unwrap();
    op.service_time = op.latency.clone();
    let doc_text = plot::percentile_spectrum(&report, OpKind::Put);
    let doc = parse(&doc_text);
    let texts = texts(&doc);
    let legend = "latency = service time (each request sent when intended)";
    assert!(texts.iter().any(|t| t == legend), "{texts:?}");
    assert!(!texts.iter().any(|t| t.starts_with("service time")), "{texts:?}");
    assert_eq!(polylines(&doc, LATENCY_STROKE).len(), 2, "one curve and its legend mark");
    assert!(polylines(&doc, SERVICE_STROKE).is_empty());
    assert!(texts.iter().any(|t| t == "put latency by percentile (2,000 requests)"), "{texts:?}");

    let over_time = plot::latency_over_time(&report, OpKind::Put);
    let texts = crate::plot::texts(&parse(&over_time));
    assert!(texts.iter().any(|t| t == "put latency per interval"), "{texts:?}");
    let throughput = plot::throughput_over_time(&report);
    let texts = crate::plot::texts(&parse(&throughput));
    assert!(texts.iter().any(|t| t == "put: throughput per interval"), "{texts:?}");
}

#[test]
fn latency_over_time_breaks_where_nothing_succeeded() {
    let mut report = put_report();
    let op = report.ops.get_mut(&OpKind::Put).unwrap();
    op.intervals[1].count = 0;
    let svg = plot::latency_over_time(&report, OpKind::Put);
    let doc = parse(&svg);
    // p50 (blue) in two pieces around the empty interval, plus its legend mark.
    let p50 = polylines(&doc, "#1F77B4");
    assert_eq!(p50.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 2], "{p50:?}");
}

#[test]
fn empty_plots_are_drawn_with_a_note() {
    let empty = empty_report();
    let cases = [
        (plot::latency_over_time(&empty, OpKind::Put), "the run sent no put requests"),
        (plot::percentile_spectrum(&empty, OpKind::Put), "the run sent no put requests"),
        (plot::throughput_over_time(&empty), "no request completed"),
        (plot::steps(&empty), "the run had no client steps"),
        // Ranges that all failed: there are intervals, but no latency.
        (
            plot::latency_over_time(&mixed_interrupted_report(), OpKind::Range),
            "no range request succeeded",
        ),
        (
            plot::percentile_spectrum(&mixed_interrupted_report(), OpKind::Range),
            "no range request succeeded",
        ),
    ];
    for (svg, note) in cases {
        let doc = parse(&svg);
        let texts = texts(&doc);
        assert!(texts.iter().any(|t| t == note), "{note:?} in {texts:?}");
        assert!(texts.iter().any(|t| t.starts_with("latency (") || t == "requests per second"));
    }
}

#[test]
fn steps_outline() {
    insta::assert_snapshot!(svg_outline(&plot::steps(&steps_report())));
}

#[test]
fn steps_plot_throughput_and_p99_against_clients() {
    let report = steps_report();
    let svg = plot::steps(&report);
    let doc = parse(&svg);
    let texts = texts(&doc);
    for label in ["clients", "requests per second", "p99 latency (ms)", "throughput (ok/s, left)"] {
        assert!(texts.iter().any(|t| t == label), "{label:?} in {texts:?}");
    }
    // One point per step on each line, left to right as the clients grow; both rise (SVG's
    // y grows downwards): more throughput, and a longer tail.
    for color in [THROUGHPUT_STROKE, P99_STROKE] {
        // The first line of its color; the legend's sample is the second.
        let lines = polylines(&doc, color);
        assert_eq!(lines.len(), 2, "{color}: {lines:?}");
        let points = &lines[0];
        assert_eq!(points.len(), 3, "{color}: {points:?}");
        assert!(
            points.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 < w[0].1),
            "{color}: {points:?}"
        );
    }
    // Clients on a log axis: 4 is as far from 1 as 16 from 4.
    let x: Vec<f64> = polylines(&doc, THROUGHPUT_STROKE)[0].iter().map(|p| p.0).collect();
    assert!(((x[1] - x[0]) - (x[2] - x[1])).abs() < 2.0, "{x:?}");
}

#[test]
fn names_in_titles_are_escaped() {
    let mut report = put_report();
    report.name = "a<b & \"c\"".to_owned();
    for svg in [
        plot::latency_over_time(&report, OpKind::Put),
        plot::throughput_over_time(&report),
        plot::percentile_spectrum(&report, OpKind::Put),
    ] {
        let doc = parse(&svg);
        assert!(texts(&doc).iter().any(|t| t.starts_with("a<b & \"c\": ")), "{svg}");
    }
}

/// Every run type the page has a section for: a put run, a range run on three members with
/// server metrics, a run with two kinds, interrupted, and a watch run with a failed check.
fn page_set() -> ReportSet {
    let mut watch = range_report();
    watch.name = "watch".to_owned();
    watch.scenario.description = "events from <every> put & more".to_owned();
    watch.watch = Some(WatchAccounting {
        streams: 2,
        watchers: 10,
        puts: 100,
        expected: 1_000,
        received: 998,
        missing: 2,
        ..WatchAccounting::default()
    });
    watch.hashkv = Some(HashKvCheck {
        revision: 101,
        compact_revision: 1,
        members: [("m0".to_owned(), 7), ("m1".to_owned(), 7), ("m2".to_owned(), 7)].into(),
        consistent: true,
    });
    let mut set =
        ReportSet::new(vec![put_report(), range_report(), mixed_interrupted_report(), watch]);
    set.etcdlat_version = "0.0.0-test".to_owned();
    set
}

/// The text inside a node, all of it.
pub(crate) fn all_text(node: roxmltree::Node<'_, '_>) -> String {
    node.descendants().filter(roxmltree::Node::is_text).filter_map(|t| t.text()).collect()
}

/// The page's outline: headings, tables (caption and header cells), figures (plot titles).
pub(crate) fn page_outline(page: &str) -> String {
    let doc = parse(page);
    let mut out = String::new();
    for n in doc.descendants().filter(roxmltree::Node::is_element) {
        let name = n.tag_name().name();
        let text = || all_text(n);
        match name {
            "title" if n.parent_element().is_some_and(|p| p.has_tag_name("head")) => {
                let _ = writeln!(out, "title: {}", text());
            }
            "h1" | "h2" | "h3" => {
                let _ = writeln!(out, "{name}: {}", text());
            }
            "p" if n.attribute("class").is_some_and(|c| c != "description") => {
                let _ = writeln!(out, "p.{}: {}", n.attribute("class").unwrap(), text());
            }
            "table" => {
                let heads: Vec<String> =
                    n.descendants().filter(|d| d.has_tag_name("th")).map(all_text).collect();
                let rows = n.descendants().filter(|d| d.has_tag_name("tr")).count();
                let caption = n
                    .children()
                    .find(|c| c.has_tag_name("caption"))
                    .map(|c| format!("[{}] ", c.text().unwrap_or("")))
                    .unwrap_or_default();
                let _ = writeln!(out, "table {caption}({rows} rows): {}", heads.join(" | "));
            }
            "svg" => {
                let title = n.descendants().find(|d| d.has_tag_name("text")).and_then(|t| t.text());
                let _ = writeln!(out, "svg: {}", title.unwrap_or("").trim());
            }
            "summary" => {
                let _ = writeln!(out, "details: {}", text());
            }
            _ => {}
        }
    }
    out
}

#[test]
fn html_outline() {
    insta::assert_snapshot!(page_outline(&render::html(&page_set())));
}

#[test]
fn html_refers_to_nothing_outside_itself() {
    let page = render::html(&page_set());
    for needle in ["<link", "<script", "src=", "url(", "@import", "<img", "<iframe"] {
        assert!(!page.contains(needle), "{needle:?} in the page");
    }
    let doc = parse(&page);
    let csp = doc
        .descendants()
        .find(|n| n.attribute("http-equiv") == Some("Content-Security-Policy"))
        .and_then(|n| n.attribute("content"));
    assert_eq!(csp, Some("default-src 'none'; style-src 'unsafe-inline'"));
    for n in doc.descendants().filter(roxmltree::Node::is_element) {
        for a in n.attributes() {
            if a.name() == "href" {
                assert!(a.value().starts_with('#'), "only links within the page: {}", a.value());
            }
        }
    }
    // Every plot inline, each one a well-formed SVG document on its own.
    let svgs: Vec<&str> = page
        .match_indices("<svg ")
        .map(|(start, _)| {
            let end = page[start..].find("</svg>").expect("closed") + start + "</svg>".len();
            &page[start..end]
        })
        .collect();
    // Per run: two per kind (5 kinds over 4 runs) and one of throughput; the resource plots
    // of each run that sampled resources; and five of the runs side by side
    // (render/overlay.rs): throughput, p99, the members' CPU and memory, latency by keys.
    let sampled = page_set().runs.iter().filter(|r| !r.server.is_empty()).count();
    assert_eq!(svgs.len(), 2 * 5 + 4 + sampled * plot::Resource::ALL.len() + 5);
    for svg in svgs {
        svg_outline(svg);
    }
}

#[test]
fn html_escapes_report_text() {
    let mut report = range_report();
    report.name = "<script>alert(1)</script> & co".to_owned();
    report.server[0].name = "<m0>".to_owned();
    report.target.endpoints = vec!["http://a?b=1&c=2".to_owned()];
    let page = render::html(&ReportSet::new(vec![report]));
    assert!(!page.contains("<script>"));
    assert!(!page.contains("<m0>"));
    let doc = parse(&page);
    let h2 = doc.descendants().find(|n| n.has_tag_name("h2")).unwrap();
    assert_eq!(h2.text(), Some("Run 1: <script>alert(1)</script> & co"));
    let shown = all_text(doc.root());
    assert!(shown.contains("<m0>"));
    assert!(shown.contains("http://a?b=1&c=2"));
}

#[test]
fn html_of_no_runs_and_of_a_run_with_nothing_in_it() {
    for set in [ReportSet::new(Vec::new()), ReportSet::new(vec![empty_report()])] {
        let page = render::html(&set);
        parse(&page);
        assert!(page.ends_with("</html>\n"));
    }
}

#[test]
fn resource_plots_outline() {
    let report = crate::fixture::external_member_report();
    for what in [plot::Resource::Cpu, plot::Resource::Network, plot::Resource::DiskSectors] {
        insta::assert_snapshot!(
            format!("resource_over_time_{what:?}"),
            svg_outline(&plot::resource_over_time(&report, what))
        );
    }
}

#[test]
fn a_resource_plot_has_a_line_per_member_and_the_client_and_disks_once() {
    let report = range_report();
    let cpu = plot::resource_over_time(&report, plot::Resource::Cpu);
    let doc = parse(&cpu);
    let legend = texts(&doc);
    for name in ["m0", "m1", "m2", "client"] {
        assert!(legend.iter().any(|t| t == name), "{name} in {legend:?}");
    }
    // Three members on one disk: its figures are drawn once, named after the device.
    let disk = plot::resource_over_time(&report, plot::Resource::DiskRequests);
    let legend = texts(&parse(&disk));
    assert!(legend.iter().any(|t| t == "vda reads"), "{legend:?}");
    assert_eq!(legend.iter().filter(|t| t.ends_with(" reads")).count(), 1, "{legend:?}");
    // Nothing sampled: the plot says so.
    let empty = plot::resource_over_time(&put_report(), plot::Resource::Memory);
    assert!(texts(&parse(&empty)).iter().any(|t| t == "no resident memory was sampled"));
}
