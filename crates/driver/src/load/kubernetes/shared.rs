//! What the `k8s-*` operations of a run share across its workers: the watch caches, one
//! per resource per apiserver ([`Shared`]), the release whose read path they follow, the invariants' counts ([`Checks`]), and the end of the run,
//! where the last worker to end checks the caches and takes what they recorded.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use etcdlat_core::Scenario;
use etcdlat_core::invariant::Invariant;
use etcdlat_core::recorder::kubernetes::WatchRecord;
use etcdlat_core::workload::apiserver::ApiserverVersion;

use super::cache::Cache;
use super::checks::Checks;
use super::stream::RangeStreamSupport;
use super::{Action, Layout, Workload};
use crate::transport::Conn;

/// What the `k8s-*` operations of a run share across its workers, as the apiservers'
/// requests share their storage: each apiserver's watch caches, one per resource and name
/// prefix, and the checks' counts. Logical client `c` is served by apiserver
/// `c % apiservers`.
pub(crate) struct Shared {
    /// By apiserver and the layout of the objects they hold.
    pub(super) caches: HashMap<(u32, Layout), Arc<Cache>>,
    /// The scenario's `[kubernetes] apiservers` (1 without a model).
    pub(super) apiservers: u32,
    /// The release whose read path the requests follow.
    pub(super) release: ApiserverVersion,
    /// Whether each apiserver tries RangeStream for its lists, when the release does (the
    /// driver's, kept across runs).
    pub(super) streams: Option<Arc<RangeStreamSupport>>,
    pub(super) checks: Arc<Checks>,
    /// Workers whose part of the run has not ended: the last to end checks the caches
    /// and records them and the checks.
    running: AtomicUsize,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("caches", &self.caches.keys())
            .field("release", &self.release)
            .finish_non_exhaustive()
    }
}

/// What the last worker to end records of the apiserver's operations: the checks' counts,
/// by [`Invariant::index`], and each watch cache's watch, by its (resource, `watch`) slot.
pub(crate) struct Ended {
    pub violations: [u64; Invariant::COUNT],
    pub watches: Vec<(usize, WatchRecord)>,
}

impl Shared {
    /// The caches `plans` need, each apiserver's: one for each layout that an update, a
    /// delete, a consistent list or the consistency checker reads, and one for each
    /// resource that lives write to and none of those reads. The release and the number of
    /// apiservers are `scenario`'s `[kubernetes]` model's (the current release and one
    /// without); lists stream when the release does and `support` says the apiserver
    /// tries.
    pub(crate) fn new<'a>(
        plans: impl IntoIterator<Item = &'a Workload>,
        scenario: &Scenario,
        support: &Arc<RangeStreamSupport>,
    ) -> Self {
        let plans: Vec<&Workload> = plans.into_iter().collect();
        let model = scenario.kubernetes.as_ref();
        let apiservers = model.map_or(1, |k| u32::try_from(k.apiservers).unwrap_or(u32::MAX));
        let release = model.map_or(ApiserverVersion::CURRENT, |k| k.apiserver);
        let streams = release.streams_lists().then(|| Arc::clone(support));
        let checks = Arc::<Checks>::default();
        let mut caches = HashMap::new();
        for apiserver in 0..apiservers {
            let how = (apiserver, streams.clone());
            for plan in plans.iter().filter(|p| p.cached()) {
                caches.entry((apiserver, plan.layout.clone())).or_insert_with(|| {
                    let (objects, slot) = (plan.cached_objects, plan.watch_slot);
                    let how = how.clone();
                    Arc::new(Cache::new(&plan.layout, objects, slot, Arc::clone(&checks), how))
                });
            }
            // Lives' writes reach the cache of their resource, as every write the apiserver
            // makes does: another operation's, or else one of their own that holds no
            // object (their names are without bound), for its watch and their events'
            // delivery.
            for plan in plans.iter().filter(|p| p.action == Action::Lifecycle) {
                let watched = plan.layout.watched();
                let has = |(a, l): &(u32, Layout)| *a == apiserver && l.watched() == watched;
                if !caches.keys().any(has) {
                    let checks = Arc::clone(&checks);
                    let cache = Cache::new(&plan.layout, 0, plan.watch_slot, checks, how.clone());
                    caches.insert((apiserver, plan.layout.clone()), Arc::new(cache));
                }
            }
        }
        Self { caches, apiservers, release, streams, checks, running: AtomicUsize::new(0) }
    }

    /// Each apiserver's cache of the objects of `layout`, by apiserver; empty when it has
    /// none.
    pub(super) fn caches_of(&self, layout: &Layout) -> Vec<Arc<Cache>> {
        (0..self.apiservers)
            .filter_map(|a| self.caches.get(&(a, layout.clone())).cloned())
            .collect()
    }

    /// Each apiserver's cache that watches the whole resource whose prefix is `prefix`,
    /// whatever objects it holds (the first by name prefix, when several do), by apiserver.
    pub(super) fn caches_of_resource(&self, prefix: &str) -> Vec<Arc<Cache>> {
        (0..self.apiservers)
            .filter_map(|a| {
                let of_resource =
                    self.caches.iter().filter(|((b, l), _)| *b == a && l.watched() == prefix);
                of_resource.min_by_key(|((_, l), _)| &l.name_prefix).map(|(_, c)| Arc::clone(c))
            })
            .collect()
    }

    /// Whether the run has watch caches to fill.
    pub(crate) fn has_caches(&self) -> bool {
        !self.caches.is_empty()
    }

    /// Fills every cache and starts its watch on `conn`, on this thread (a worker's: the
    /// watches run there), before the run starts; the clients need not wait for it then.
    pub(crate) async fn fill(&self, conn: &Conn) -> Result<(), tonic::Status> {
        for cache in self.caches.values() {
            cache.start(conn).await?;
        }
        Ok(())
    }

    /// The run starts on `workers` workers and is measured from `measure_from`; before its
    /// jobs are handed out.
    pub(crate) fn begin(&self, workers: usize, measure_from: Instant) {
        self.running.store(workers, Ordering::Release);
        for cache in self.caches.values() {
            cache.measure_from(measure_from);
        }
    }

    /// A worker's part of the run ended. The last worker to end (every request of the run
    /// answered or abandoned) checks each watch cache against a fresh list on `conn`
    /// ([`Invariant::CacheDivergence`]), within a bound (a cluster that no longer answers
    /// leaves them unchecked, which is said in the log), and takes what is recorded; the
    /// others get `None`.
    pub(crate) async fn end(&self, conn: Option<&Conn>) -> Option<Ended> {
        if self.running.fetch_sub(1, Ordering::AcqRel) != 1 {
            return None;
        }
        let started = || self.caches.values().filter(|c| c.started());
        if let Some(conn) = conn {
            for cache in started() {
                let checked = tokio::time::timeout(END_CHECK, cache.diverged(conn)).await;
                match checked {
                    Ok(Ok(diverged)) => {
                        self.checks.violated_times(Invariant::CacheDivergence, diverged);
                    }
                    Ok(Err(e)) => tracing::warn!(error = %e, "a watch cache could not be checked"),
                    Err(_) => {
                        tracing::warn!("a watch cache could not be checked in {END_CHECK:?}");
                    }
                }
            }
        }
        let watches = started().map(|c| c.take_watch()).collect();
        Some(Ended { violations: self.checks.counts(), watches })
    }
}

/// How long the check of a watch cache at the end may take.
const END_CHECK: std::time::Duration = std::time::Duration::from_secs(10);
