//! A worker's share of a watch run: what it records and what it counts ([`Local`]), what
//! it tells the calling task of that ([`WorkerState`]), and how an event or a failed put is
//! judged.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Instant;

use etcdlat_core::{ErrorCode, OpKind, Recorder};
use tokio::sync::Notify;

use super::ack::Ack;
use super::plan::{Events, Plan, STAMP_LEN};
use crate::transport::message::{Event, PutResponse};
use crate::transport::outcome_unknown;

/// Counts of one worker.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    pub(super) watchers: u64,
    pub(super) puts: u64,
    pub(super) expected: u64,
    pub(super) received: u64,
    pub(super) duplicate: u64,
    pub(super) out_of_order: u64,
    pub(super) before_ack: u64,
    /// Puts whose outcome is unknown, and the watchers of their keys.
    pub(super) uncertain_puts: u64,
    pub(super) uncertain_events: u64,
}

/// What a worker tells the calling task, a few times a phase.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct WorkerState {
    /// Its watchers are created (or failed).
    pub(super) ready: bool,
    /// Once its puts are over: the events its acknowledged puts made, over every watcher.
    pub(super) puts_done: Option<u64>,
    /// Events its watchers have seen (received less duplicates).
    pub(super) seen: u64,
}

impl Tally {
    pub(super) fn seen(&self) -> u64 {
        self.received - self.duplicate
    }

    pub(super) fn add(&mut self, other: &Tally) {
        self.watchers += other.watchers;
        self.puts += other.puts;
        self.expected += other.expected;
        self.received += other.received;
        self.duplicate += other.duplicate;
        self.out_of_order += other.out_of_order;
        self.before_ack += other.before_ack;
        self.uncertain_puts += other.uncertain_puts;
        self.uncertain_events += other.uncertain_events;
    }
}

/// What a worker hands back once, at the end.
pub(super) struct WorkerResult {
    pub(super) recorder: Recorder,
    pub(super) tally: Tally,
    /// Its last event, put, get or create.
    pub(super) last: Instant,
}

/// A worker's share of the run: its streams, putters and getter, their recorder and counts.
pub(super) struct Local {
    pub(super) plan: Arc<Plan>,
    pub(super) recorder: RefCell<Recorder>,
    pub(super) issued: [Cell<u64>; OpKind::COUNT],
    pub(super) tally: Cell<Tally>,
    /// Watchers of the keys of the puts sent and not answered yet: what the puts a stop
    /// abandons could have made.
    pub(super) in_flight_events: Cell<u64>,
    pub(super) last: Cell<Instant>,
    /// Streams whose watchers are all created (or failed).
    pub(super) ready: Cell<usize>,
    pub(super) ready_changed: Notify,
}

/// What a watcher remembers.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Watcher {
    /// Revision of the last event in order.
    revision: i64,
}

impl Local {
    pub(super) fn new(plan: Arc<Plan>) -> Self {
        Self {
            recorder: RefCell::new(Recorder::new(&plan.kinds, plan.start, plan.interval)),
            issued: Default::default(),
            tally: Cell::new(Tally::default()),
            in_flight_events: Cell::new(0),
            last: Cell::new(plan.start),
            ready: Cell::new(0),
            ready_changed: Notify::new(),
            plan,
        }
    }

    pub(super) fn issue(&self, kind: OpKind, n: u64) {
        let issued = &self.issued[kind.index()];
        issued.set(issued.get() + n);
    }

    fn count(&self, f: impl FnOnce(&mut Tally)) {
        let mut tally = self.tally.get();
        f(&mut tally);
        self.tally.set(tally);
    }

    pub(super) fn stream_ready(&self) {
        self.ready.set(self.ready.get() + 1);
        self.ready_changed.notify_one();
    }

    pub(super) fn created(&self, sent: Instant, now: Instant, ok: bool) {
        let mut rec = self.recorder.borrow_mut();
        if ok {
            rec.record_ok(OpKind::WatchCreate, sent, sent, now);
            self.count(|t| t.watchers += 1);
        } else {
            // etcd answers a create it refuses with `created` and `canceled`.
            rec.record_error(OpKind::WatchCreate, ErrorCode::FailedPrecondition, now);
        }
        self.last.set(now);
    }

    pub(super) fn creates_failed(&self, n: usize, code: ErrorCode, now: Instant) {
        self.recorder.borrow_mut().record_errors(OpKind::WatchCreate, code, n as u64, now);
    }

    pub(super) fn on_events(&self, watcher: &mut Watcher, events: &[Event], arrival: Instant) {
        let plan = &*self.plan;
        let arrival_ns = plan.since_base(arrival);
        let mut tally = self.tally.get();
        let mut rec = self.recorder.borrow_mut();
        for event in events {
            let Some(kv) = &event.kv else { continue };
            let revision = kv.mod_revision;
            let sent_ns = match &plan.events {
                Events::CatchUp { first, last } => {
                    if revision < *first || revision > *last {
                        continue;
                    }
                    None
                }
                Events::Stamped { value_len } | Events::Acked { value_len, .. } => {
                    match stamp_of(&kv.value, *value_len) {
                        Some(ns) => Some(ns),
                        None => continue,
                    }
                }
            };
            tally.received += 1;
            if revision <= watcher.revision {
                if revision == watcher.revision {
                    tally.duplicate += 1;
                } else {
                    tally.out_of_order += 1;
                }
                continue;
            }
            watcher.revision = revision;
            let Some(sent_ns) = sent_ns else { continue };
            let sent = plan.at(sent_ns);
            rec.record_ok(OpKind::WatchEvent, sent, sent, arrival);
            if let Events::Acked { acks, .. } = &plan.events {
                match acks.lookup(revision) {
                    Ack::At(acked_ns) if acked_ns <= arrival_ns => {
                        let acked = plan.at(acked_ns);
                        rec.record_ok(OpKind::WatchEventAcked, acked, acked, arrival);
                    }
                    Ack::At(_) | Ack::Pending => tally.before_ack += 1,
                    Ack::Forgotten => {}
                }
            }
        }
        drop(rec);
        self.tally.set(tally);
        self.last.set(arrival);
    }

    /// A put to distinct key `key` is about to be sent.
    pub(super) fn put_sent(&self, key: usize) {
        self.issue(OpKind::Put, 1);
        let watchers = self.plan.watchers_of_key[key];
        self.in_flight_events.set(self.in_flight_events.get() + watchers);
    }

    pub(super) fn put_done(
        &self,
        result: Result<PutResponse, tonic::Status>,
        key: usize,
        sent: Instant,
        done: Instant,
        value_bytes: u64,
    ) {
        let watchers = self.plan.watchers_of_key[key];
        self.in_flight_events.set(self.in_flight_events.get() - watchers);
        let mut rec = self.recorder.borrow_mut();
        match result {
            Ok(response) => {
                if let (Events::Acked { acks, .. }, Some(header)) =
                    (&self.plan.events, response.header)
                {
                    acks.publish(header.revision, self.plan.since_base(done));
                }
                rec.record_ok(OpKind::Put, sent, sent, done);
                rec.record_payload(OpKind::Put, 1, value_bytes);
                self.count(|t| {
                    t.puts += 1;
                    t.expected += watchers;
                });
            }
            Err(status) => {
                rec.record_error(OpKind::Put, code(&status), done);
                rec.record_error_message(OpKind::Put, code(&status), status.message());
                if outcome_unknown(&status) {
                    self.count(|t| {
                        t.uncertain_puts += 1;
                        t.uncertain_events += watchers;
                    });
                }
            }
        }
        self.last.set(done);
    }

    /// Hands back the recorder and counts; requests issued and never completed (abandoned
    /// at a stop) are counted as cancelled, and abandoned puts as of unknown outcome.
    pub(super) fn finish(&self) -> WorkerResult {
        let plan = &self.plan;
        let mut recorder = self.recorder.replace(Recorder::new(&[], plan.start, plan.interval));
        let last = self.last.get();
        for kind in [OpKind::WatchCreate, OpKind::Put, OpKind::Range] {
            let abandoned =
                self.issued[kind.index()].get().saturating_sub(recorder.requests_of(kind));
            recorder.record_errors(kind, ErrorCode::Cancelled, abandoned, last);
            if kind == OpKind::Put {
                // Sent, perhaps applied, and their events perhaps seen.
                self.count(|t| {
                    t.uncertain_puts += abandoned;
                    t.uncertain_events += self.in_flight_events.get();
                });
            }
        }
        WorkerResult { recorder, tally: self.tally.get(), last }
    }
}

/// The first [`STAMP_LEN`] bytes of a value this run put (of `len` bytes), as nanoseconds.
pub(super) fn stamp_of(value: &[u8], len: usize) -> Option<u64> {
    if value.len() != len {
        return None;
    }
    value.first_chunk::<STAMP_LEN>().map(|b| u64::from_le_bytes(*b))
}

pub(super) fn code(status: &tonic::Status) -> ErrorCode {
    ErrorCode::from_grpc(status.code() as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::plan::one_worker_plan;

    #[test]
    fn puts_of_unknown_outcome_are_counted_with_the_watchers_of_their_keys() {
        let local = Local::new(Arc::new(one_worker_plan(
            "[op.watch]\nstreams = 2\nwatch-per-stream = 3\nwatched-key-total = 2\n\
             key-space-size = 2\nsequential-keys = true\n",
        )));
        assert_eq!(local.plan.watchers_of_key, [3, 3]);
        let put = |key, result| {
            local.put_sent(key);
            let t = Instant::now();
            local.put_done(result, key, t, t, 8);
        };
        put(0, Ok(PutResponse::default()));
        put(1, Err(tonic::Status::unavailable("etcdserver: request timed out")));
        put(0, Err(tonic::Status::unknown("etcdserver: too many requests")));
        // Still in flight when the run stops.
        local.put_sent(1);

        let WorkerResult { recorder, tally, .. } = local.finish();
        assert_eq!((tally.puts, tally.expected), (1, 3), "{tally:?}");
        assert_eq!((tally.uncertain_puts, tally.uncertain_events), (2, 6), "{tally:?}");
        assert_eq!(recorder.requests_of(OpKind::Put), 4);
    }
}
