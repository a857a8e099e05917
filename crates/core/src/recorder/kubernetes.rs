//! The apiserver's requests (`k8s-*`) as Kubernetes counts them: by resource and verb
//! rather than by operation kind, so that lease renewals, node status updates and pod
//! updates (all `k8s-update`) are told apart; lists by how many pages they took; and each
//! node lease's longest time without a successful renewal.
//!
//! A request kind is a *slot*: the driver numbers the (resource, verb) pairs of a run's
//! operations once, the same on every worker, and records by number; the names are the
//! driver's to give when the report is made. Recording never allocates but the first time
//! a slot, a page bucket or a lease table is seen on a worker.
//!
//! A watch cache's watch is a row too, (resource, `watch`): the driver's cache fills a
//! [`WatchRecord`] as events arrive and hands it over once, at the end of the run.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::new_histogram;
use crate::op::ErrorCode;

/// Page buckets of a list: 1, 2, 3-4, 5-8, ... up to 2^31 pages (a list of more falls in
/// the last).
pub const PAGE_BUCKETS: usize = 33;

/// The bucket of a list that took `pages` pages: 0 for one page, `k` for `2^(k-1)+1 ..=
/// 2^k`.
#[must_use]
pub fn page_bucket(pages: u64) -> usize {
    let k = (u64::BITS - pages.saturating_sub(1).leading_zeros()) as usize;
    k.min(PAGE_BUCKETS - 1)
}

/// The pages bucket `k` holds, first and last ([`page_bucket`]).
#[must_use]
pub fn page_bucket_bounds(k: usize) -> (u64, u64) {
    match k {
        0 => (1, 1),
        _ => ((1 << (k - 1)) + 1, 1 << k),
    }
}

/// What one worker recorded of one (resource, verb).
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// Latency of the successes (completion minus intended start), us.
    pub latency: Histogram<u64>,
    /// Successful requests.
    pub ok: u64,
    /// Failed requests by code, indexed by [`ErrorCode::index`].
    pub errors: [u64; ErrorCode::COUNT],
    /// Of the failures, those etcd answered with "mvcc: required revision has been
    /// compacted" (counted in `errors` too, under their code).
    pub compacted: u64,
    /// Compares that failed within the successes (an update's or delete's stale revision).
    pub conflicts: u64,
    /// Attempts beyond the first within the successes.
    pub retries: u64,
    /// The successes' latency by the pages they read, indexed by [`page_bucket`]; a bucket
    /// no request fell in is `None`.
    pub pages: Vec<Option<Histogram<u64>>>,
    /// Each object's renewals, when the slot renews node leases.
    pub renewals: Option<Renewals>,
    /// Progress notifications and consistent reads' waits, when the slot is a watch's.
    pub progress: Option<Progress>,
    /// A list's pages as API calls of their own, when the slot is a list's.
    pub page_calls: Option<PageCalls>,
}

/// A list's pages, each an API call as Kubernetes counts them (a `continue` request is a
/// call of its own), merged over the list's successes: how many there were, how many took
/// longer than the list SLO (a p99 within it is at most 1% of them over), and each list's
/// slowest page.
#[derive(Debug, Clone)]
pub struct PageCalls {
    /// Pages read by successful lists.
    pub pages: u64,
    /// Of those, pages that took longer than the limit they were timed against.
    pub over_limit: u64,
    /// Each successful list's slowest page, us.
    pub slowest: Histogram<u64>,
    /// Keys etcd sent the successful lists, all their pages (a list from the watch cache
    /// reads none).
    pub keys: u64,
}

/// What one worker's watch cache of one resource recorded, filled as its events arrive
/// and handed to the recorder once ([`super::Recorder::record_watch`]).
#[derive(Debug, Clone)]
pub struct WatchRecord {
    /// From each of the worker's own successful writes' answers to its event's arrival on
    /// the cache, us; 0 for an event read before its write's answer.
    pub lag: Histogram<u64>,
    /// Progress notifications received.
    pub progress_notifications: u64,
    /// From a consistent read's request for progress to the revision's delivery, for each
    /// read that waited and was caught up in time, us.
    pub progress_waits: Histogram<u64>,
    /// Watches etcd cancelled with a compact revision: the cache stopped being fed.
    pub compacted: u64,
    /// The apiserver whose cache it is (0 to `apiservers - 1`).
    pub apiserver: u32,
    /// Events etcd delivered on the watch, everyone's writes (the run's own among them).
    pub events: u64,
    /// The namespace it watches, when it watches one of its resource's (node leases'
    /// `kube-node-lease`); `None`: the whole resource.
    pub namespace: Option<String>,
}

impl Default for WatchRecord {
    fn default() -> Self {
        Self {
            lag: new_histogram(),
            progress_notifications: 0,
            progress_waits: new_histogram(),
            compacted: 0,
            apiserver: 0,
            events: 0,
            namespace: None,
        }
    }
}

/// One apiserver's watch of one resource, or of one namespace of it: what etcd sent it
/// ([`Requests::streams`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchStream {
    /// The apiserver (0 to `apiservers - 1`).
    pub apiserver: u32,
    /// The (resource, `watch`) slot of its resource.
    pub slot: usize,
    /// The namespace it watches; `None`: the whole resource.
    pub namespace: Option<String>,
    /// Events delivered.
    pub events: u64,
    /// Progress notifications delivered.
    pub progress_notifications: u64,
    /// Cancelled for a compaction.
    pub compacted: u64,
}

impl WatchRecord {
    /// Forgets what was recorded but the compactions (warm-up's end): a watch cancelled in
    /// warm-up leaves the cache unfed for the measured run too.
    pub fn reset(&mut self) {
        self.lag.reset();
        self.progress_waits.reset();
        self.progress_notifications = 0;
        self.events = 0;
    }

    /// Records `us` of one own write's delivery lag.
    #[inline]
    pub fn lagged(&mut self, us: u64) {
        self.lag.saturating_record(us);
    }

    /// Records `us` of one consistent read's wait for progress.
    pub fn waited(&mut self, us: u64) {
        self.progress_waits.saturating_record(us);
    }
}

/// A watch row's progress notifications and the waits for them, merged over workers.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Progress notifications received.
    pub notifications: u64,
    /// Consistent reads' waits for progress, us ([`WatchRecord::progress_waits`]).
    pub waits: Histogram<u64>,
}

impl RequestRecord {
    fn new() -> Self {
        Self {
            latency: new_histogram(),
            ok: 0,
            errors: [0; ErrorCode::COUNT],
            compacted: 0,
            conflicts: 0,
            retries: 0,
            pages: Vec::new(),
            renewals: None,
            progress: None,
            page_calls: None,
        }
    }

    /// Requests that failed, all codes together.
    #[must_use]
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    fn merge(&mut self, other: &RequestRecord) {
        self.latency.add(&other.latency).expect("same bounds");
        self.ok += other.ok;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.compacted += other.compacted;
        self.conflicts += other.conflicts;
        self.retries += other.retries;
        if self.pages.len() < other.pages.len() {
            self.pages.resize(other.pages.len(), None);
        }
        for (mine, theirs) in self.pages.iter_mut().zip(&other.pages) {
            match (mine.as_mut(), theirs) {
                (Some(m), Some(t)) => m.add(t).expect("same bounds"),
                (None, Some(t)) => *mine = Some(t.clone()),
                _ => {}
            }
        }
        match (&mut self.renewals, &other.renewals) {
            (Some(m), Some(t)) => m.merge(t),
            (None, Some(t)) => self.renewals = Some(t.clone()),
            _ => {}
        }
        match (&mut self.page_calls, &other.page_calls) {
            (Some(m), Some(t)) => {
                m.pages += t.pages;
                m.over_limit += t.over_limit;
                m.slowest.add(&t.slowest).expect("same bounds");
                m.keys += t.keys;
            }
            (None, Some(t)) => self.page_calls = Some(t.clone()),
            _ => {}
        }
        match (&mut self.progress, &other.progress) {
            (Some(m), Some(t)) => {
                m.notifications += t.notifications;
                m.waits.add(&t.waits).expect("same bounds");
            }
            (None, Some(t)) => self.progress = Some(t.clone()),
            _ => {}
        }
    }
}

/// The successful renewals of each object of a resource (node leases) one worker saw: the
/// longest time each went without one, from the run's start to its first, between two, and
/// (once closed) from its last to the run's end.
#[derive(Debug, Clone)]
pub struct Renewals {
    /// The last renewal, us since the recorder's start; [`NEVER`] before the first.
    last_us: Vec<u64>,
    /// The longest gap so far, us.
    longest_us: Vec<u64>,
    closed: bool,
}

/// An object not renewed yet.
const NEVER: u64 = u64::MAX;

impl Renewals {
    fn new(objects: usize) -> Self {
        Self { last_us: vec![NEVER; objects], longest_us: vec![0; objects], closed: false }
    }

    fn renewed(&mut self, object: usize, since_start_us: u64) {
        let (Some(last), Some(longest)) =
            (self.last_us.get_mut(object), self.longest_us.get_mut(object))
        else {
            return;
        };
        let gap = if *last == NEVER { since_start_us } else { since_start_us - *last };
        *longest = (*longest).max(gap);
        *last = since_start_us;
    }

    fn close(&mut self, end_us: u64) {
        if self.closed {
            return;
        }
        for (last, longest) in self.last_us.iter().zip(&mut self.longest_us) {
            let gap = if *last == NEVER { end_us } else { end_us.saturating_sub(*last) };
            *longest = (*longest).max(gap);
        }
        self.closed = true;
    }

    /// Two workers' views of the same objects, both closed: each object's longest gap is at
    /// most the smaller of theirs (each worker's renewals cut the run more coarsely than
    /// all of them together do), and exactly it when only one worker renewed the object (the
    /// other's is the whole run), as with one writer per object.
    fn merge(&mut self, other: &Renewals) {
        if self.longest_us.len() < other.longest_us.len() {
            self.longest_us.resize(other.longest_us.len(), u64::MAX);
            self.last_us.resize(other.last_us.len(), NEVER);
        }
        for (mine, theirs) in self.longest_us.iter_mut().zip(&other.longest_us) {
            *mine = (*mine).min(*theirs);
        }
    }

    /// Each object's longest time without a successful renewal, us, in object order
    /// (meaningful once closed: the run's end is part of it).
    #[must_use]
    pub fn longest_us(&self) -> &[u64] {
        &self.longest_us
    }
}

/// Every (resource, verb) one worker recorded, by slot.
#[derive(Debug, Clone, Default)]
pub struct Requests {
    slots: Vec<Option<RequestRecord>>,
    streams: Vec<WatchStream>,
}

impl Requests {
    fn slot_mut(&mut self, slot: usize) -> &mut RequestRecord {
        if self.slots.len() <= slot {
            self.slots.resize_with(slot + 1, || None);
        }
        self.slots[slot].get_or_insert_with(RequestRecord::new)
    }

    /// Records a success of `slot` that read `pages` pages (0 for a request that is not a
    /// list) after `conflicts` failed compares and `retries` retries.
    #[inline]
    pub(super) fn ok(
        &mut self,
        slot: usize,
        latency_us: u64,
        pages: u64,
        conflicts: u64,
        retries: u64,
    ) {
        let r = self.slot_mut(slot);
        r.latency.record(latency_us).expect("value within bounds");
        r.ok += 1;
        r.conflicts += conflicts;
        r.retries += retries;
        if pages > 0 {
            if r.pages.is_empty() {
                r.pages.resize(PAGE_BUCKETS, None);
            }
            r.pages[page_bucket(pages)]
                .get_or_insert_with(new_histogram)
                .record(latency_us)
                .expect("value within bounds");
        }
    }

    /// Records a successful list of `slot`'s pages as calls: `pages` pages, `over_limit` of
    /// them slower than the list SLO, the slowest `slowest_us`, `keys` keys read from etcd.
    #[inline]
    pub(super) fn page_calls(
        &mut self,
        slot: usize,
        pages: u64,
        over_limit: u64,
        slowest_us: u64,
        keys: u64,
    ) {
        let r = self.slot_mut(slot);
        let calls = r.page_calls.get_or_insert_with(|| PageCalls {
            pages: 0,
            over_limit: 0,
            slowest: new_histogram(),
            keys: 0,
        });
        calls.pages += pages;
        calls.keys += keys;
        calls.over_limit += over_limit;
        calls.slowest.saturating_record(slowest_us);
    }

    /// Records a failure of `slot`.
    #[inline]
    pub(super) fn error(&mut self, slot: usize, code: ErrorCode, compacted: bool) {
        let r = self.slot_mut(slot);
        r.errors[code.index()] += 1;
        r.compacted += u64::from(compacted);
    }

    #[inline]
    pub(super) fn renewed(
        &mut self,
        slot: usize,
        object: u64,
        objects: u64,
        since_start: Duration,
    ) {
        let r = self.slot_mut(slot);
        let objects = usize::try_from(objects).unwrap_or(usize::MAX);
        let renewals = r.renewals.get_or_insert_with(|| Renewals::new(objects));
        let us = u64::try_from(since_start.as_micros()).unwrap_or(u64::MAX - 1);
        renewals.renewed(usize::try_from(object).unwrap_or(usize::MAX), us);
    }

    /// Records what a watch cache of `slot`'s resource recorded: its lags as the row's
    /// successes, its compactions as failures (`OutOfRange`, ErrCompacted's code) counted
    /// compacted, its progress apart.
    pub(super) fn watched(&mut self, slot: usize, watch: &WatchRecord) {
        let r = self.slot_mut(slot);
        r.latency.add(&watch.lag).expect("same bounds");
        r.ok += watch.lag.len();
        r.errors[ErrorCode::OutOfRange.index()] += watch.compacted;
        r.compacted += watch.compacted;
        let progress =
            r.progress.get_or_insert_with(|| Progress { notifications: 0, waits: new_histogram() });
        progress.notifications += watch.progress_notifications;
        progress.waits.add(&watch.progress_waits).expect("same bounds");
        self.streams.push(WatchStream {
            apiserver: watch.apiserver,
            slot,
            namespace: watch.namespace.clone(),
            events: watch.events,
            progress_notifications: watch.progress_notifications,
            compacted: watch.compacted,
        });
    }

    /// Each apiserver's watch of each resource, as recorded.
    #[must_use]
    pub fn streams(&self) -> &[WatchStream] {
        &self.streams
    }

    pub(super) fn close(&mut self, start: Instant, end: Instant) {
        let end_us =
            u64::try_from(end.saturating_duration_since(start).as_micros()).unwrap_or(u64::MAX - 1);
        for r in self.slots.iter_mut().flatten() {
            if let Some(renewals) = &mut r.renewals {
                renewals.close(end_us);
            }
        }
    }

    pub(super) fn merge(&mut self, other: &Requests) {
        self.streams.extend_from_slice(&other.streams);
        for (slot, theirs) in other.slots.iter().enumerate() {
            if let Some(theirs) = theirs {
                self.slot_mut(slot).merge(theirs);
            }
        }
    }

    /// Each slot recorded, with its number.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &RequestRecord)> {
        self.slots.iter().enumerate().filter_map(|(slot, r)| r.as_ref().map(|r| (slot, r)))
    }

    /// Whether nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_fall_in_buckets_of_powers_of_two() {
        let buckets: Vec<usize> = [1, 2, 3, 4, 5, 8, 9, 16, 17].map(page_bucket).to_vec();
        assert_eq!(buckets, [0, 1, 2, 2, 3, 3, 4, 4, 5]);
        for k in 0..10 {
            let (first, last) = page_bucket_bounds(k);
            assert_eq!((page_bucket(first), page_bucket(last)), (k, k));
            assert_eq!(page_bucket(last + 1), k + 1);
        }
        assert_eq!(page_bucket(u64::MAX), PAGE_BUCKETS - 1);
    }

    /// The longest gap counts from the start to the first renewal, between renewals and
    /// from the last to the end; an object one worker never renewed takes the other's.
    #[test]
    fn renewal_gaps_include_the_run_s_ends_and_merge_by_object() {
        let s = |secs: u64| Duration::from_secs(secs);
        let t0 = Instant::now();
        let mut a = Requests::default();
        a.renewed(0, 0, 3, s(5));
        a.renewed(0, 0, 3, s(15));
        a.renewed(0, 0, 3, s(20));
        a.renewed(0, 1, 3, s(2));
        a.close(t0, t0 + s(60));
        let mut b = Requests::default();
        b.renewed(0, 2, 3, s(30));
        b.renewed(0, 2, 3, s(40));
        b.close(t0, t0 + s(60));
        a.merge(&b);
        let (_, r) = a.iter().next().unwrap();
        let longest: Vec<u64> = r.renewals.as_ref().unwrap().longest_us().to_vec();
        assert_eq!(longest, [40, 58, 30].map(|secs| secs * 1_000_000));
        assert_eq!(r.ok, 0, "renewals are counted apart from successes");
    }
}
