//! SVG plots of a run: latency percentiles and throughput per interval, the percentile
//! spectrum of latency against service time, the members' and client's resources over
//! time, and for a run in client steps, throughput and p99 latency against clients.
//!
//! Each function returns one standalone SVG document. They are drawn with `plotters`' SVG
//! backend, which writes text as SVG `<text>` elements for the viewer to lay out, so no font
//! file is read when drawing (label sizes are plotters' estimates). A plot with nothing to
//! show (an operation kind the run did not send, a run with no intervals) is still drawn,
//! with its axes and a note saying why it is empty.
//!
//! ```
//! use etcdlat_core::OpKind;
//! use etcdlat_render::plot;
//! # fn show(report: &etcdlat_core::Report) {
//! let svg = plot::percentile_spectrum(report, OpKind::Put);
//! assert!(svg.starts_with("<svg"));
//! # }
//! ```

use std::ops::Range;

use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use etcdlat_core::metrics::{self, ResourceSample, ResourceSeries};
use etcdlat_core::op::OpKind;
use etcdlat_core::report::{Distribution, Interval, Report};
use etcdlat_core::unit::thousands;

/// Width and height of every plot, pixels (the SVG's `viewBox`, so it scales).
const SIZE: (u32, u32) = (800, 420);

/// The generic family: the viewer's own sans-serif font lays out the text.
const FONT: &str = "sans-serif";

/// The percentile axis of the spectrum ends at p99.999: `log10(1 / (1 - 0.99999))`.
const SPECTRUM_DECADES: f64 = 5.0;

/// Points per decade of the spectrum: enough for a smooth curve, few enough for a small file.
const SPECTRUM_POINTS_PER_DECADE: u32 = 50;

/// Time series longer than this are drawn as lines only, without a marker per interval.
pub(super) const MAX_MARKED_POINTS: usize = 120;

// matplotlib's "tab10" colors: distinct, and familiar from other latency plots.
pub(super) const TAB_BLUE: RGBColor = RGBColor(31, 119, 180);
pub(super) const TAB_GREEN: RGBColor = RGBColor(44, 160, 44);
pub(super) const TAB_ORANGE: RGBColor = RGBColor(255, 127, 14);
pub(super) const TAB_RED: RGBColor = RGBColor(214, 39, 40);
pub(super) const GREY: RGBColor = RGBColor(90, 90, 90);

/// A line of the latency plot: its label, color, and value in an interval, us.
type Percentile = (&'static str, RGBColor, fn(&Interval) -> u64);

/// Latency per interval of one operation kind: p50, p90, p99 and max of the successful
/// requests that completed in each interval, against time since measurement started.
///
/// Each point is drawn at the middle of its interval (of the part that was measured, for
/// the last one); intervals in which no request of this kind succeeded have no point, and
/// the lines break there.
#[must_use]
pub fn latency_over_time(report: &Report, kind: OpKind) -> String {
    let time = TimeAxis::of(report);
    let intervals = report.try_op(kind).map_or(&[][..], |op| &op.intervals);
    let lines: [Percentile; 4] = [
        ("p50", TAB_BLUE, |i| i.p50_us),
        ("p90", TAB_GREEN, |i| i.p90_us),
        ("p99", TAB_ORANGE, |i| i.p99_us),
        ("max", TAB_RED, |i| i.max_us),
    ];
    let max_us = intervals.iter().filter(|i| i.count > 0).map(|i| i.max_us).max().unwrap_or(0);
    let unit = TimeUnit::for_max_us(max_us as f64);
    let series = lines
        .into_iter()
        .map(|(label, color, value)| {
            let mut segments = vec![Vec::new()];
            for (index, i) in intervals.iter().enumerate() {
                if i.count > 0 {
                    segments
                        .last_mut()
                        .expect("never empty")
                        .push((time.middle(index), unit.scale(value(i) as f64)));
                } else if segments.last().is_some_and(|s| !s.is_empty()) {
                    segments.push(Vec::new());
                }
            }
            Line { label: label.to_owned(), color, width: 2, opacity: 1.0, segments }
        })
        .collect();
    let note = match report.try_op(kind) {
        None => Some(format!("the run sent no {kind} requests")),
        Some(op) if op.ok == 0 => Some(format!("no {kind} request succeeded")),
        Some(_) => None,
    };
    draw(&Chart {
        title: titled(report, Some(kind), "latency per interval"),
        x_desc: "time since start (s)".to_owned(),
        y_desc: format!("latency ({})", unit.name),
        x: 0.0..time.end(),
        y: 0.0..headroom(unit.scale(max_us as f64)),
        x_labels: None,
        series,
        points: Vec::new(),
        note,
        markers: intervals.len() <= MAX_MARKED_POINTS,
    })
}

/// Successful requests and failed requests per second, all operation kinds together, in
/// each interval; with one more line per kind when the run sent more than one kind.
///
/// The last interval is usually cut short by the end of the run; its rate is over the part
/// that was measured.
#[must_use]
pub fn throughput_over_time(report: &Report) -> String {
    let time = TimeAxis::of(report);
    let len = time.intervals;
    let rate = |count: fn(&Interval) -> u64, kind: Option<OpKind>| -> Vec<(f64, f64)> {
        (0..len)
            .map(|index| {
                let n: u64 = report
                    .ops
                    .iter()
                    .filter(|(k, _)| kind.is_none_or(|kind| **k == kind))
                    .filter_map(|(_, op)| op.intervals.get(index))
                    .map(count)
                    .sum();
                (time.middle(index), n as f64 / time.width(index))
            })
            .collect()
    };
    // The totals wide and pale, so that a kind's line on top of them stays visible.
    let mut series = vec![
        Line {
            label: "ok/s".to_owned(),
            color: TAB_BLUE,
            width: 4,
            opacity: 0.55,
            segments: vec![rate(ok, None)],
        },
        Line {
            label: "errors/s".to_owned(),
            color: TAB_RED,
            width: 4,
            opacity: 0.55,
            segments: vec![rate(errors, None)],
        },
    ];
    if report.ops.len() > 1 {
        let palette = [TAB_GREEN, TAB_ORANGE, GREY];
        for (n, &kind) in report.ops.keys().enumerate() {
            series.push(Line {
                label: format!("{kind} ok/s"),
                color: palette[n % palette.len()],
                width: 2,
                opacity: 1.0,
                segments: vec![rate(ok, Some(kind))],
            });
        }
    }
    let max = series
        .iter()
        .flat_map(|s| s.segments.iter().flatten())
        .map(|&(_, y)| y)
        .fold(0.0, f64::max);
    draw(&Chart {
        title: titled(report, None, "throughput per interval"),
        x_desc: "time since start (s)".to_owned(),
        y_desc: "requests per second".to_owned(),
        x: 0.0..time.end(),
        y: 0.0..headroom(max),
        x_labels: None,
        series,
        points: Vec::new(),
        note: (len == 0).then(|| "no request completed".to_owned()),
        markers: len <= MAX_MARKED_POINTS,
    })
}

mod resource;
mod steps;

pub use resource::{Resource, resource_over_time};
pub use steps::steps;

/// The percentile spectrum of one operation kind, as HdrHistogram plots it: latency and
/// service time at every percentile from p0 to p99.999, on a percentile axis that gives
/// each "nine" the same width (x is `log10(1 / (1 - q))`).
///
/// Latency counts from the intended start (the schedule's, in open loop), service time from
/// the actual send; where the client or server fell behind the two lines part. When they
/// coincide (a closed loop, where every request is sent when intended) one line is drawn
/// and its legend says so. With fewer requests than a percentile needs to be
/// distinct, the curve is flat at the largest value.
#[must_use]
pub fn percentile_spectrum(report: &Report, kind: OpKind) -> String {
    let op = report.try_op(kind);
    let empty = Distribution::new(etcdlat_core::recorder::new_histogram());
    let (latency, service) = op.map_or((&empty, &empty), |o| (&o.latency, &o.service_time));
    let max_us = latency.max_us().max(service.max_us());
    let unit = TimeUnit::for_max_us(max_us as f64);
    let curve = |d: &Distribution| -> Vec<Vec<(f64, f64)>> {
        if d.count() == 0 {
            return vec![Vec::new()];
        }
        let n = SPECTRUM_POINTS_PER_DECADE * SPECTRUM_DECADES as u32;
        let points = (0..=n)
            .map(|i| {
                let x = f64::from(i) / f64::from(SPECTRUM_POINTS_PER_DECADE);
                let q = 1.0 - 10f64.powf(-x);
                (x, unit.scale(d.quantile_us(q) as f64))
            })
            .collect();
        vec![points]
    };
    let (latency_curve, service_curve) = (curve(latency), curve(service));
    let count = latency.count();
    let note = match op {
        None => Some(format!("the run sent no {kind} requests")),
        Some(_) if count == 0 => Some(format!("no {kind} request succeeded")),
        Some(_) => None,
    };
    let s = if count == 1 { "" } else { "s" };
    draw(&Chart {
        title: titled(
            report,
            Some(kind),
            &format!("latency by percentile ({} request{s})", thousands(count)),
        ),
        x_desc: "percentile".to_owned(),
        y_desc: format!("latency ({})", unit.name),
        x: 0.0..SPECTRUM_DECADES,
        y: 0.0..headroom(unit.scale(max_us as f64)),
        x_labels: Some(percentile_label),
        series: if latency_curve == service_curve {
            // Every request was sent when intended (a closed loop): one line says both.
            vec![Line {
                label: "latency = service time (each request sent when intended)".to_owned(),
                color: TAB_RED,
                width: 4,
                opacity: 1.0,
                segments: latency_curve,
            }]
        } else {
            vec![
                Line {
                    label: "latency (from intended start)".to_owned(),
                    color: TAB_RED,
                    width: 4,
                    opacity: 1.0,
                    segments: latency_curve,
                },
                Line {
                    label: "service time (from send)".to_owned(),
                    color: TAB_BLUE,
                    width: 2,
                    opacity: 1.0,
                    segments: service_curve,
                },
            ]
        },
        points: Vec::new(),
        note,
        markers: false,
    })
}
/// A plot's title: the run's name, then what the plot shows, of `kind` if one; the kind is
/// said once when the run is named after it (`put latency per interval`, not `put: put ...`).
fn titled(report: &Report, kind: Option<OpKind>, what: &str) -> String {
    match kind {
        Some(kind) if report.name == kind.name() || report.name.is_empty() => {
            format!("{kind} {what}")
        }
        Some(kind) => format!("{}: {kind} {what}", report.name),
        None if report.name.is_empty() => what.to_owned(),
        None => format!("{}: {what}", report.name),
    }
}

/// A tick label of a linear axis spanning `span`: as many decimals as its steps need.
fn axis_number(v: f64, span: f64) -> String {
    let decimals = if span >= 20.0 {
        0
    } else if span >= 2.0 {
        1
    } else if span >= 0.2 {
        2
    } else {
        3
    };
    format!("{v:.decimals$}")
}

/// A percentile axis position `x = log10(1 / (1 - q))` as the percentile it stands for:
/// 0 is `0%`, 1 `90%`, 3 `99.9%`.
fn percentile_label(x: &f64) -> String {
    let q = 1.0 - 10f64.powf(-x);
    let decimals = (x.ceil().max(0.0) as usize).saturating_sub(2);
    format!("{:.*}%", decimals, q * 100.0)
}

fn ok(i: &Interval) -> u64 {
    i.count
}

fn errors(i: &Interval) -> u64 {
    i.errors
}

/// The run's intervals on the time axis, seconds since measurement started.
pub(super) struct TimeAxis {
    /// Length of an interval.
    step: f64,
    /// Measured time.
    duration: f64,
    /// Intervals in the longest series of the run.
    intervals: usize,
}

impl TimeAxis {
    pub(super) fn of(report: &Report) -> Self {
        let step = report.interval().as_secs_f64();
        Self {
            step: if step > 0.0 { step } else { 1.0 },
            duration: report.duration_s,
            intervals: report.ops.values().map(|o| o.intervals.len()).max().unwrap_or(0),
        }
    }

    /// Interval `index` as measured: the last one is cut short by the end of the run
    /// (unless a completion landed past the end, which leaves it whole).
    pub(super) fn span(&self, index: usize) -> (f64, f64) {
        let start = index as f64 * self.step;
        let end = start + self.step;
        if self.duration > start && self.duration < end {
            (start, self.duration)
        } else {
            (start, end)
        }
    }

    pub(super) fn middle(&self, index: usize) -> f64 {
        let (start, end) = self.span(index);
        (start + end) / 2.0
    }

    pub(super) fn width(&self, index: usize) -> f64 {
        let (start, end) = self.span(index);
        end - start
    }

    /// The end of the axis: the end of the run or of its last interval, whichever is later.
    pub(super) fn end(&self) -> f64 {
        let last = self.intervals.checked_sub(1).map_or(0.0, |i| self.span(i).1);
        let end = self.duration.max(last);
        if end > 0.0 { end } else { self.step }
    }
}

/// The top of a value axis starting at 0: a little above the largest value, never empty.
pub(super) fn headroom(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 { max * 1.08 } else { 1.0 }
}

/// The unit of a latency axis, chosen so its labels are short.
pub(super) struct TimeUnit {
    pub(super) name: &'static str,
    us: f64,
}

impl TimeUnit {
    pub(super) fn for_max_us(max_us: f64) -> Self {
        if max_us >= 2e6 {
            Self { name: "s", us: 1e6 }
        } else if max_us >= 2e3 {
            Self { name: "ms", us: 1e3 }
        } else {
            Self { name: "µs", us: 1.0 }
        }
    }

    pub(super) fn scale(&self, us: f64) -> f64 {
        us / self.us
    }
}

/// One line of a plot, in pieces where it has gaps.
pub(super) struct Line {
    pub(super) label: String,
    pub(super) color: RGBColor,
    pub(super) width: u32,
    /// Below 1 for a wide line that a narrower one may run along.
    pub(super) opacity: f64,
    pub(super) segments: Vec<Vec<(f64, f64)>>,
}

/// Points marked with a cross, not joined: events on a line (failed requests).
pub(super) struct Points {
    pub(super) label: String,
    pub(super) color: RGBColor,
    pub(super) at: Vec<(f64, f64)>,
}

/// What one plot shows.
pub(super) struct Chart {
    pub(super) title: String,
    pub(super) x_desc: String,
    pub(super) y_desc: String,
    pub(super) x: Range<f64>,
    pub(super) y: Range<f64>,
    /// Labels of the x axis, if not plain numbers.
    pub(super) x_labels: Option<fn(&f64) -> String>,
    pub(super) series: Vec<Line>,
    /// Crosses drawn over the lines.
    pub(super) points: Vec<Points>,
    /// Written across the plot when it is empty, saying why.
    pub(super) note: Option<String>,
    /// A marker at every point, so that a single interval is visible.
    pub(super) markers: bool,
}

pub(super) fn draw(chart: &Chart) -> String {
    svg(|root| draw_on(root, chart))
}

/// One SVG document of [`SIZE`], drawn by `draw`.
fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        // The SVG backend writes into a String and never fails; nor do plotters' text
        // estimates, which read no fonts.
        draw(&root).expect("drawing an SVG into a String cannot fail");
        root.present().expect("drawing an SVG into a String cannot fail");
    }
    svg
}

/// The legend, at the upper left of the plot.
fn draw_legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> DrawResult {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .draw()
}

/// How a note across an empty plot is written, centred on its point.
fn note_style() -> TextStyle<'static> {
    TextStyle::from((FONT, 18).into_font()).color(&GREY).pos(Pos::new(HPos::Center, VPos::Center))
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_on(root: &DrawingArea<SVGBackend<'_>, Shift>, c: &Chart) -> DrawResult {
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, (FONT, 20))
        .margin(12)
        // Room for the last tick label, centred on the end of the x axis.
        .margin_right(36)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(c.x.clone(), c.y.clone())?;

    let (x_span, y_span) = (c.x.end - c.x.start, c.y.end - c.y.start);
    let x_number = move |v: &f64| axis_number(*v, x_span);
    let y_number = move |v: &f64| axis_number(*v, y_span);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(c.x_desc.as_str())
        .y_desc(c.y_desc.as_str())
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(200, 200, 200))
        .max_light_lines(4)
        .x_label_formatter(&x_number)
        .y_label_formatter(&y_number);
    if let Some(f) = &c.x_labels {
        // Light lines between the nines would mark linear steps on a log axis.
        mesh.x_labels(SPECTRUM_DECADES as usize + 1).x_max_light_lines(0).x_label_formatter(f);
    }
    mesh.draw()?;

    for s in &c.series {
        let color = s.color.mix(s.opacity);
        let style = ShapeStyle { color, filled: true, stroke_width: s.width };
        let point_size = if c.markers { s.width + 1 } else { 0 };
        for (n, segment) in s.segments.iter().enumerate() {
            let drawn = chart.draw_series(
                LineSeries::new(segment.iter().copied(), style).point_size(point_size),
            )?;
            if n == 0 {
                drawn.label(s.label.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
            }
        }
    }
    for p in &c.points {
        let style = p.color.stroke_width(2);
        chart
            .draw_series(p.at.iter().map(|&at| Cross::new(at, 5, style)))?
            .label(p.label.as_str())
            .legend(move |(x, y)| Cross::new((x + 10, y), 5, style));
    }
    if !c.series.is_empty() {
        draw_legend(&mut chart)?;
    }
    if let Some(note) = &c.note {
        let center = ((c.x.start + c.x.end) / 2.0, (c.y.start + c.y.end) / 2.0);
        chart.plotting_area().draw(&Text::new(note.clone(), center, note_style()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_axis_is_labelled_in_nines() {
        let labels: Vec<String> = (0..=5).map(|x| percentile_label(&f64::from(x))).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
        assert_eq!(percentile_label(&0.5), "68%");
    }

    #[test]
    fn the_last_interval_ends_with_the_run() {
        let t = TimeAxis { step: 1.0, duration: 2.5, intervals: 3 };
        assert_eq!((t.middle(0), t.width(0)), (0.5, 1.0));
        assert_eq!((t.middle(2), t.width(2)), (2.25, 0.5));
        assert_eq!(t.end(), 2.5);
        let short = TimeAxis { step: 1.0, duration: 0.2, intervals: 1 };
        assert_eq!((short.middle(0), short.end()), (0.1, 0.2));
        let late = TimeAxis { step: 1.0, duration: 2.0, intervals: 3 };
        assert_eq!((late.width(2), late.end()), (1.0, 3.0));
        let empty = TimeAxis { step: 1.0, duration: 0.0, intervals: 0 };
        assert_eq!(empty.end(), 1.0);
    }

    #[test]
    fn latency_unit_keeps_labels_short() {
        assert_eq!(TimeUnit::for_max_us(900.0).name, "µs");
        assert_eq!(TimeUnit::for_max_us(6_400.0).name, "ms");
        assert_eq!(TimeUnit::for_max_us(4e6).name, "s");
        assert_eq!(headroom(0.0), 1.0);
        assert_eq!(axis_number(700.0, 756.0), "700");
        assert_eq!(axis_number(2.5, 3.0), "2.5");
        assert_eq!(axis_number(0.25, 1.0), "0.25");
        assert_eq!(headroom(f64::NAN), 1.0);
    }
}
