//! A worker thread's CPU: which CPU it runs on ([`pin_to`]), how much CPU time it used
//! ([`thread_cpu`]), and how busy it was ([`BusyMeter`]: the share of wall time it was not
//! parked, kept by its runtime's park hooks in [`parking`]). Nothing here runs per request.

use std::time::{Duration, Instant};

/// Pins the calling thread to one CPU.
pub(super) fn pin_to(cpu: usize) -> std::io::Result<()> {
    crate::affinity::pin_current_thread(&[cpu])
}

/// CPU time this thread has used.
pub(super) fn thread_cpu() -> Option<Duration> {
    #[cfg(unix)]
    {
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
        Some(Duration::new(u64::try_from(t.tv_sec()).ok()?, u32::try_from(t.tv_nsec()).ok()?))
    }
    #[cfg(not(unix))]
    None
}

/// The window a worker's busiest stretch is measured over.
pub(super) const BUSY_WINDOW: Duration = Duration::from_secs(1);

/// How long this worker thread has been parked, waiting for the network or a timer with
/// nothing to run: kept by its runtime's park hooks, a clock read each side of a park.
pub(super) mod parking {
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    thread_local! {
        static SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
        static PARKED: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    }

    pub(in crate::load) fn park() {
        SINCE.set(Some(Instant::now()));
    }

    pub(in crate::load) fn unpark() {
        if let Some(since) = SINCE.take() {
            PARKED.set(PARKED.get() + since.elapsed());
        }
    }

    /// Time parked so far on this thread.
    pub(super) fn parked() -> Duration {
        PARKED.get()
    }
}

/// How busy a worker thread is: the share of wall time it was not parked, per
/// [`BUSY_WINDOW`], sampled where it publishes its progress (nothing per request). A thread
/// that never parks never waited for the server: it set the pace. (Time the kernel kept it
/// from running counts as busy: the requests waited all the same.)
#[derive(Debug, Default)]
pub(super) struct BusyMeter {
    /// Where the current window began: wall time and time parked.
    window: Option<(Instant, Duration)>,
    /// Where the phase began.
    phase: Option<(Instant, Duration)>,
    /// The busiest full window so far.
    peak: Option<f64>,
}

impl BusyMeter {
    pub(super) fn start(&mut self) {
        let now = Some(clocks());
        self.window = now;
        self.phase = now;
        self.peak = None;
    }

    pub(super) fn sample(&mut self) {
        let Some(start) = self.window else { return };
        let now = clocks();
        if now.0 - start.0 >= BUSY_WINDOW {
            let busy = busy_between(start, now);
            self.peak = Some(self.peak.map_or(busy, |p| p.max(busy)));
            self.window = Some(now);
        }
    }

    /// The busiest full window, or the whole phase when it had none; and the whole phase.
    pub(super) fn finish(&mut self) -> Option<(f64, f64)> {
        self.sample();
        let run = busy_between(self.phase?, clocks());
        Some((self.peak.unwrap_or(run).max(0.0), run))
    }
}

/// Now, and the time this thread has been parked so far.
fn clocks() -> (Instant, Duration) {
    (Instant::now(), parking::parked())
}

/// The share of the wall time from `a` to `b` spent not parked.
fn busy_between(a: (Instant, Duration), b: (Instant, Duration)) -> f64 {
    let wall = (b.0 - a.0).as_secs_f64();
    if wall <= 0.0 {
        return 0.0;
    }
    (1.0 - b.1.saturating_sub(a.1).as_secs_f64() / wall).clamp(0.0, 1.0)
}
