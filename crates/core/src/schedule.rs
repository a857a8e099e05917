//! When requests start: the closed loop of etcd's tool (optionally capped by a rate), or an
//! open loop whose arrivals follow a schedule, constant, Poisson, or in stages.
//!
//! A [`Pacer`] hands out intended start times. In a closed loop the next request may start
//! no earlier than one interval after the previous one, like etcd's token bucket with a
//! burst of one, and its intended start is when it is actually sent. In an open loop the
//! slots are fixed by the schedule whatever happens: when every client is busy the slots
//! pile up, a freed client takes the oldest, and the time it waited counts as latency. That
//! is how a stalled server shows up in the percentiles instead of being hidden
//! (coordinated omission).

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::unit;

/// Closed or open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Each logical client sends its next request when the previous one completes; a rate
    /// caps the whole like etcd's `--rate`. Latency is measured from the send.
    #[default]
    Closed,
    /// Requests arrive at the rate whatever the server does; latency is measured from the
    /// intended arrival.
    Open,
}

/// How open-loop arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Arrivals {
    /// Evenly, one every 1/rate.
    #[default]
    Constant,
    /// A Poisson process: exponentially distributed gaps of mean 1/rate.
    Poisson,
}

/// One stage of a shaped rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Stage {
    /// Requests per second for the whole run (at the end of the stage, when ramped).
    pub rate: u64,
    /// How long the stage lasts.
    #[serde(with = "unit::duration")]
    pub duration: Duration,
    /// Change the rate linearly from the previous stage's rate (0 before the first) instead
    /// of stepping to it.
    #[serde(default)]
    pub ramp: bool,
}

/// The rate over time: a constant, or stages.
#[derive(Debug, Clone, PartialEq)]
pub enum Rate {
    /// Unlimited (closed loop only).
    Unlimited,
    /// The same rate throughout, requests per second.
    Constant(f64),
    /// Stages, one after another; the schedule ends after the last.
    Stages(Vec<Stage>),
}

impl Rate {
    /// The rate `t` after the start, and `None` once the stages are over.
    #[must_use]
    pub fn at(&self, t: Duration) -> Option<f64> {
        match self {
            Self::Unlimited => Some(f64::INFINITY),
            Self::Constant(r) => Some(*r),
            Self::Stages(stages) => {
                let mut begin = Duration::ZERO;
                let mut previous = 0.0;
                for s in stages {
                    let end = begin + s.duration;
                    if t < end {
                        let rate = s.rate as f64;
                        if s.ramp && !s.duration.is_zero() {
                            let f = (t - begin).as_secs_f64() / s.duration.as_secs_f64();
                            return Some(previous + (rate - previous) * f);
                        }
                        return Some(rate);
                    }
                    previous = s.rate as f64;
                    begin = end;
                }
                None
            }
        }
    }

    /// How long the stages last in all (`None` for a constant or unlimited rate).
    #[must_use]
    pub fn length(&self) -> Option<Duration> {
        match self {
            Self::Stages(stages) => Some(stages.iter().map(|s| s.duration).sum()),
            _ => None,
        }
    }

    /// The mean rate over the stages, or the constant rate (for reports).
    #[must_use]
    pub fn mean(&self) -> f64 {
        match self {
            Self::Unlimited => 0.0,
            Self::Constant(r) => *r,
            Self::Stages(stages) => {
                let mut requests = 0.0;
                let mut previous = 0.0;
                for s in stages {
                    let rate = s.rate as f64;
                    let avg = if s.ramp { (previous + rate) / 2.0 } else { rate };
                    requests += avg * s.duration.as_secs_f64();
                    previous = rate;
                }
                let secs = self.length().map_or(0.0, |d| d.as_secs_f64());
                if secs > 0.0 { requests / secs } else { 0.0 }
            }
        }
    }
}

/// Hands out intended start times for one worker's share of the rate.
#[derive(Debug, Clone)]
#[doc(hidden)] // internal: the driver's; not part of the API
pub struct Pacer {
    schedule: Schedule,
    arrivals: Arrivals,
    rate: Rate,
    /// This worker's fraction of the whole rate.
    share: f64,
    start: Instant,
    next: Instant,
    rng: StdRng,
}

/// The slowest a rate may be before a slot is simply "much later": one request a day.
const MIN_RATE: f64 = 1.0 / 86_400.0;

impl Pacer {
    /// A pacer for a worker that carries `share` of the whole `rate`, starting at `start`.
    #[must_use]
    pub fn new(
        schedule: Schedule,
        arrivals: Arrivals,
        rate: Rate,
        share: f64,
        start: Instant,
        seed: u64,
    ) -> Self {
        let mut p = Self {
            schedule,
            arrivals,
            rate,
            share,
            start,
            next: start,
            rng: StdRng::seed_from_u64(seed),
        };
        p.restart(start);
        p
    }

    /// Whether there is any pacing at all (closed loop without a rate has none).
    #[must_use]
    pub fn is_paced(&self) -> bool {
        self.rate != Rate::Unlimited
    }

    /// The schedule.
    #[must_use]
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// Starts the schedule again at `start` (after warm-up).
    pub fn restart(&mut self, start: Instant) {
        self.start = start;
        self.next = start;
        if self.schedule == Schedule::Open && self.arrivals == Arrivals::Poisson {
            // The first arrival of a Poisson process is a gap away too.
            self.next = start + self.gap(start);
        }
    }

    fn gap(&mut self, at: Instant) -> Duration {
        let rate =
            self.rate.at(at.saturating_duration_since(self.start)).unwrap_or(MIN_RATE) * self.share;
        if !rate.is_finite() {
            return Duration::ZERO;
        }
        let mean = 1.0 / rate.max(MIN_RATE);
        let secs = match self.arrivals {
            Arrivals::Constant => mean,
            // Inverse transform sampling of the exponential distribution.
            Arrivals::Poisson => -mean * (1.0 - self.rng.random::<f64>()).ln(),
        };
        Duration::from_secs_f64(secs.min(86_400.0))
    }

    /// The intended start of the next request, asked at `now`; `None` when the schedule is
    /// over (its stages ended) or the slot falls at or after `deadline`.
    pub fn next(&mut self, now: Instant, deadline: Option<Instant>) -> Option<Instant> {
        if !self.is_paced() {
            return Some(now);
        }
        let slot = match self.schedule {
            // A capped closed loop never catches up on time it did not use.
            Schedule::Closed => self.next.max(now),
            Schedule::Open => self.next,
        };
        let since = slot.saturating_duration_since(self.start);
        if self.rate.at(since).is_none() || deadline.is_some_and(|d| slot >= d) {
            return None;
        }
        self.next = slot + self.gap(slot);
        Some(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn open_loop_slots_do_not_move_when_late() {
        let t0 = Instant::now();
        let mut p =
            Pacer::new(Schedule::Open, Arrivals::Constant, Rate::Constant(100.0), 1.0, t0, 1);
        // Asked late (everyone was busy): the slots stay where the schedule put them.
        let late = t0 + ms(55);
        let slots: Vec<_> = (0..4).map(|_| p.next(late, None).unwrap() - t0).collect();
        assert_eq!(slots, [ms(0), ms(10), ms(20), ms(30)]);
    }

    #[test]
    fn closed_loop_cap_never_bursts() {
        let t0 = Instant::now();
        let mut p =
            Pacer::new(Schedule::Closed, Arrivals::Constant, Rate::Constant(100.0), 1.0, t0, 1);
        assert_eq!(p.next(t0, None).unwrap(), t0);
        // The client came back late: its slot is now, and the next one interval after.
        let late = t0 + ms(55);
        assert_eq!(p.next(late, None).unwrap(), late);
        assert_eq!(p.next(late, None).unwrap(), late + ms(10));
    }

    #[test]
    fn share_divides_the_rate() {
        let t0 = Instant::now();
        let mut p =
            Pacer::new(Schedule::Open, Arrivals::Constant, Rate::Constant(100.0), 0.25, t0, 1);
        p.next(t0, None);
        assert_eq!(p.next(t0, None).unwrap() - t0, ms(40));
    }

    #[test]
    fn poisson_arrivals_average_the_rate() {
        let t0 = Instant::now();
        let mut p =
            Pacer::new(Schedule::Open, Arrivals::Poisson, Rate::Constant(1000.0), 1.0, t0, 7);
        let mut last = t0;
        let mut gaps = Vec::new();
        for _ in 0..20_000 {
            let s = p.next(t0, None).unwrap();
            gaps.push((s - last).as_secs_f64());
            last = s;
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00005, "mean gap {mean}");
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // Exponential: the standard deviation equals the mean.
        assert!((var.sqrt() - mean).abs() < 0.0001, "sd {}", var.sqrt());
    }

    #[test]
    fn stages_step_and_ramp_then_end() {
        let rate = Rate::Stages(vec![
            Stage { rate: 100, duration: Duration::from_secs(1), ramp: false },
            Stage { rate: 300, duration: Duration::from_secs(2), ramp: true },
        ]);
        assert_eq!(rate.at(ms(500)), Some(100.0));
        assert_eq!(rate.at(ms(2000)), Some(200.0));
        assert_eq!(rate.at(ms(3000)), None);
        assert_eq!(rate.length(), Some(Duration::from_secs(3)));
        assert!((rate.mean() - 500.0 / 3.0).abs() < 1e-9);
        let t0 = Instant::now();
        let mut p = Pacer::new(Schedule::Open, Arrivals::Constant, rate, 1.0, t0, 1);
        let mut n = 0;
        while p.next(t0, None).is_some() {
            n += 1;
        }
        // 100 in the first second, then a ramp from 100 to 300 over two: ~400.
        assert!((495..=505).contains(&n), "{n} requests");
    }

    #[test]
    fn deadline_ends_the_slots() {
        let t0 = Instant::now();
        let mut p =
            Pacer::new(Schedule::Open, Arrivals::Constant, Rate::Constant(10.0), 1.0, t0, 1);
        let d = Some(t0 + Duration::from_secs(1));
        let mut n = 0;
        while p.next(t0, d).is_some() {
            n += 1;
        }
        assert_eq!(n, 10);
    }
}
