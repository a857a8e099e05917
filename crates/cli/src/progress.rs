//! The live progress line on stderr, shown only when stderr is a terminal; and the run's
//! intervals streamed as JSON lines as they end (`--jsonl`).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use etcdlat_core::Report;
use etcdlat_driver::{LiveInterval, Progress};
use etcdlat_render::jsonl;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::oneshot;

use crate::output::Lines;

/// A progress display for one run; stops drawing when dropped.
pub struct Display {
    bar: ProgressBar,
    task: tokio::task::JoinHandle<()>,
}

impl Display {
    /// Starts polling `progress` for a run of `total` requests (or `duration`), if stderr is
    /// a terminal and `enabled`.
    pub fn start(
        enabled: bool,
        progress: Progress,
        total: Option<u64>,
        duration: Option<Duration>,
    ) -> Option<Self> {
        if !enabled || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = match total {
            Some(t) if duration.is_none() => ProgressBar::new(t),
            _ => ProgressBar::new_spinner(),
        };
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} requests, {per_sec:.0}, {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let b = bar.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tick.tick().await;
                b.set_position(progress.completed());
                b.set_message(format!(
                    "{} errors, p99 {:.1} ms this interval",
                    progress.errors(),
                    progress.interval_p99_us() as f64 / 1000.0
                ));
            }
        });
        Some(Self { bar, task })
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.task.abort();
        self.bar.finish_and_clear();
    }
}

/// How often the stream looks for intervals every worker has finished. The workers publish
/// every 100 ms, so a line is written at most about 200 ms after its interval ends.
const STREAM_EVERY: Duration = Duration::from_millis(100);

/// A run's intervals written as JSON lines while it goes; [`Stream::finish`] writes the
/// rest and the summary.
pub struct Stream {
    task: tokio::task::JoinHandle<(Lines, Result<()>)>,
    stop: oneshot::Sender<()>,
    progress: Progress,
    run: String,
}

impl Stream {
    /// Starts writing the finished intervals of the run `run` that `progress` follows.
    pub fn start(mut lines: Lines, progress: Progress, run: String) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let (p, name) = (progress.clone(), run.clone());
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(STREAM_EVERY);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = &mut stopped => return (lines, Ok(())),
                }
                if let Err(e) = write_intervals(&mut lines, &name, &p.take_intervals()) {
                    return (lines, Err(e));
                }
            }
        });
        Self { task, stop, progress, run }
    }

    /// Writes the intervals left once the run is over, then `report`'s summary line (none
    /// when the run stopped before measuring).
    ///
    /// # Errors
    /// When a line cannot be written.
    pub async fn finish(self, report: Option<&Report>) -> Result<Lines> {
        let _ = self.stop.send(());
        let (mut lines, written) = self.task.await?;
        written?;
        write_intervals(&mut lines, &self.run, &self.progress.take_intervals())?;
        if let Some(report) = report {
            lines.write(&jsonl::summary_line(report))?;
        }
        Ok(lines)
    }
}

/// Writes one line per interval.
fn write_intervals(lines: &mut Lines, run: &str, intervals: &[LiveInterval]) -> Result<()> {
    if intervals.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for i in intervals {
        let (start, end) = (i.start.as_secs_f64(), i.end.as_secs_f64());
        text.push_str(&jsonl::interval_line(run, start, end, &i.ops));
    }
    lines.write(&text)
}
