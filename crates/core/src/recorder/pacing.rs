//! How requests kept to a paced schedule: how many started late and by how much, and how
//! late the client's own timer woke for the slots it slept until.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::new_histogram;

/// How well requests kept to a paced schedule.
#[derive(Debug, Clone)]
pub struct Pacing {
    /// Requests started by the schedule.
    pub paced: u64,
    /// Requests that started more than [`LATE_AFTER`] after their intended start.
    pub late: u64,
    /// Actual send minus intended start, us (0 when on time).
    pub lateness: Histogram<u64>,
    /// How late the client woke up for slots it slept until, us: etcdlat's own timer and
    /// scheduler lateness, as opposed to waiting for a free client.
    pub timer: Histogram<u64>,
    /// The first and the last actual start of a paced request.
    pub span: Option<(Instant, Instant)>,
}

impl Pacing {
    /// Requests started per second: the starts after the first over the time from the first
    /// to the last. On schedule this is the rate itself, unaffected by how long the last
    /// requests then take to complete.
    #[must_use]
    pub fn start_rate(&self) -> f64 {
        match self.span {
            Some((first, last)) if last > first && self.paced > 1 => {
                (self.paced - 1) as f64 / last.duration_since(first).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

/// A request that starts later than this after its intended start is counted as late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

impl Pacing {
    pub(super) fn new() -> Self {
        Self { paced: 0, late: 0, lateness: new_histogram(), timer: new_histogram(), span: None }
    }

    pub(super) fn merge(&mut self, other: &Pacing) {
        self.paced += other.paced;
        self.late += other.late;
        self.lateness.add(&other.lateness).expect("same bounds");
        self.timer.add(&other.timer).expect("same bounds");
        self.span = match (self.span, other.span) {
            (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
            (a, b) => a.or(b),
        };
    }
}
