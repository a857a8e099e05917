//! A resource of every member and of the client over time: CPU, memory, context switches,
//! storage and disk I/O, network and data dir size, a plot each.

use super::*;

/// What a resource plot shows ([`resource_over_time`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// CPU of each member and the client, percent of one core.
    Cpu,
    /// Resident memory of each member and the client.
    Memory,
    /// Voluntary and involuntary context switches per second, each member and the client.
    ContextSwitches,
    /// Bytes each member read from and wrote to storage per second (`/proc/PID/io`).
    StorageIo,
    /// Reads and writes the data dirs' block devices completed per second (machine-wide).
    DiskRequests,
    /// Sectors read from and written to those devices per second (machine-wide).
    DiskSectors,
    /// Bytes per second each member received (from clients and peers) and sent, and the
    /// client's load connections sent and received.
    Network,
    /// Each member's data dir size.
    DataDir,
}

impl Resource {
    /// Every resource plot, in the order the HTML page shows them.
    pub const ALL: [Resource; 8] = [
        Resource::Cpu,
        Resource::Memory,
        Resource::ContextSwitches,
        Resource::StorageIo,
        Resource::DiskRequests,
        Resource::DiskSectors,
        Resource::Network,
        Resource::DataDir,
    ];
}

/// A line of a resource plot: its label after the series' name, and its value in a sample;
/// a rate (per second of the sample's span) or a level.
type Figure = (&'static str, fn(&ResourceSample) -> Option<f64>);

/// A resource of every member and of the client over time ([`Resource`]), a line each
/// (two for figures that go both ways: read and write, sent and received). Counts are
/// drawn per second at the middle of the span they cover, levels where they were read; a
/// member's disk figures once per block device, as they are machine-wide.
#[must_use]
pub fn resource_over_time(report: &Report, what: Resource) -> String {
    let (title, unit, rate, figures): (&str, Unit, bool, Vec<Figure>) = match what {
        Resource::Cpu => ("CPU", Unit::Percent, false, vec![("", |s| s.cpu_percent)]),
        Resource::Memory => {
            ("resident memory", Unit::Bytes, false, vec![("", |s| s.rss_bytes.map(|v| v as f64))])
        }
        Resource::ContextSwitches => (
            "context switches",
            Unit::PerSecond,
            true,
            vec![
                ("voluntary", |s| s.voluntary_ctxt_switches.map(|v| v as f64)),
                ("involuntary", |s| s.nonvoluntary_ctxt_switches.map(|v| v as f64)),
            ],
        ),
        Resource::StorageIo => (
            "storage I/O",
            Unit::BytesPerSecond,
            true,
            vec![
                ("read", |s| s.read_bytes.map(|v| v as f64)),
                ("write", |s| s.write_bytes.map(|v| v as f64)),
            ],
        ),
        Resource::DiskRequests => (
            "disk requests (machine-wide)",
            Unit::PerSecond,
            true,
            vec![
                ("reads", |s| s.disk_reads_completed.map(|v| v as f64)),
                ("writes", |s| s.disk_writes_completed.map(|v| v as f64)),
            ],
        ),
        Resource::DiskSectors => (
            "disk sectors (machine-wide)",
            Unit::PerSecond,
            true,
            vec![
                ("read", |s| s.disk_sectors_read.map(|v| v as f64)),
                ("written", |s| s.disk_sectors_written.map(|v| v as f64)),
            ],
        ),
        Resource::Network => (
            "network",
            Unit::BytesPerSecond,
            true,
            vec![
                ("in", |s| match (s.grpc_received_bytes, s.peer_received_bytes) {
                    (None, None) => s.received_bytes.map(|v| v as f64),
                    (g, p) => Some((g.unwrap_or(0) + p.unwrap_or(0)) as f64),
                }),
                ("out", |s| match (s.grpc_sent_bytes, s.peer_sent_bytes) {
                    (None, None) => s.sent_bytes.map(|v| v as f64),
                    (g, p) => Some((g.unwrap_or(0) + p.unwrap_or(0)) as f64),
                }),
            ],
        ),
        Resource::DataDir => (
            "data dir size",
            Unit::Bytes,
            false,
            vec![("", |s| s.data_dir_bytes.map(|v| v as f64))],
        ),
    };
    let disk = matches!(what, Resource::DiskRequests | Resource::DiskSectors);
    let mut named: Vec<(String, &ResourceSeries)> = if disk {
        // Machine-wide: once per device, named after it.
        metrics::disks(&report.server).map(|(d, series)| (d.name.clone(), series)).collect()
    } else {
        report.server.iter().map(|m| (m.name.clone(), &m.resources)).collect()
    };
    if let Some(c) = report.client.as_ref().filter(|_| !disk) {
        named.push(("client".to_owned(), &c.resources));
    }
    let mut series = Vec::new();
    let (mut start, mut end) = (0.0f64, report.duration_s);
    for (n, (name, resources)) in named.iter().enumerate() {
        let color = PALETTE[n % PALETTE.len()];
        for (i, (part, figure)) in figures.iter().enumerate() {
            let points: Vec<(f64, f64)> = resources
                .samples
                .iter()
                .filter(|s| s.span_s > 0.0)
                .filter_map(|s| {
                    let v = figure(s)?;
                    Some(if rate { (s.t_s - s.span_s / 2.0, v / s.span_s) } else { (s.t_s, v) })
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            for s in &resources.samples {
                start = start.min(s.t_s - s.span_s);
                end = end.max(s.t_s);
            }
            let label = if part.is_empty() { name.clone() } else { format!("{name} {part}") };
            // The second figure of a pair is drawn thinner and paler in the same color.
            let (width, opacity) = if i == 0 { (2, 1.0) } else { (1, 0.6) };
            series.push(Line { label, color, width, opacity, segments: vec![points] });
        }
    }
    let max = series
        .iter()
        .flat_map(|s| s.segments.iter().flatten())
        .map(|&(_, y)| y)
        .fold(0.0, f64::max);
    let (scale, y_desc) = unit.axis(max);
    for line in &mut series {
        for point in line.segments.iter_mut().flatten() {
            point.1 /= scale;
        }
    }
    let note = series.is_empty().then(|| format!("no {title} was sampled"));
    draw(&Chart {
        title: titled(report, None, &format!("{title} over time")),
        x_desc: "time since start (s)".to_owned(),
        y_desc,
        x: start..end.max(start + 1.0),
        y: 0.0..headroom(max / scale),
        x_labels: None,
        markers: series.iter().all(|s| s.segments.iter().all(|p| p.len() <= MAX_MARKED_POINTS)),
        series,
        points: Vec::new(),
        note,
    })
}

/// Colors of a resource plot's series, one per member (and the client).
const PALETTE: [RGBColor; 6] =
    [TAB_BLUE, TAB_ORANGE, TAB_GREEN, RGBColor(148, 103, 189), RGBColor(140, 86, 75), GREY];

/// The unit of a resource plot's values.
#[derive(Clone, Copy)]
enum Unit {
    Percent,
    Bytes,
    BytesPerSecond,
    PerSecond,
}

impl Unit {
    /// What the values are divided by on the axis, and its description, for values up to
    /// `max`: bytes in decimal units, so that labels stay short.
    fn axis(self, max: f64) -> (f64, String) {
        let (scale, prefix) = if max >= 2e9 {
            (1e9, "G")
        } else if max >= 2e6 {
            (1e6, "M")
        } else if max >= 2e3 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        match self {
            Unit::Percent => (1.0, "percent of one core".to_owned()),
            Unit::Bytes => (scale, format!("{prefix}B")),
            Unit::BytesPerSecond => (scale, format!("{prefix}B per second")),
            Unit::PerSecond if scale > 1.0 => (scale, format!("{prefix} per second")),
            Unit::PerSecond => (1.0, "per second".to_owned()),
        }
    }
}
