//! One precise timer per emulator thread, shared by every delay line on it.
//!
//! tokio's timer wheel ticks in whole milliseconds and rounds every deadline up to the next
//! tick, which would add up to a millisecond to each emulated delay: more than a 200 µs link
//! is worth. A timerfd armed with the exact remaining time and watched by the runtime's own
//! reactor wakes the thread within the kernel's hrtimer resolution instead, with no thread
//! of its own and no spinning.
//!
//! One timerfd per thread, not one per direction of each connection: the deadlines wait in a
//! binary heap, the timerfd is armed for the earliest, and each wake-up releases every
//! sleeper whose deadline has passed. Under load a wake-up then forwards many connections'
//! chunks at once, where one timer each cost a `timerfd_settime`, an epoll event and a read
//! per chunk, and a thread that fell behind on them delivered every chunk later still.
//!
//! Waking a thread that sleeps in `epoll_wait` still takes time, tens of microseconds on a
//! virtual machine (the host has to run the idle vCPU again), and it would add to every
//! emulated delay. So the timer learns how late it wakes (a moving average) and arms that
//! much early, up to [`MAX_HEAD_START`]: delays come out right on average, a chunk may leave
//! a few microseconds early, and nothing spins.
//!
//! The timer lives on one thread (a current-thread runtime's `LocalSet`): its sleepers and
//! its heap are plain `RefCell`s, with no lock on the path of a chunk.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::{Future, poll_fn};
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

/// The most the timer arms early to make up for its wake-up lateness.
pub(crate) const MAX_HEAD_START: Duration = Duration::from_micros(200);

/// The timer of one emulator thread: [`Timer::run`] drives it, [`Timer::sleeper`] hands out
/// the handles its delay lines sleep with.
#[derive(Debug)]
pub(crate) struct Timer {
    fd: AsyncFd<Fd>,
    state: RefCell<State>,
}

/// tokio's reactor wants `AsRawFd`, which nix's `TimerFd` does not implement (only `AsFd`).
#[derive(Debug)]
struct Fd(TimerFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

#[derive(Debug, Default)]
struct State {
    /// Deadlines waited for, earliest first: when, the sleeper's slot, and which of its
    /// sleeps (a sleep dropped before its deadline leaves a stale entry, skipped).
    due: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    /// One slot per [`Sleeper`], reused after it is dropped.
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// The sleep tickets handed out so far.
    tickets: u64,
    /// When the timerfd is armed to expire, if it is.
    armed: Option<Instant>,
    /// The task in [`Timer::run`], woken when a deadline earlier than the armed one comes.
    driver: Option<Waker>,
    /// How late the timerfd has been waking, a moving average over about 8 wake-ups, in
    /// nanoseconds.
    lateness_ns: u64,
    /// How many times the timerfd has expired.
    expiries: u64,
}

#[derive(Debug, Default)]
struct Slot {
    /// The sleep now waiting, until its deadline releases it.
    waiting: Option<u64>,
    waker: Option<Waker>,
}

impl State {
    fn head_start(&self) -> Duration {
        Duration::from_nanos(self.lateness_ns).min(MAX_HEAD_START)
    }

    /// Releases every sleep due by `horizon`.
    fn release(&mut self, horizon: Instant) {
        while let Some(&Reverse((when, slot, ticket))) = self.due.peek() {
            if when > horizon {
                break;
            }
            self.due.pop();
            let slot = &mut self.slots[slot];
            if slot.waiting == Some(ticket) {
                slot.waiting = None;
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
        }
    }
}

impl Timer {
    /// A timer on the monotonic clock (the clock `Instant` reads). Must be called inside a
    /// tokio runtime with I/O enabled; [`Timer::run`] must then be spawned on the same thread.
    pub(crate) fn new() -> io::Result<Rc<Self>> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // `AsyncFd::new` is deprecated because a caller could close the descriptor while it is
        // registered (`register`, its replacement, is `unsafe` for that, and this workspace
        // forbids `unsafe`). Here the descriptor is owned by the value registered and closed
        // only when it is dropped, after deregistration: the contract holds.
        #[allow(deprecated)]
        let fd = AsyncFd::new(Fd(fd))?;
        Ok(Rc::new(Self { fd, state: RefCell::default() }))
    }

    /// How early it arms: the wake-up lateness it has learned, at most [`MAX_HEAD_START`].
    pub(crate) fn head_start(&self) -> Duration {
        self.state.borrow().head_start()
    }

    /// How many times it has woken its thread.
    #[cfg(test)]
    pub(crate) fn expiries(&self) -> u64 {
        self.state.borrow().expiries
    }

    /// A handle for one delay line to sleep with, one sleep at a time.
    pub(crate) fn sleeper(self: &Rc<Self>) -> Sleeper {
        let mut s = self.state.borrow_mut();
        let slot = match s.free.pop() {
            Some(slot) => slot,
            None => {
                s.slots.push(Slot::default());
                s.slots.len() - 1
            }
        };
        Sleeper { timer: Rc::clone(self), slot }
    }

    /// Wakes the sleepers as their deadlines pass, for as long as the runtime runs; fails
    /// only when the timerfd does (then nothing on its thread is delivered any more).
    pub(crate) async fn run(self: Rc<Self>) -> io::Result<()> {
        poll_fn(|cx| self.poll_run(cx)).await
    }

    fn poll_run(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            // An expiry first, before its sleepers are released: it tells how late it woke.
            if let Poll::Ready(ready) = self.fd.poll_read_ready(cx) {
                // `wait` reads the expiration count; before expiry the non-blocking read says
                // EAGAIN, which `try_io` takes as "not ready after all" and clears readiness.
                if let Ok(expired) =
                    ready?.try_io(|fd| fd.get_ref().0.wait().map_err(io::Error::from))
                {
                    expired?;
                    let mut s = self.state.borrow_mut();
                    s.expiries += 1;
                    if let Some(at) = s.armed.take() {
                        let late = Instant::now().saturating_duration_since(at);
                        let late_ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
                        s.lateness_ns = (s.lateness_ns * 7 + late_ns.min(1_000_000)) / 8;
                    }
                }
            }
            let mut s = self.state.borrow_mut();
            let head_start = s.head_start();
            s.release(Instant::now() + head_start);
            s.driver = Some(cx.waker().clone());
            // Nothing to wait for: a sleeper earlier than what it is armed for (if anything)
            // wakes this task, and so does the armed expiry when it comes (it must be waited
            // for, or a sleeper later than it would never be armed for).
            let Some(&Reverse((next, _, _))) = s.due.peek() else {
                drop(s);
                if self.fd.poll_read_ready(cx).is_pending() {
                    return Poll::Pending;
                }
                continue;
            };
            // After `release`, `next - head_start` is in the future.
            let at = next.checked_sub(head_start).unwrap_or(next);
            if s.armed != Some(at) {
                // Relative: `Instant` and CLOCK_MONOTONIC are the same clock on Linux, but
                // std does not expose an `Instant`'s timespec, so an absolute deadline cannot
                // be written. Never zero, which would disarm it.
                let left =
                    at.saturating_duration_since(Instant::now()).max(Duration::from_nanos(1));
                self.fd.get_ref().0.set(
                    Expiration::OneShot(TimeSpec::from_duration(left)),
                    TimerSetTimeFlags::empty(),
                )?;
                s.armed = Some(at);
            }
            drop(s);
            if self.fd.poll_read_ready(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }
}

/// One delay line's way to sleep on its thread's [`Timer`].
#[derive(Debug)]
pub(crate) struct Sleeper {
    timer: Rc<Timer>,
    slot: usize,
}

impl Sleeper {
    /// Returns at `deadline` (at once when it has passed), give or take the wake-up lateness
    /// the timer has learned: never more than [`MAX_HEAD_START`] early.
    pub(crate) fn sleep_until(&mut self, deadline: Instant) -> Sleep<'_> {
        Sleep { sleeper: self, deadline, ticket: None }
    }

    /// The timer it sleeps on.
    pub(crate) fn timer(&self) -> &Timer {
        &self.timer
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let mut s = self.timer.state.borrow_mut();
        s.slots[self.slot] = Slot::default();
        s.free.push(self.slot);
    }
}

/// A sleep until a deadline ([`Sleeper::sleep_until`]).
#[derive(Debug)]
pub(crate) struct Sleep<'a> {
    sleeper: &'a mut Sleeper,
    deadline: Instant,
    /// Its ticket in the timer's heap, once it waits there.
    ticket: Option<u64>,
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let slot = this.sleeper.slot;
        let mut s = this.sleeper.timer.state.borrow_mut();
        if let Some(ticket) = this.ticket {
            if s.slots[slot].waiting != Some(ticket) {
                return Poll::Ready(());
            }
            let waker = &mut s.slots[slot].waker;
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        let head_start = s.head_start();
        let at = this.deadline.checked_sub(head_start).unwrap_or(this.deadline);
        if at <= Instant::now() {
            return Poll::Ready(());
        }
        s.tickets += 1;
        let ticket = s.tickets;
        this.ticket = Some(ticket);
        s.slots[slot] = Slot { waiting: Some(ticket), waker: Some(cx.waker().clone()) };
        s.due.push(Reverse((this.deadline, slot, ticket)));
        // The timer re-arms for a deadline earlier than the one it waits for.
        if s.armed.is_none_or(|armed| at < armed)
            && let Some(driver) = &s.driver
        {
            driver.wake_by_ref();
        }
        Poll::Pending
    }
}

impl Drop for Sleep<'_> {
    fn drop(&mut self) {
        let mut s = self.sleeper.timer.state.borrow_mut();
        let slot = &mut s.slots[self.sleeper.slot];
        if self.ticket.is_some() && slot.waiting == self.ticket {
            slot.waiting = None;
        }
    }
}

/// Runs `test` with a timer driven on a `LocalSet` of a current-thread runtime, as an
/// emulator thread runs them.
#[cfg(test)]
pub(crate) fn on_a_timer<F, Fut>(test: F)
where
    F: FnOnce(Rc<Timer>) -> Fut,
    Fut: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let timer = Timer::new().unwrap();
        tokio::task::spawn_local(Rc::clone(&timer).run());
        test(timer).await;
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    // How late it wakes is a figure for the emulator benchmark (benches/README.md), not a
    // timed test: here only that it never wakes before its head start and can be reused.
    #[test]
    fn never_wakes_before_its_head_start() {
        on_a_timer(|timer| async move {
            let mut sleeper = timer.sleeper();
            for micros in [1, 50, 300, 2_000, 300, 300, 300] {
                let deadline = Instant::now() + Duration::from_micros(micros);
                sleeper.sleep_until(deadline).await;
                assert!(
                    Instant::now() + MAX_HEAD_START >= deadline,
                    "woke too early for {micros} µs"
                );
            }
            assert!(timer.state.borrow().lateness_ns > 0, "it learned how late it wakes");
        });
    }

    #[test]
    fn a_past_deadline_returns_at_once() {
        on_a_timer(|timer| async move {
            let mut sleeper = timer.sleeper();
            let t0 = Instant::now();
            sleeper.sleep_until(t0 - Duration::from_millis(1)).await;
            sleeper.sleep_until(t0).await;
        });
    }

    #[test]
    fn one_timer_releases_many_sleepers_each_at_its_own_deadline() {
        on_a_timer(|timer| async move {
            let t0 = Instant::now();
            // Deadlines out of order, a later one first: the timer re-arms for earlier ones.
            let offsets_ms = [9u64, 3, 6, 1, 12, 3, 8, 2];
            let sleeps = offsets_ms.map(|ms| {
                let mut sleeper = timer.sleeper();
                tokio::task::spawn_local(async move {
                    let deadline = t0 + Duration::from_millis(ms);
                    sleeper.sleep_until(deadline).await;
                    (deadline, Instant::now())
                })
            });
            for (ms, sleep) in offsets_ms.iter().zip(sleeps) {
                let (deadline, woke) = sleep.await.unwrap();
                assert!(woke + MAX_HEAD_START >= deadline, "{ms} ms woke early");
                // Generous: the machine is shared; a sleeper left behind would wait for ever.
                assert!(woke < deadline + Duration::from_millis(500), "{ms} ms woke late");
            }
            // A sleep dropped before its deadline leaves nothing to wake.
            let mut dropped = timer.sleeper();
            let gone = tokio::time::timeout(
                Duration::from_millis(1),
                dropped.sleep_until(Instant::now() + Duration::from_secs(60)),
            );
            assert!(gone.await.is_err());
            drop(dropped);
            let mut reused = timer.sleeper();
            reused.sleep_until(Instant::now() + Duration::from_millis(1)).await;
        });
    }
}
