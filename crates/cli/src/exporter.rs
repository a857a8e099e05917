//! `--metrics-addr`: a Prometheus endpoint while etcdlat runs, so that a dashboard shows the
//! load beside etcd's own metrics (the Grafana dashboard in `examples/`).
//!
//! It serves `GET /metrics` in Prometheus' text format (version 0.0.4) from when the plan
//! starts until the last report is written, each run's figures labelled with the run's name
//! (`run`), from the live totals the workers publish a few times a second
//! ([`Progress::live`]): per operation, requests by gRPC code and the latency histogram of
//! the successes, requests in flight, the target and achieved rates, and the client's own
//! CPU time and memory. Figures are of the measured part of the run (warm-up left out).

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use etcdlat_core::schedule::Rate;
use etcdlat_core::{ErrorCode, OpKind};
use etcdlat_driver::{LiveKind, Progress};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Upper bounds of the latency histogram's buckets, seconds: 100 µs doubling to about 13 s,
/// as etcd's own request histograms (and `+Inf`).
fn bucket_bounds_s() -> impl Iterator<Item = f64> {
    (0..18).map(|i| 0.0001 * f64::from(1u32 << i))
}

/// Longest request head read before answering.
const MAX_HEAD: usize = 8 * 1024;

/// How long a scraper may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The run being followed.
#[derive(Default)]
struct Current {
    run: String,
    progress: Option<Progress>,
    rate: Option<Rate>,
    since: Option<Instant>,
    /// The last scrape: when, and requests answered by then; the achieved rate is over the
    /// time since.
    last: Option<(Instant, u64)>,
}

/// The endpoint, serving until [`Exporter::stop`].
pub struct Exporter {
    current: Arc<Mutex<Current>>,
    task: tokio::task::JoinHandle<()>,
}

impl Exporter {
    /// Listens on `addr` (`HOST:PORT`).
    ///
    /// # Errors
    /// When the address cannot be listened on, naming it.
    pub async fn bind(addr: &str) -> Result<Self> {
        let listener =
            TcpListener::bind(addr).await.with_context(|| format!("--metrics-addr {addr}"))?;
        let current = Arc::new(Mutex::new(Current::default()));
        let serving = Arc::clone(&current);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let current = Arc::clone(&serving);
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &current).await {
                        tracing::debug!("--metrics-addr: {e}");
                    }
                });
            }
        });
        Ok(Self { current, task })
    }

    /// Follows the run `run` from now on: its workers publish their totals for it.
    pub fn follow(&self, run: &str, progress: &Progress, rate: Option<Rate>) {
        progress.keep_live();
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        *current = Current {
            run: run.to_owned(),
            progress: Some(progress.clone()),
            rate,
            since: Some(Instant::now()),
            last: None,
        };
    }

    /// Stops serving.
    pub fn stop(self) {
        self.task.abort();
    }
}

/// Answers one connection: the metrics for `GET /metrics`, 404 for any other path.
async fn answer(mut stream: TcpStream, current: &Mutex<Current>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(READ_TIMEOUT, read).await.map_err(std::io::Error::other)??;
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let path = path.split(|&b| b == b'?').next().unwrap_or_default();
    let (status, body) = if method == b"GET" && path == b"/metrics" {
        let mut current = current.lock().unwrap_or_else(PoisonError::into_inner);
        ("200 OK", exposition(&mut current, Instant::now()))
    } else {
        ("404 Not Found", "etcdlat serves /metrics only\n".to_owned())
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// The metrics of the run followed, at `now`; only the client's before any run.
fn exposition(current: &mut Current, now: Instant) -> String {
    let mut out = String::new();
    let run = escape(&current.run);
    let kinds = current.progress.as_ref().map(Progress::live).unwrap_or_default();
    if current.progress.is_some() {
        requests(&mut out, &run, &kinds);
        latency(&mut out, &run, &kinds);
        gauge(&mut out, "etcdlat_requests_in_flight", "Requests sent and not answered yet.");
        for k in &kinds {
            let _ = writeln!(
                out,
                "etcdlat_requests_in_flight{{run=\"{run}\",op=\"{}\"}} {}",
                k.kind,
                k.in_flight()
            );
        }
        let answered: u64 = kinds
            .iter()
            .filter(|k| k.kind != OpKind::RangeFirst)
            .map(|k| k.ok + k.errors.iter().sum::<u64>())
            .sum();
        let since = current.since.unwrap_or(now);
        let (then, before) = current.last.unwrap_or((since, 0));
        let span_s = now.saturating_duration_since(then).as_secs_f64();
        current.last = Some((now, answered));
        gauge(
            &mut out,
            "etcdlat_achieved_rate",
            "Requests answered per second since the previous scrape (or the run's start).",
        );
        let achieved =
            if span_s > 0.0 { answered.saturating_sub(before) as f64 / span_s } else { 0.0 };
        let _ = writeln!(out, "etcdlat_achieved_rate{{run=\"{run}\"}} {achieved}");
        if let Some(target) =
            current.rate.as_ref().and_then(|r| r.at(now.saturating_duration_since(since)))
        {
            gauge(
                &mut out,
                "etcdlat_target_rate",
                "Requests per second the schedule asks for now.",
            );
            let _ = writeln!(out, "etcdlat_target_rate{{run=\"{run}\"}} {target}");
        }
    }
    client(&mut out, &run);
    out
}

fn help(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn gauge(out: &mut String, name: &str, text: &str) {
    help(out, name, "gauge", text);
}

/// Requests answered, by operation and code.
fn requests(out: &mut String, run: &str, kinds: &[LiveKind]) {
    help(
        out,
        "etcdlat_requests_total",
        "counter",
        "Requests answered in the measured run, by operation and gRPC code (OK: succeeded).",
    );
    for k in kinds {
        let _ = writeln!(
            out,
            "etcdlat_requests_total{{run=\"{run}\",op=\"{}\",code=\"OK\"}} {}",
            k.kind, k.ok
        );
        for (code, n) in ErrorCode::ALL.iter().zip(k.errors).filter(|(_, n)| *n > 0) {
            let _ = writeln!(
                out,
                "etcdlat_requests_total{{run=\"{run}\",op=\"{}\",code=\"{code}\"}} {n}",
                k.kind
            );
        }
    }
}

/// The successes' latency, as a Prometheus histogram.
fn latency(out: &mut String, run: &str, kinds: &[LiveKind]) {
    help(
        out,
        "etcdlat_request_duration_seconds",
        "histogram",
        "Latency of the successful requests, from their intended start (HDR, 2 significant digits).",
    );
    for k in kinds {
        let labels = format!("run=\"{run}\",op=\"{}\"", k.kind);
        let h = &k.latency;
        for le in bucket_bounds_s() {
            let le_us = (le * 1e6).round() as u64;
            let n = h.count_between(0, le_us);
            let _ = writeln!(
                out,
                "etcdlat_request_duration_seconds_bucket{{{labels},le=\"{le}\"}} {n}"
            );
        }
        let count = h.len();
        let _ = writeln!(
            out,
            "etcdlat_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {count}"
        );
        let sum_s = h.mean() * count as f64 / 1e6;
        let _ = writeln!(out, "etcdlat_request_duration_seconds_sum{{{labels}}} {sum_s}");
        let _ = writeln!(out, "etcdlat_request_duration_seconds_count{{{labels}}} {count}");
    }
}

/// The client's own CPU time and resident memory.
fn client(out: &mut String, run: &str) {
    let Some((cpu_s, rss_bytes)) = etcdlat_driver::own_usage() else { return };
    help(
        out,
        "etcdlat_client_cpu_seconds_total",
        "counter",
        "CPU time etcdlat has used, user and system, every thread.",
    );
    let _ = writeln!(out, "etcdlat_client_cpu_seconds_total{{run=\"{run}\"}} {cpu_s}");
    gauge(out, "etcdlat_client_resident_memory_bytes", "etcdlat's resident memory.");
    let _ = writeln!(out, "etcdlat_client_resident_memory_bytes{{run=\"{run}\"}} {rss_bytes}");
}

/// A label value with Prometheus' escapes.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a \"b\" \\c\nd"), "a \\\"b\\\" \\\\c\\nd");
    }

    #[test]
    fn before_a_run_only_the_client_is_shown() {
        let text = exposition(&mut Current::default(), Instant::now());
        assert!(!text.contains("etcdlat_requests_total"), "{text}");
        if cfg!(target_os = "linux") {
            assert!(text.contains("etcdlat_client_resident_memory_bytes{run=\"\"} "), "{text}");
        }
    }

    #[test]
    fn buckets_double_from_100_us() {
        let bounds: Vec<f64> = bucket_bounds_s().collect();
        assert_eq!(bounds[0], 0.0001);
        assert!((bounds[17] - 13.1072).abs() < 1e-9, "{bounds:?}");
    }
}
