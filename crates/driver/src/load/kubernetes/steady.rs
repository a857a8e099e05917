//! A modelled cluster's store in steady state, beside the load: the hour of events a
//! running cluster holds, preloaded on leases that expire while the run goes
//! ([`preload_events`]), and what their expiry does, observed from etcd ([`observe_expiry`]).

use std::collections::BTreeMap;
use std::time::Instant;

use etcd_client::{EventType, PutOptions, WatchFilterType, WatchOptions};
use etcdlat_core::scenario::EventPreload;
use etcdlat_core::workload::keyspace::random_value;
use etcdlat_core::workload::kubernetes::write_key;
use etcdlat_core::workload::size::{draw, name_seed};
use tokio::sync::watch;

use crate::error::DriverError;

/// Puts in flight at once while preloading events.
const PRELOAD_IN_FLIGHT: usize = 16;

/// Writes `events`' windows, youngest first, each on leases granted just before its
/// events with the TTL its age leaves it ([`EventPreload::ttl_left_s`]), `lease-objects`
/// events a lease, under `/registry/events/ns-<n>/event-<seed>-p-<n>`; returns the leases
/// granted. Granted window by window, so that the oldest window's short TTL runs from
/// just before the run, not from the start of a long preload. As the apiserver's creates
/// would have written them, but as plain Puts: the preload is not measured.
///
/// # Errors
/// [`DriverError::Setup`] when a grant or a put fails.
pub(crate) async fn preload_events(
    client: &etcd_client::Client,
    events: &EventPreload,
    seed: u64,
) -> Result<u64, DriverError> {
    let total = events.events();
    let failed = |n: u64| DriverError::Setup { failed: n.min(total), total };
    let per_lease = events.op.lease_objects.max(1);
    // One buffer of the largest size; each event is a slice of it, of its own size.
    let sizes = &events.op.object_size;
    let value = random_value(sizes.max() as usize, seed);
    let (prefix, name_prefix) = (events.op.prefix(), format!("event-{seed:016x}-p-"));
    let size_seed = name_seed(&format!("{prefix}{name_prefix}"));
    let mut granted = 0;
    for k in 1..=events.windows {
        let mut leases = Vec::new();
        for _ in 0..events.leases_per_window() {
            let lease = client.clone().lease_grant(events.ttl_left_s(k), None).await;
            leases.push(lease.map_err(|_| failed(total))?.id());
        }
        granted += leases.len() as u64;
        let first = (k - 1) * events.per_window;
        let mut tasks = tokio::task::JoinSet::new();
        for part in 0..PRELOAD_IN_FLIGHT as u64 {
            let mut client = client.clone();
            let (value, prefix, name_prefix) = (value.clone(), prefix.clone(), name_prefix.clone());
            let sizes = sizes.clone();
            let namespaces = events.op.namespaces;
            let mine: Vec<(u64, i64)> = (part..events.per_window)
                .step_by(PRELOAD_IN_FLIGHT)
                .map(|at| (first + at, leases[(at / per_lease) as usize]))
                .collect();
            tasks.spawn(async move {
                let (mut key, mut failures) = (Vec::new(), 0u64);
                for (n, lease) in mine {
                    write_key(&mut key, &prefix, namespaces, &name_prefix, n);
                    let opts = PutOptions::new().with_lease(lease);
                    let size = sizes.at(draw(size_seed, n)) as usize;
                    if client.put(key.clone(), &value[..size], Some(opts)).await.is_err() {
                        failures += 1;
                    }
                }
                failures
            });
        }
        let mut failures = 0;
        while let Some(joined) = tasks.join_next().await {
            failures += joined.unwrap_or(events.per_window);
        }
        if failures > 0 {
            return Err(failed(failures));
        }
    }
    Ok(granted)
}

/// What the leases' expiry deleted during the measured run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Expiry {
    /// Expiries that deleted keys: the distinct revisions of the deletes (etcd revokes a
    /// lease in one transaction, deleting all its keys at one revision).
    pub(crate) leases: u64,
    /// Keys deleted.
    pub(crate) keys: u64,
    /// The most keys one expiry deleted.
    pub(crate) largest: u64,
}

/// Watches `prefix` (a resource whose objects only a lease's expiry deletes: the run
/// never deletes them itself) for deletes alone (etcd's `NOPUT` filter: its creates are
/// not sent), from `from_revision` on, until `stop` turns true; counts those that arrive
/// from `measure_start` on. A watch etcd ends (compacted, cancelled) ends the count.
pub(crate) async fn observe_expiry(
    mut client: etcd_client::Client,
    prefix: String,
    from_revision: i64,
    measure_start: Instant,
    mut stop: watch::Receiver<bool>,
) -> Expiry {
    let mut by_revision: BTreeMap<i64, u64> = BTreeMap::new();
    let opts = WatchOptions::new()
        .with_prefix()
        .with_start_revision(from_revision)
        .with_filters([WatchFilterType::NoPut]);
    if let Ok(mut stream) = client.watch(prefix, Some(opts)).await {
        loop {
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => break,
                message = stream.message() => {
                    let Ok(Some(resp)) = message else { break };
                    if resp.canceled() {
                        break;
                    }
                    if Instant::now() < measure_start {
                        continue;
                    }
                    for event in resp.events() {
                        if event.event_type() == EventType::Delete
                            && let Some(kv) = event.kv()
                        {
                            *by_revision.entry(kv.mod_revision()).or_default() += 1;
                        }
                    }
                }
            }
        }
    }
    Expiry {
        leases: by_revision.len() as u64,
        keys: by_revision.values().sum(),
        largest: by_revision.values().copied().max().unwrap_or(0),
    }
}
