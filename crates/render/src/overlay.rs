//! SVG plots of several runs on one set of axes, a line per run in a color of its own, as
//! dbtester drew its databases and versions against each other:
//!
//! - over time: throughput and p99 latency per interval ([`throughput_over_time`],
//!   [`p99_over_time`]), and, when the reports sampled the members, their average CPU and
//!   resident memory per sample ([`server_cpu_over_time`], [`server_memory_over_time`]);
//! - by keys written, against the running count of successful writes (put, txn-put and
//!   txn-mixed's writes): the mean latency of each interval ([`latency_by_keys`]) and the
//!   members' average resident memory ([`server_memory_by_keys`]), with the intervals that
//!   had failed requests marked as crosses on the run's line.
//!
//! A run is given with its label (the legend's text; the side-by-side table's header,
//! [`crate::columns::Columns::label`]). Each function returns one standalone SVG
//! document, drawn as [`crate::plot`] draws, without fonts. The plots of figures a
//! report may not have return `None` when no run has them.
//!
//! ```
//! use etcdlat_render::overlay;
//! # fn show(a: &etcdlat_core::Report, b: &etcdlat_core::Report) {
//! let svg = overlay::throughput_over_time(&[("v3.5", a), ("v3.6", b)]);
//! assert!(svg.starts_with("<svg"));
//! # }
//! ```

use plotters::style::RGBColor;

use super::plot::{
    Chart, Line, MAX_MARKED_POINTS, Points, TAB_BLUE, TAB_GREEN, TAB_ORANGE, TAB_RED, TimeAxis,
    TimeUnit, draw, headroom,
};
use etcdlat_core::metrics::{ResourceSample, ResourceSeries};
use etcdlat_core::op::OpKind;
use etcdlat_core::report::study::members_average;
use etcdlat_core::report::{Interval, Report};

/// A run and its label in the legend.
pub type Run<'a> = (&'a str, &'a Report);

/// Every plot over time that the runs have, each with the slug it is written to a file
/// under (`throughput`, `p99`, `server-cpu`, `server-memory`): throughput and p99 latency
/// always, the members' average CPU and memory when a run sampled them.
#[must_use]
pub fn over_time(runs: &[Run<'_>]) -> Vec<(&'static str, String)> {
    let mut plots = vec![("throughput", throughput_over_time(runs)), ("p99", p99_over_time(runs))];
    plots.extend(server_cpu_over_time(runs).map(|svg| ("server-cpu", svg)));
    plots.extend(server_memory_over_time(runs).map(|svg| ("server-memory", svg)));
    plots
}

/// etcd's own figures of each member, a plot per figure with a line per member of each run
/// named `RUN · MEMBER (leader)` or `(follower)` (the role it had at its last sample), each
/// with its slug: the 99th percentiles per sample of WAL fsync (`wal-fsync-p99`), backend
/// commit (`backend-commit-p99`), apply (`apply-p99`) and round trips to peers
/// (`peer-rtt-p99`), in milliseconds; proposals committed per second (`proposals`) and
/// leader changes per sample (`leader-changes`). A figure no member sampled has no plot.
#[must_use]
pub fn members_over_time(runs: &[Run<'_>]) -> Vec<(&'static str, String)> {
    type Figure = fn(&ResourceSample) -> Option<f64>;
    fn ms(us: Option<u64>) -> Option<f64> {
        us.map(|us| us as f64 / 1e3)
    }
    let figures: [(&str, &str, &str, Figure); 6] = [
        ("wal-fsync-p99", "WAL fsync p99", "fsync p99 (ms)", |s| ms(s.wal_fsync_p99_us)),
        ("backend-commit-p99", "backend commit p99", "commit p99 (ms)", |s| {
            ms(s.backend_commit_p99_us)
        }),
        ("apply-p99", "apply p99", "apply p99 (ms)", |s| ms(s.apply_p99_us)),
        ("peer-rtt-p99", "peer round trip p99", "round trip p99 (ms)", |s| ms(s.peer_rtt_p99_us)),
        ("proposals", "proposals committed", "proposals per second", |s| {
            s.proposals_committed.filter(|_| s.span_s > 0.0).map(|n| n as f64 / s.span_s)
        }),
        ("leader-changes", "leader changes", "leader changes", |s| {
            s.leader_changes.map(|n| n as f64)
        }),
    ];
    let members: Vec<(String, &Report, &ResourceSeries)> = runs
        .iter()
        .flat_map(|&(label, report)| {
            report.server.iter().map(move |m| {
                let leader = m.resources.samples.iter().rev().find_map(|s| s.leader);
                let leader = leader.unwrap_or(m.name == report.target.leader);
                let role = if leader { "leader" } else { "follower" };
                let name = if runs.len() == 1 {
                    format!("{} ({role})", m.name)
                } else {
                    format!("{label} · {} ({role})", m.name)
                };
                (name, report, &m.resources)
            })
        })
        .collect();
    let lines_of: Vec<Run<'_>> =
        members.iter().map(|(name, report, _)| (name.as_str(), *report)).collect();
    figures
        .into_iter()
        .filter_map(|(slug, title, y_desc, figure)| {
            let lines: Vec<Segments> = members
                .iter()
                .map(|(_, _, series)| {
                    let points = series
                        .samples
                        .iter()
                        .filter(|s| s.t_s >= 0.0)
                        .filter_map(|s| Some((s.t_s - s.span_s / 2.0, figure(s)?)))
                        .collect();
                    vec![points]
                })
                .collect();
            if lines.iter().flatten().all(Vec::is_empty) {
                return None;
            }
            let max = highest(&lines);
            let what = format!("members' {title}");
            Some((
                slug,
                chart(
                    &lines_of,
                    lines,
                    &what,
                    ("time since start (s)", y_desc),
                    (time_end(runs), headroom(max)),
                ),
            ))
        })
        .collect()
}

/// Every plot by keys written that the runs have, each with its slug (`latency-by-keys`,
/// `server-memory-by-keys`); none when no run wrote keys.
#[must_use]
pub fn by_keys_written(runs: &[Run<'_>]) -> Vec<(&'static str, String)> {
    let mut plots = Vec::new();
    plots.extend(latency_by_keys(runs).map(|svg| ("latency-by-keys", svg)));
    plots.extend(server_memory_by_keys(runs).map(|svg| ("server-memory-by-keys", svg)));
    plots
}

/// matplotlib's "tab10" colors, a run each in order (the eleventh takes the first again).
const PALETTE: [RGBColor; 10] = [
    TAB_BLUE,
    TAB_ORANGE,
    TAB_GREEN,
    TAB_RED,
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A run's line, in pieces where it has gaps.
type Segments = Vec<Vec<(f64, f64)>>;

/// The kinds whose successful requests write keys.
const WRITES: [OpKind; 3] = [OpKind::Put, OpKind::TxnPut, OpKind::TxnWrite];

/// Successful requests per second in each interval, every kind of the load together
/// (background compaction is not load), a line per run.
#[must_use]
pub fn throughput_over_time(runs: &[Run<'_>]) -> String {
    let lines: Vec<Segments> = runs
        .iter()
        .map(|(_, report)| {
            let time = TimeAxis::of(report);
            let points = (0..count_intervals(report))
                .map(|i| {
                    let ok: u64 = load_intervals(report, i).map(|x| x.count).sum();
                    (time.middle(i), ok as f64 / time.width(i))
                })
                .collect();
            vec![points]
        })
        .collect();
    let max = highest(&lines);
    chart(
        runs,
        lines,
        "throughput per interval",
        ("time since start (s)", "requests per second"),
        (time_end(runs), headroom(max)),
    )
}

/// The p99 latency of each interval, of every kind of the load together (a mix's `all`, or
/// the one kind a run sent), a line per run that breaks where nothing succeeded.
#[must_use]
pub fn p99_over_time(runs: &[Run<'_>]) -> String {
    let max_us = runs
        .iter()
        .filter_map(|(_, r)| r.load_op())
        .flat_map(|op| op.intervals.iter().filter(|i| i.count > 0).map(|i| i.p99_us))
        .max()
        .unwrap_or(0);
    let unit = TimeUnit::for_max_us(max_us as f64);
    let lines = runs
        .iter()
        .map(|(_, report)| {
            let time = TimeAxis::of(report);
            let intervals = report.load_op().map_or(&[][..], |op| &op.intervals);
            let mut segments = vec![Vec::new()];
            for (i, x) in intervals.iter().enumerate() {
                if x.count > 0 {
                    let point = (time.middle(i), unit.scale(x.p99_us as f64));
                    segments.last_mut().expect("never empty").push(point);
                } else if segments.last().is_some_and(|s| !s.is_empty()) {
                    segments.push(Vec::new());
                }
            }
            segments
        })
        .collect();
    chart(
        runs,
        lines,
        "p99 latency per interval",
        ("time since start (s)", &format!("latency ({})", unit.name)),
        (time_end(runs), headroom(unit.scale(max_us as f64))),
    )
}

/// The members' average CPU per sample, percent of one core; `None` when no run sampled it.
#[must_use]
pub fn server_cpu_over_time(runs: &[Run<'_>]) -> Option<String> {
    let lines = server_over_time(runs, |s| s.cpu_percent)?;
    let max = highest(&lines);
    Some(chart(
        runs,
        lines,
        "members' average CPU",
        ("time since start (s)", "CPU (% of one core)"),
        (time_end(runs), headroom(max)),
    ))
}

/// The members' average resident memory per sample, decimal megabytes; `None` when no run
/// sampled it.
#[must_use]
pub fn server_memory_over_time(runs: &[Run<'_>]) -> Option<String> {
    let lines = server_over_time(runs, rss_mb)?;
    let max = highest(&lines);
    Some(chart(
        runs,
        lines,
        "members' average resident memory",
        ("time since start (s)", "RSS (MB)"),
        (time_end(runs), headroom(max)),
    ))
}

/// The mean latency of each interval against the successful writes so far at its end, a line
/// per run that wrote keys, the intervals with failed requests crossed; `None` when no run
/// wrote.
#[must_use]
pub fn latency_by_keys(runs: &[Run<'_>]) -> Option<String> {
    let max_us = runs
        .iter()
        .filter_map(|(_, r)| r.load_op())
        .flat_map(|op| op.intervals.iter().filter(|i| i.count > 0).map(|i| i.mean_us))
        .fold(0.0, f64::max);
    let unit = TimeUnit::for_max_us(max_us);
    let lines: Vec<Segments> = runs
        .iter()
        .map(|(_, report)| {
            let written = written(report);
            let intervals = report.load_op().map_or(&[][..], |op| &op.intervals);
            let points = intervals
                .iter()
                .zip(&written)
                .filter(|(x, _)| x.count > 0)
                .map(|(x, &keys)| (keys, unit.scale(x.mean_us)))
                .collect();
            vec![points]
        })
        .collect();
    by_keys(
        runs,
        lines,
        "mean latency",
        &format!("latency ({})", unit.name),
        headroom(unit.scale(max_us)),
    )
}

/// The members' average resident memory against the successful writes so far when it was
/// sampled, a line per run that wrote keys and sampled its members, the intervals with failed
/// requests crossed; `None` when no run has both.
#[must_use]
pub fn server_memory_by_keys(runs: &[Run<'_>]) -> Option<String> {
    let over_time = server_over_time(runs, rss_mb)?;
    let lines: Vec<Segments> = runs
        .iter()
        .zip(over_time)
        .map(|((_, report), samples)| {
            let time = TimeAxis::of(report);
            let ends: Vec<(f64, f64)> = std::iter::once((0.0, 0.0))
                .chain((0..count_intervals(report)).map(|i| time.span(i).1).zip(written(report)))
                .collect();
            let points =
                samples.into_iter().flatten().map(|(t, mb)| (interpolate(&ends, t), mb)).collect();
            vec![points]
        })
        .collect();
    let both = runs.iter().zip(&lines).any(|((_, report), line)| {
        line.iter().any(|s| !s.is_empty()) && written(report).last().is_some_and(|&n| n > 0.0)
    });
    if !both {
        return None;
    }
    let max = highest(&lines);
    by_keys(runs, lines, "members' average resident memory", "RSS (MB)", headroom(max))
}

/// A plot by keys written of `lines`, with each run's failed intervals crossed on its line;
/// `None` when no run wrote a key.
fn by_keys(
    runs: &[Run<'_>],
    lines: Vec<Segments>,
    what: &str,
    y_desc: &str,
    y_top: f64,
) -> Option<String> {
    let most = runs.iter().filter_map(|(_, r)| written(r).last().copied()).fold(0.0, f64::max);
    if most <= 0.0 {
        return None;
    }
    // Past ten thousand keys, the axis counts thousands, so its labels stay short.
    let (per, x_desc) = if most >= 1e4 {
        (1e3, "successful writes (thousands)")
    } else {
        (1.0, "successful writes")
    };
    // A run that wrote nothing has no line: all of it would stand at 0.
    let lines: Vec<Segments> = lines
        .into_iter()
        .zip(runs)
        .map(|(segments, (_, report))| {
            let wrote = written(report).last().is_some_and(|&n| n > 0.0);
            let scaled = segments.into_iter().map(|s| s.into_iter().map(|(x, y)| (x / per, y)));
            if wrote { scaled.map(Iterator::collect).collect() } else { vec![Vec::new()] }
        })
        .collect();
    let points = runs
        .iter()
        .zip(&lines)
        .enumerate()
        .filter_map(|(n, ((label, report), line))| {
            let line: Vec<(f64, f64)> = line.iter().flatten().copied().collect();
            if line.is_empty() {
                return None;
            }
            let written = written(report);
            let at: Vec<(f64, f64)> = (0..count_intervals(report))
                .filter(|&i| load_intervals(report, i).any(|x| x.errors > 0))
                .map(|i| {
                    let x = written.get(i).copied().unwrap_or(0.0) / per;
                    (x, interpolate(&line, x))
                })
                .collect();
            (!at.is_empty()).then(|| Points {
                label: format!("{label}: failed requests"),
                color: color(n),
                at,
            })
        })
        .collect();
    let mut c = chart_of(runs, lines, &format!("{what} by keys written"), (x_desc, y_desc));
    c.x = 0.0..most / per;
    c.y = 0.0..y_top;
    c.points = points;
    Some(draw(&c))
}

/// Each run's members' average `figure` over measured time, or `None` when no run has it.
fn server_over_time(
    runs: &[Run<'_>],
    figure: fn(&ResourceSample) -> Option<f64>,
) -> Option<Vec<Segments>> {
    let lines: Vec<Segments> = runs
        .iter()
        .map(|(_, report)| {
            // Sampling starts before measurement does: what came before is not the run's.
            vec![
                members_average(&report.server, figure)
                    .into_iter()
                    .filter(|(t, _)| *t >= 0.0)
                    .collect(),
            ]
        })
        .collect();
    lines.iter().flatten().any(|s| !s.is_empty()).then_some(lines)
}

fn rss_mb(s: &ResourceSample) -> Option<f64> {
    s.rss_bytes.map(|b| b as f64 / 1e6)
}

/// A plot over time of `lines`, a run each.
fn chart(
    runs: &[Run<'_>],
    lines: Vec<Segments>,
    what: &str,
    (x_desc, y_desc): (&str, &str),
    (x_end, y_top): (f64, f64),
) -> String {
    let mut c = chart_of(runs, lines, what, (x_desc, y_desc));
    c.x = 0.0..x_end;
    c.y = 0.0..y_top;
    draw(&c)
}

fn chart_of(
    runs: &[Run<'_>],
    lines: Vec<Segments>,
    what: &str,
    (x_desc, y_desc): (&str, &str),
) -> Chart {
    let longest = lines.iter().map(|l| l.iter().map(Vec::len).sum::<usize>()).max().unwrap_or(0);
    let series = runs
        .iter()
        .zip(lines)
        .enumerate()
        .map(|(n, ((label, _), segments))| Line {
            label: (*label).to_owned(),
            color: color(n),
            width: 2,
            opacity: 1.0,
            segments,
        })
        .collect();
    let empty = runs.is_empty();
    Chart {
        title: what.to_owned(),
        x_desc: x_desc.to_owned(),
        y_desc: y_desc.to_owned(),
        x: 0.0..1.0,
        y: 0.0..1.0,
        x_labels: None,
        series,
        points: Vec::new(),
        note: empty.then(|| "no runs".to_owned()),
        markers: longest <= MAX_MARKED_POINTS,
    }
}

fn color(n: usize) -> RGBColor {
    PALETTE[n % PALETTE.len()]
}

/// Intervals in the longest series of a run.
fn count_intervals(report: &Report) -> usize {
    report.ops.values().map(|o| o.intervals.len()).max().unwrap_or(0)
}

/// Interval `i` of each kind of the load.
fn load_intervals(report: &Report, i: usize) -> impl Iterator<Item = &Interval> {
    report
        .ops
        .iter()
        .filter(|(k, _)| **k != OpKind::Compact)
        .filter_map(move |(_, op)| op.intervals.get(i))
}

/// The successful writes from the start to the end of each interval.
fn written(report: &Report) -> Vec<f64> {
    let mut total = 0u64;
    (0..count_intervals(report))
        .map(|i| {
            total += WRITES
                .iter()
                .filter_map(|k| report.ops.get(k)?.intervals.get(i))
                .map(|x| x.count)
                .sum::<u64>();
            total as f64
        })
        .collect()
}

/// The largest value of any line.
fn highest(lines: &[Segments]) -> f64 {
    lines.iter().flatten().flatten().map(|&(_, y)| y).fold(0.0, f64::max)
}

/// The end of the time axis: the end of the longest run.
fn time_end(runs: &[Run<'_>]) -> f64 {
    let end = runs.iter().map(|(_, r)| TimeAxis::of(r).end()).fold(0.0, f64::max);
    if end > 0.0 { end } else { 1.0 }
}

/// The y of a line of points in increasing x at `x`: linear between its points, its first or
/// last value beyond them, 0 for a line with no point.
fn interpolate(line: &[(f64, f64)], x: f64) -> f64 {
    let Some(&(first_x, first_y)) = line.first() else { return 0.0 };
    if x <= first_x {
        return first_y;
    }
    for w in line.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x <= x1 {
            return if x1 > x0 { y0 + (y1 - y0) * (x - x0) / (x1 - x0) } else { y1 };
        }
    }
    line.last().map_or(0.0, |&(_, y)| y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_between_their_points() {
        let line = [(0.0, 0.0), (10.0, 100.0), (20.0, 100.0)];
        assert_eq!(interpolate(&line, 5.0), 50.0);
        assert_eq!(interpolate(&line, 15.0), 100.0);
        assert_eq!(interpolate(&line, 25.0), 100.0);
        assert_eq!(interpolate(&line, -1.0), 0.0);
        assert_eq!(interpolate(&[], 3.0), 0.0);
        assert_eq!(interpolate(&[(1.0, 1.0), (1.0, 2.0)], 1.0), 1.0);
    }

    #[test]
    fn runs_past_the_palette_take_its_colors_again() {
        assert_eq!(color(0), TAB_BLUE);
        assert_eq!(color(10), TAB_BLUE);
        assert_eq!(color(3), TAB_RED);
    }
}
