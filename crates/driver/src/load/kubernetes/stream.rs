//! Whether each modelled apiserver reads its lists through RangeStream, as k8s.io/apiserver
//! 1.37's feature support checker (`pkg/storage/feature/feature_support_checker.go`)
//! decides: it tries RangeStream; an etcd before 3.7 answers Unimplemented, and the
//! apiserver then lists through Range for `rangeStreamRecheckInterval` (10 minutes) before
//! it tries again. The [`crate::Driver`] keeps it across its runs, as an apiserver's
//! process outlives any one run's requests.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an apiserver refused a RangeStream lists through Range before it tries again.
const RECHECK: Duration = Duration::from_secs(600);

/// When each apiserver (by number) was last refused a RangeStream.
#[derive(Debug, Default)]
pub(crate) struct RangeStreamSupport {
    refused: Mutex<Vec<Option<Instant>>>,
}

impl RangeStreamSupport {
    /// Whether apiserver `apiserver` tries RangeStream now: it was not refused one within
    /// the last 10 minutes.
    pub(super) fn supported(&self, apiserver: u32) -> bool {
        let refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        let at = refused.get(apiserver as usize).copied().flatten();
        at.is_none_or(|at| at.elapsed() >= RECHECK)
    }

    /// Apiserver `apiserver` was refused a RangeStream (etcd answered Unimplemented).
    pub(super) fn refused(&self, apiserver: u32) {
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if refused.len() <= apiserver as usize {
            refused.resize(apiserver as usize + 1, None);
        }
        refused[apiserver as usize] = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_apiserver_lists_through_range_for_ten_minutes() {
        let support = RangeStreamSupport::default();
        assert!(support.supported(0) && support.supported(2));
        support.refused(2);
        assert!(support.supported(0) && !support.supported(2));
        support.refused.lock().unwrap()[2] = Instant::now().checked_sub(RECHECK);
        assert!(support.supported(2), "tried again after 10 minutes");
    }
}
