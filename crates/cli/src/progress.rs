//! The live progress line on stderr, shown only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use etcdlat_driver::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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
