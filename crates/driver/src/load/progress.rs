//! Live progress of a run for a progress display, published by each worker a few times
//! a second (never per request).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live progress of the current run, for a progress display: requests completed so far,
/// published by each worker a few times a second (never per request).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    workers: Arc<std::sync::Mutex<Vec<Arc<WorkerProgress>>>>,
}

/// One worker's published progress.
#[derive(Debug, Default)]
pub(crate) struct WorkerProgress {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub p99_us: AtomicU64,
}

impl Progress {
    fn sum(&self, f: impl Fn(&WorkerProgress) -> u64) -> u64 {
        self.workers.lock().map(|w| w.iter().map(|p| f(p)).sum()).unwrap_or(0)
    }

    /// Requests completed (ok or failed) in the measured part of the current or last run.
    #[must_use]
    pub fn completed(&self) -> u64 {
        self.sum(|p| p.requests.load(Ordering::Relaxed))
    }

    /// Failed requests so far.
    #[must_use]
    pub fn errors(&self) -> u64 {
        self.sum(|p| p.errors.load(Ordering::Relaxed))
    }

    /// The worst p99 latency of the current interval across workers, microseconds.
    #[must_use]
    pub fn interval_p99_us(&self) -> u64 {
        self.workers
            .lock()
            .map(|w| w.iter().map(|p| p.p99_us.load(Ordering::Relaxed)).max().unwrap_or(0))
            .unwrap_or(0)
    }

    pub(super) fn reset(&self, workers: usize) -> Vec<Arc<WorkerProgress>> {
        let counters: Vec<Arc<WorkerProgress>> =
            (0..workers).map(|_| Arc::new(WorkerProgress::default())).collect();
        if let Ok(mut w) = self.workers.lock() {
            w.clone_from(&counters);
        }
        counters
    }
}
