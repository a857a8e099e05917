//! A run as JSON lines (`--jsonl`): one object per interval of the time series while the run
//! goes, then one for the whole run, each on one line, all of one shape:
//!
//! ```json
//! {"type":"interval","run":"put","start_s":1.0,"end_s":1.02,"ops":{"put":{"count":20,"errors":0,"throughput":1000.0,"p50_us":812,"p90_us":1105,"p99_us":2001,"max_us":2001}}}
//! {"type":"summary","run":"put","start_s":0.0,"end_s":3.001,"interrupted":false,"ops":{"put":{"count":600,...}}}
//! ```
//!
//! `count` is successful requests, `errors` failed ones, `throughput` successful requests per
//! second of the line's span, and the percentiles are latency in microseconds (0 when
//! nothing succeeded). Per run, the intervals' counts add up to the summary's.

use std::collections::BTreeMap;

use serde::Serialize;

use etcdlat_core::op::OpKind;
use etcdlat_core::report::{Interval, Report, round3};

#[derive(Serialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    run: &'a str,
    start_s: f64,
    end_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<bool>,
    ops: BTreeMap<&'static str, Figures>,
}

#[derive(Serialize)]
struct Figures {
    count: u64,
    errors: u64,
    throughput: f64,
    p50_us: u64,
    p90_us: u64,
    p99_us: u64,
    max_us: u64,
}

fn per_second(count: u64, secs: f64) -> f64 {
    if secs > 0.0 { round3(count as f64 / secs) } else { 0.0 }
}

fn line(l: &Line<'_>) -> String {
    let mut text = serde_json::to_string(l).expect("plain data serializes");
    text.push('\n');
    text
}

/// One interval of run `run`, from `start_s` to `end_s` seconds into measurement, with
/// each kind's figures in it; one line, ending with a newline.
#[must_use]
pub fn interval_line(run: &str, start_s: f64, end_s: f64, ops: &[(OpKind, Interval)]) -> String {
    let span = end_s - start_s;
    let ops = ops
        .iter()
        .map(|(kind, i)| {
            let figures = Figures {
                count: i.count,
                errors: i.errors,
                throughput: per_second(i.count, span),
                p50_us: i.p50_us,
                p90_us: i.p90_us,
                p99_us: i.p99_us,
                max_us: i.max_us,
            };
            (kind.name(), figures)
        })
        .collect();
    let (start_s, end_s) = (round3(start_s), round3(end_s));
    line(&Line { kind: "interval", run, start_s, end_s, interrupted: None, ops })
}

/// The whole of `report`'s run, as its last line: each kind's totals over its measured
/// time; one line, ending with a newline.
#[must_use]
pub fn summary_line(report: &Report) -> String {
    let ops = report
        .ops
        .iter()
        .map(|(kind, op)| {
            let q = |q: f64| if op.ok > 0 { op.latency.quantile_us(q) } else { 0 };
            let figures = Figures {
                count: op.ok,
                errors: op.errors_total,
                throughput: round3(op.throughput),
                p50_us: q(0.5),
                p90_us: q(0.9),
                p99_us: q(0.99),
                max_us: if op.ok > 0 { op.latency.max_us() } else { 0 },
            };
            (kind.name(), figures)
        })
        .collect();
    line(&Line {
        kind: "summary",
        run: &report.name,
        start_s: 0.0,
        end_s: round3(report.duration_s),
        interrupted: Some(report.interrupted),
        ops,
    })
}
