//! Reading the figures a report uses out of Prometheus' text exposition format, in one pass
//! over the lines with no copies of them.
//!
//! A member's `/metrics` is read once a second for the whole run, on the client's machine
//! and in its CPU figures, and etcd's is a couple of thousand lines; only a dozen metrics
//! of it are wanted. A general parser (prometheus-parse, before) built a sample with its
//! labels for every line through regular expressions and cost about 5 ms of CPU per member
//! and second; this reads a line's name, compares it with the wanted ones, and only then
//! looks at its labels and value.
//!
//! The format (Prometheus' "Text-based format", version 0.0.4): a sample line is
//! `name{label="value",...} value [timestamp]`, the braces optional; label values are
//! quoted with `\\`, `\"` and `\n` escaped; `#` starts a comment (`# HELP`, `# TYPE`); a
//! histogram is the samples `<name>_bucket{le="..."}`, `<name>_sum` and `<name>_count`.

use etcdlat_core::metrics::Buckets;

/// What to read: `S` counters or gauges by name, and `H` histograms by their base name.
pub(super) struct Wanted<const S: usize, const H: usize> {
    /// Names whose samples are summed over their label sets.
    pub scalars: [&'static str; S],
    /// Histograms whose `_bucket` samples are summed over their label sets, bound by bound.
    pub histograms: [&'static str; H],
}

/// What one exposition had of [`Wanted`]: each in the same place as its name, `None` when
/// it had no sample of it.
#[derive(Debug, PartialEq)]
pub(super) struct Read<const S: usize, const H: usize> {
    pub scalars: [Option<f64>; S],
    pub histograms: [Option<Buckets>; H],
}

/// Why a text is not an exposition.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Malformed {
    /// The line, counting from 1.
    pub line: usize,
    pub why: &'static str,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// Reads `wanted` out of `text`. Lines of other metrics are skipped after their name, so
/// that what they hold is not checked beyond that.
pub(super) fn read<const S: usize, const H: usize>(
    text: &str,
    wanted: &Wanted<S, H>,
) -> Result<Read<S, H>, Malformed> {
    let mut read = Read { scalars: [None; S], histograms: std::array::from_fn(|_| None) };
    for (i, line) in text.lines().enumerate() {
        let malformed = |why| Malformed { line: i + 1, why };
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(line.len());
        if name_end == 0 {
            return Err(malformed("a sample line does not start with a metric name"));
        }
        let name = &line[..name_end];
        let scalar = wanted.scalars.iter().position(|w| *w == name);
        let histogram = name
            .strip_suffix("_bucket")
            .and_then(|base| wanted.histograms.iter().position(|w| *w == base));
        if scalar.is_none() && histogram.is_none() {
            continue;
        }
        let (labels, rest) = split_labels(&line[name_end..]).map_err(malformed)?;
        let value =
            rest.split_whitespace().next().ok_or_else(|| malformed("a sample has no value"))?;
        let value =
            parse_value(value).ok_or_else(|| malformed("a sample's value is not a number"))?;
        if let Some(i) = scalar {
            *read.scalars[i].get_or_insert(0.0) += value;
        }
        if let Some(i) = histogram {
            let le = label(labels, "le").ok_or_else(|| malformed("a bucket has no le label"))?;
            let le = parse_value(le).ok_or_else(|| malformed("a bucket's le is not a number"))?;
            let buckets = read.histograms[i].get_or_insert_with(Vec::new);
            match buckets.iter_mut().find(|(bound, _)| *bound == le) {
                Some(bucket) => bucket.1 += value,
                None => buckets.push((le, value)),
            }
        }
    }
    for buckets in read.histograms.iter_mut().flatten() {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Ok(read)
}

/// The value of label `name` of the first sample of `metric` in `text`, as written: a build's
/// labels (`go_info{version="go1.26.8"} 1`). `None` when no well-formed sample has it.
pub(super) fn label_value<'a>(text: &'a str, metric: &str, name: &str) -> Option<&'a str> {
    text.lines().map(str::trim_start).find_map(|line| {
        let after = line.strip_prefix(metric)?;
        let (labels, _) = split_labels(after).ok().filter(|_| after.starts_with('{'))?;
        label(labels, name)
    })
}

/// Splits what follows a sample's name into its label set (between the braces, without
/// them; empty when there are none) and the rest of the line.
fn split_labels(after_name: &str) -> Result<(&str, &str), &'static str> {
    let Some(inside) = after_name.strip_prefix('{') else {
        return Ok(("", after_name));
    };
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in inside.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Ok((&inside[..i], &inside[i + 1..])),
            _ => {}
        }
    }
    Err("a label set is not closed")
}

/// The value of label `name` in a label set, as written (escapes kept: the labels read
/// here, `le`, are numbers).
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = labels;
    loop {
        rest = rest.trim_start_matches([',', ' ']);
        let (key, after) = rest.split_once('=')?;
        let after = after.trim_start().strip_prefix('"')?;
        let mut escaped = false;
        let end = after.char_indices().find_map(|(i, c)| match c {
            _ if escaped => {
                escaped = false;
                None
            }
            '\\' => {
                escaped = true;
                None
            }
            '"' => Some(i),
            _ => None,
        })?;
        if key.trim() == name {
            return Some(&after[..end]);
        }
        rest = &after[end + 1..];
    }
}

/// A sample value or bound: a float as Go writes it, `+Inf`, `-Inf` or `NaN`.
fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WANTED: Wanted<3, 1> = Wanted {
        scalars: ["process_cpu_seconds_total", "etcd_network_peer_sent_bytes_total", "absent"],
        histograms: ["etcd_disk_wal_fsync_duration_seconds"],
    };

    #[test]
    fn scalars_are_summed_over_label_sets_and_others_skipped() {
        let text = "\
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5e+00 1700000000000
etcd_network_peer_sent_bytes_total{To=\"a\"} 1000
etcd_network_peer_sent_bytes_total{To=\"b\",note=\"} 5 {\\\"x\\\"}\"} 2000
process_cpu_seconds_total_other 99
an_unwanted_metric{with=\"anything at all\" 12
";
        let read = read(text, &WANTED).unwrap();
        assert_eq!(read.scalars, [Some(1.5), Some(3000.0), None]);
        assert_eq!(read.histograms, [None]);
    }

    #[test]
    fn histograms_are_summed_bound_by_bound_and_sorted() {
        let text = "\
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.002\",member=\"a\"} 3
etcd_disk_wal_fsync_duration_seconds_bucket{member=\"a\",le=\"+Inf\"} 4
etcd_disk_wal_fsync_duration_seconds_bucket{member=\"a\", le=\"0.001\"} 1
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\",member=\"b\"} 10
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.002\",member=\"b\"} 10
etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\",member=\"b\"} 10
etcd_disk_wal_fsync_duration_seconds_sum 0.5
etcd_disk_wal_fsync_duration_seconds_count 14
";
        let read = read(text, &WANTED).unwrap();
        assert_eq!(
            read.histograms,
            [Some(vec![(0.001, 11.0), (0.002, 13.0), (f64::INFINITY, 14.0)])]
        );
        // `_sum` and `_count` are other names, not the histogram's buckets nor a scalar.
        assert_eq!(read.scalars, [None, None, None]);
    }

    #[test]
    fn a_label_of_a_build_metric_is_read() {
        let text = "\
# HELP go_info Information about the Go environment.
go_info_other{version=\"go0\"} 1
go_info{version=\"go1.26.8\"} 1
go_info{version=\"go2\"} 1
";
        assert_eq!(label_value(text, "go_info", "version"), Some("go1.26.8"));
        assert_eq!(label_value(text, "go_info", "absent"), None);
        assert_eq!(label_value("go_info 1\n", "go_info", "version"), None);
        assert_eq!(label_value("go_info{version=\"go1 1\n", "go_info", "version"), None);
    }

    #[test]
    fn go_values_are_read() {
        for (text, value) in
            [("2.5e+07", 2.5e7), ("-Inf", f64::NEG_INFINITY), ("+Inf", f64::INFINITY), ("7", 7.0)]
        {
            assert_eq!(parse_value(text), Some(value), "{text}");
        }
        assert!(parse_value("NaN").unwrap().is_nan());
        assert_eq!(parse_value("1,5"), None);
    }

    #[test]
    fn a_wanted_sample_that_is_broken_is_an_error_naming_its_line() {
        for (text, why) in [
            ("process_cpu_seconds_total\n", "a sample has no value"),
            ("process_cpu_seconds_total many\n", "a sample's value is not a number"),
            ("etcd_network_peer_sent_bytes_total{To=\"a} 1\n", "a label set is not closed"),
            (
                "etcd_disk_wal_fsync_duration_seconds_bucket{x=\"1\"} 1\n",
                "a bucket has no le label",
            ),
            ("{le=\"1\"} 1\n", "a sample line does not start with a metric name"),
        ] {
            let text = format!("# a comment\n\n{text}");
            assert_eq!(read(&text, &WANTED), Err(Malformed { line: 3, why }), "{text}");
        }
    }
}
