//! A sleep precise to a few microseconds, for the emulator's delay lines.
//!
//! tokio's timer wheel ticks in whole milliseconds and rounds every deadline up to the next
//! tick, which would add up to a millisecond to each emulated delay: more than a 200 µs link
//! is worth. A timerfd armed with the exact remaining time and watched by the runtime's own
//! reactor wakes the task within the kernel's hrtimer resolution instead, with no thread of
//! its own and no spinning.
//!
//! Waking a thread that sleeps in `epoll_wait` still takes time, tens of microseconds on a
//! virtual machine (the host has to run the idle vCPU again), and it would add to every
//! emulated delay. So each timer learns how late it wakes (a moving average) and arms that
//! much early, up to [`MAX_HEAD_START`]: delays come out right on average, a chunk may leave
//! a few microseconds early, and nothing spins.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

/// The most a timer arms early to make up for its wake-up lateness.
const MAX_HEAD_START: Duration = Duration::from_micros(200);

/// One timer, reused for every sleep of its owner (one per direction of a connection).
#[derive(Debug)]
pub(crate) struct PreciseTimer {
    fd: AsyncFd<Timer>,
    /// How late it has been waking, a moving average over about 8 sleeps, in nanoseconds.
    lateness_ns: u64,
}

/// tokio's reactor wants `AsRawFd`, which nix's `TimerFd` does not implement (only `AsFd`).
#[derive(Debug)]
struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl PreciseTimer {
    /// A disarmed timer on the monotonic clock (the clock `Instant` reads). Must be called
    /// inside a tokio runtime with I/O enabled.
    pub(crate) fn new() -> io::Result<Self> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // `AsyncFd::new` is deprecated because a caller could close the descriptor while it is
        // registered (`register`, its replacement, is `unsafe` for that, and this workspace
        // forbids `unsafe`). Here the descriptor is owned by the value registered and closed
        // only when it is dropped, after deregistration: the contract holds.
        #[allow(deprecated)]
        let fd = AsyncFd::new(Timer(fd))?;
        Ok(Self { fd, lateness_ns: 0 })
    }

    /// How early it arms: the wake-up lateness it has learned, at most [`MAX_HEAD_START`].
    pub(crate) fn head_start(&self) -> Duration {
        Duration::from_nanos(self.lateness_ns).min(MAX_HEAD_START)
    }

    /// Returns at `deadline` (at once when it has passed), give or take the wake-up lateness
    /// it has learned: never more than [`MAX_HEAD_START`] early.
    pub(crate) async fn sleep_until(&mut self, deadline: Instant) -> io::Result<()> {
        let armed = deadline.checked_sub(self.head_start()).unwrap_or(deadline);
        let Some(left) = armed.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())
        else {
            return Ok(());
        };
        // Relative: `Instant` and CLOCK_MONOTONIC are the same clock on Linux, but std does
        // not expose an `Instant`'s timespec, so an absolute deadline cannot be written.
        self.fd
            .get_ref()
            .0
            .set(Expiration::OneShot(TimeSpec::from_duration(left)), TimerSetTimeFlags::empty())?;
        loop {
            let mut ready = self.fd.readable().await?;
            // `wait` reads the expiration count; before expiry the non-blocking read says
            // EAGAIN, which `try_io` takes as "not ready after all" and clears readiness.
            match ready.try_io(|fd| fd.get_ref().0.wait().map_err(io::Error::from)) {
                Ok(done) => {
                    let late = Instant::now().saturating_duration_since(armed);
                    let late_ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
                    self.lateness_ns = (self.lateness_ns * 7 + late_ns.min(1_000_000)) / 8;
                    return done;
                }
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    // How late it wakes is a figure for the emulator benchmark (benches/README.md), not a
    // timed test: here only that it never wakes before its head start and can be reused.
    #[tokio::test]
    async fn never_wakes_before_its_head_start() {
        let mut timer = PreciseTimer::new().unwrap();
        for micros in [1, 50, 300, 2_000, 300, 300, 300] {
            let deadline = Instant::now() + Duration::from_micros(micros);
            timer.sleep_until(deadline).await.unwrap();
            assert!(Instant::now() + MAX_HEAD_START >= deadline, "woke too early for {micros} µs");
        }
        assert!(timer.lateness_ns > 0, "it learned how late it wakes");
    }

    #[tokio::test]
    async fn a_past_deadline_returns_at_once() {
        let mut timer = PreciseTimer::new().unwrap();
        let t0 = Instant::now();
        timer.sleep_until(t0 - Duration::from_millis(1)).await.unwrap();
        timer.sleep_until(t0).await.unwrap();
    }
}
