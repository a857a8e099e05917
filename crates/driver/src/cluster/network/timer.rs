//! A sleep precise to a few microseconds, for the emulator's delay lines.
//!
//! tokio's timer wheel ticks in whole milliseconds and rounds every deadline up to the next
//! tick, which would add up to a millisecond to each emulated delay: more than a 200 µs link
//! is worth. A timerfd armed with the exact remaining time and watched by the runtime's own
//! reactor wakes the task within the kernel's hrtimer resolution instead, with no thread of
//! its own and no spinning.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Instant;

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

/// One timer, reused for every sleep of its owner (one per direction of a connection).
#[derive(Debug)]
pub(crate) struct PreciseTimer {
    fd: AsyncFd<Timer>,
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
        Ok(Self { fd })
    }

    /// Returns at `deadline` (at once when it has passed).
    pub(crate) async fn sleep_until(&mut self, deadline: Instant) -> io::Result<()> {
        let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())
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
                Ok(done) => return done,
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
    // timed test: here only that it never wakes early and can be reused.
    #[tokio::test]
    async fn never_wakes_early() {
        let mut timer = PreciseTimer::new().unwrap();
        for micros in [1, 50, 300, 2_000] {
            let deadline = Instant::now() + Duration::from_micros(micros);
            timer.sleep_until(deadline).await.unwrap();
            assert!(Instant::now() >= deadline, "woke before a {micros} µs deadline");
        }
    }

    #[tokio::test]
    async fn a_past_deadline_returns_at_once() {
        let mut timer = PreciseTimer::new().unwrap();
        let t0 = Instant::now();
        timer.sleep_until(t0 - Duration::from_millis(1)).await.unwrap();
        timer.sleep_until(t0).await.unwrap();
    }
}
