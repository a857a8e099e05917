//! A run in client steps: throughput and p99 latency against clients, on two value axes.

use super::*;

/// A run's client steps ([`etcdlat_core::step`]): throughput (successful requests per second) and
/// p99 latency of each step against its number of clients, one point per step, on a
/// logarithmic clients axis (dbtester's steps go from 1 to 1,000). Throughput is read on
/// the left axis, latency on the right.
///
/// A run without steps, or whose steps had no success, is still drawn, with a note saying
/// so.
#[must_use]
pub fn steps(report: &Report) -> String {
    let steps = &report.steps;
    let throughput: Vec<(f64, f64)> =
        steps.iter().map(|s| (f64::from(s.clients), s.throughput)).collect();
    let p99: Vec<(f64, f64)> = steps
        .iter()
        .filter(|s| s.ok > 0)
        .map(|s| (f64::from(s.clients), s.latency.quantile_us(0.99) as f64))
        .collect();
    let max_us = p99.iter().map(|&(_, us)| us).fold(0.0, f64::max);
    let unit = TimeUnit::for_max_us(max_us);
    let p99: Vec<(f64, f64)> = p99.into_iter().map(|(x, us)| (x, unit.scale(us))).collect();
    let clients = |f: fn(f64, f64) -> f64, init| throughput.iter().map(|&(x, _)| x).fold(init, f);
    // A little room either side of the first and last step, on the log axis.
    let (low, high) = (clients(f64::min, f64::INFINITY), clients(f64::max, 0.0));
    let x = if low.is_finite() && high > 0.0 { low / 1.5..high * 1.5 } else { 1.0..10.0 };
    let note = if steps.is_empty() {
        Some("the run had no client steps".to_owned())
    } else if steps.iter().all(|s| s.ok == 0) {
        Some("no request succeeded in any step".to_owned())
    } else {
        None
    };
    let chart = StepsChart {
        title: titled(report, None, "throughput and p99 latency by clients"),
        x,
        throughput_max: headroom(throughput.iter().map(|&(_, y)| y).fold(0.0, f64::max)),
        latency_max: headroom(unit.scale(max_us)),
        latency_desc: format!("p99 latency ({})", unit.name),
        throughput,
        p99,
        note,
    };
    svg(|root| draw_steps_on(root, &chart))
}

/// What the client steps plot shows: two lines on two value axes over one clients axis.
struct StepsChart {
    title: String,
    x: Range<f64>,
    throughput_max: f64,
    latency_max: f64,
    latency_desc: String,
    /// (clients, requests per second) of each step.
    throughput: Vec<(f64, f64)>,
    /// (clients, p99 in the latency axis' unit) of each step with a success.
    p99: Vec<(f64, f64)>,
    note: Option<String>,
}

fn draw_steps_on(root: &DrawingArea<SVGBackend<'_>, Shift>, c: &StepsChart) -> DrawResult {
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, (FONT, 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .right_y_label_area_size(65)
        .build_cartesian_2d(c.x.clone().log_scale(), 0.0..c.throughput_max)?
        .set_secondary_coord(c.x.clone().log_scale(), 0.0..c.latency_max);
    let (throughput_span, latency_span) = (c.throughput_max, c.latency_max);
    let throughput_number = move |v: &f64| axis_number(*v, throughput_span);
    let latency_number = move |v: &f64| axis_number(*v, latency_span);
    // The clients axis is labelled at the steps' own numbers of clients, below, rather than
    // at plotters' points of a log axis.
    let unlabelled = |_: &f64| String::new();
    chart
        .configure_mesh()
        .x_labels(0)
        .x_label_formatter(&unlabelled)
        .x_desc("clients")
        .y_desc("requests per second")
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(200, 200, 200))
        .max_light_lines(4)
        .y_label_formatter(&throughput_number)
        .draw()?;
    let tick = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    chart.draw_series(c.throughput.iter().map(|&(clients, _)| {
        EmptyElement::at((clients, 0.0))
            + PathElement::new(vec![(0, 0), (0, 5)], BLACK)
            + Text::new(format!("{clients}"), (0, 8), tick.clone())
    }))?;
    chart
        .configure_secondary_axes()
        .y_desc(c.latency_desc.as_str())
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .y_label_formatter(&latency_number)
        .draw()?;
    let style =
        |color: RGBColor| ShapeStyle { color: color.to_rgba(), filled: true, stroke_width: 2 };
    chart
        .draw_series(LineSeries::new(c.throughput.iter().copied(), style(TAB_BLUE)).point_size(4))?
        .label("throughput (ok/s, left)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], TAB_BLUE.stroke_width(3)));
    chart
        .draw_secondary_series(
            LineSeries::new(c.p99.iter().copied(), style(TAB_ORANGE)).point_size(4),
        )?
        .label("p99 latency (right)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], TAB_ORANGE.stroke_width(3)));
    draw_legend(&mut chart)?;
    if let Some(note) = &c.note {
        let (w, h) = root.dim_in_pixel();
        root.draw(&Text::new(note.clone(), (w as i32 / 2, h as i32 / 2), note_style()))?;
    }
    Ok(())
}
