//! The tasks of one worker in a watch run, on its thread with its connections: its watch
//! streams, putters and getter, stepped through the phases the calling task sets.

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use etcdlat_core::{ErrorCode, OpKind};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::phase::Phase;
use super::plan::{Plan, STAMP_LEN, WATCH_GET_RANGE_KEY};
use super::tally::{Local, Watcher, WorkerResult, WorkerState, code};
use crate::load::worker::STOP_GRACE;
use crate::transport::message::Key;
use crate::transport::message::{PutRequest, RangeRequest, WatchResponse};
use crate::transport::{Conn, Kv, WatchReceiver};

/// How often a worker publishes how many events it has seen (never per event).
const PUBLISH_EVERY: Duration = Duration::from_millis(10);

/// Bytes of value buffer allocated at once; each put's value is split off it.
const STAMP_ARENA: usize = 64 << 10;

/// One worker's run: runs on its thread, with its connections.
pub(super) async fn work(
    index: usize,
    plan: Arc<Plan>,
    conns: Rc<[Conn]>,
    mut ctl: watch::Receiver<Phase>,
    status: watch::Sender<WorkerState>,
) -> WorkerResult {
    let local = Rc::new(Local::new(plan));
    let plan = Arc::clone(&local.plan);
    let status = Rc::new(status);
    let publisher = tokio::task::spawn_local(publish(Rc::clone(&local), Rc::clone(&status)));

    let mut streams = JoinSet::new();
    let mut mine = 0;
    for s in 0..plan.streams {
        let (worker, conn) = plan.layout.place(s);
        if worker == index && !plan.stream_watchers(s).is_empty() {
            mine += 1;
            streams.spawn_local(stream(Rc::clone(&local), conns[conn].clone(), s));
        }
    }
    let mut getters = JoinSet::new();
    if plan.get {
        let (worker, conn) = plan.layout.place(0);
        if worker == index {
            getters.spawn_local(getter(Rc::clone(&local), conns[conn].kv.clone(), ctl.clone()));
        }
    }
    let mut putters = JoinSet::new();

    let created = async {
        while local.ready.get() < mine {
            local.ready_changed.notified().await;
        }
    };
    let finished = tokio::select! {
        () = created => false,
        () = finish(&mut ctl) => true,
    };
    if !finished {
        status.send_modify(|s| s.ready = true);
        let phase = match ctl.wait_for(|p| *p != Phase::Create).await {
            Ok(p) => *p,
            Err(_) => Phase::Finish,
        };
        if let (Phase::Put(put_start), Some(puts)) = (phase, &plan.puts) {
            for p in 0..puts.putters.min(puts.total) {
                let (worker, conn) = plan.layout.place(p);
                if worker == index {
                    let kv = conns[conn].kv.clone();
                    putters.spawn_local(putter(Rc::clone(&local), kv, p, put_start, ctl.clone()));
                }
            }
        }
        let puts_done = async { while putters.join_next().await.is_some() {} };
        let finished = tokio::select! {
            () = puts_done => false,
            () = finish(&mut ctl) => true,
        };
        if !finished {
            let expected = local.tally.get().expected;
            status.send_modify(|s| {
                s.puts_done = Some(expected);
            });
            finish(&mut ctl).await;
        }
    }

    streams.abort_all();
    while streams.join_next().await.is_some() {}
    // Putters and the getter stop after the request in flight; give it the stop grace.
    let settle = async {
        while putters.join_next().await.is_some() {}
        while getters.join_next().await.is_some() {}
    };
    if tokio::time::timeout(STOP_GRACE, settle).await.is_err() {
        putters.abort_all();
        getters.abort_all();
        while putters.join_next().await.is_some() {}
        while getters.join_next().await.is_some() {}
    }
    publisher.abort();
    let _ = publisher.await;
    local.finish()
}

async fn finish(ctl: &mut watch::Receiver<Phase>) {
    let _ = ctl.wait_for(|p| *p == Phase::Finish).await;
}

fn finishing(ctl: &watch::Receiver<Phase>) -> bool {
    ctl.has_changed().is_err() || *ctl.borrow() == Phase::Finish
}

/// Publishes the worker's event count for the calling task.
async fn publish(local: Rc<Local>, status: Rc<watch::Sender<WorkerState>>) {
    let mut tick = tokio::time::interval(PUBLISH_EVERY);
    loop {
        tick.tick().await;
        let seen = local.tally.get().seen();
        status.send_if_modified(|s| {
            let changed = s.seen != seen;
            s.seen = seen;
            changed
        });
    }
}

/// Watch stream `s`: creates its watchers, pipelined, then receives their events until the
/// task is aborted.
async fn stream(local: Rc<Local>, conn: Conn, s: u64) {
    let plan = Arc::clone(&local.plan);
    let watchers = plan.stream_watchers(s);
    let first = watchers.start;
    let n = (watchers.end - watchers.start) as usize;
    local.issue(OpKind::WatchCreate, n as u64);
    let sent = vec![Cell::new(plan.start); n];
    let key = |w: u64| &plan.keys[plan.key_of(w)][..];
    let (mut requests, mut responses) = match conn.watch().await {
        Ok(stream) => stream,
        Err(status) => {
            local.creates_failed(n, code(&status), Instant::now());
            local.stream_ready();
            return;
        }
    };
    for (k, sent) in sent.iter().enumerate() {
        sent.set(Instant::now());
        if requests.create(key(first + k as u64), &plan.options).is_err() {
            // The stream has failed; the receiving side learns why.
            break;
        }
    }
    receive(&local, &mut responses, &sent).await;
    // Kept until the stream ends: dropping it earlier would half-close the stream.
    drop(requests);
}

/// Receives a stream's responses: the `created` answers in order, then events.
async fn receive(local: &Local, responses: &mut WatchReceiver, sent: &[Cell<Instant>]) {
    let n = sent.len();
    let mut created = 0;
    let mut ids: HashMap<i64, usize> = HashMap::with_capacity(n);
    let mut watchers = vec![Watcher::default(); n];
    loop {
        let message = responses.message::<WatchResponse>().await;
        let now = Instant::now();
        let response = match message {
            Ok(Some(response)) => response,
            ended => {
                let code = match ended {
                    Err(status) => code(&status),
                    _ => ErrorCode::Unavailable,
                };
                if created < n {
                    local.creates_failed(n - created, code, now);
                    local.stream_ready();
                } else {
                    tracing::warn!(
                        code = code.name(),
                        "a watch stream ended during the run; its watchers' later events are missing"
                    );
                }
                return;
            }
        };
        if response.created {
            if created < n {
                let ok = !response.canceled;
                local.created(sent[created].get(), now, ok);
                if ok {
                    ids.insert(response.watch_id, created);
                }
                created += 1;
                if created == n {
                    local.stream_ready();
                }
            }
            continue;
        }
        if response.canceled {
            tracing::warn!(
                watch_id = response.watch_id,
                reason = response.cancel_reason,
                compact_revision = response.compact_revision,
                "etcd cancelled a watcher; its later events are missing"
            );
            continue;
        }
        if response.events.is_empty() {
            continue;
        }
        if let Some(&k) = ids.get(&response.watch_id) {
            local.on_events(&mut watchers[k], &response.events, now);
        }
    }
}

/// Putter `first` sends puts `first`, `first + putters`, ... until `put-total`, each no
/// earlier than its slot when a rate is set.
async fn putter(
    local: Rc<Local>,
    mut kv: Kv,
    first: u64,
    put_start: Instant,
    mut ctl: watch::Receiver<Phase>,
) {
    let plan = Arc::clone(&local.plan);
    let Some(puts) = &plan.puts else { return };
    let keys: Vec<Key> = plan.keys.iter().map(|k| Key::new(k)).collect();
    let mut stamp = Stamp::new(puts.filler.clone());
    let mut i = first;
    while i < puts.total && !finishing(&ctl) {
        if puts.rate > 0 {
            let slot = put_start + Duration::from_secs_f64(i as f64 / puts.rate as f64);
            tokio::select! {
                () = tokio::time::sleep_until(slot.into()) => {}
                () = finish(&mut ctl) => break,
            }
        }
        let key = plan.key_of(i);
        local.put_sent(key);
        let sent = Instant::now();
        let value = stamp.value(plan.since_base(sent));
        let value_bytes = value.len() as u64;
        let result = kv.put(PutRequest { key: keys[key].clone(), value, lease: 0 }).await;
        let done = Instant::now();
        local.put_done(result, key, sent, done, value_bytes);
        i += puts.putters;
    }
}

/// watch-get's client: serializable gets back to back until the run finishes.
async fn getter(local: Rc<Local>, mut kv: Kv, ctl: watch::Receiver<Phase>) {
    let request = RangeRequest {
        key: Bytes::from_static(WATCH_GET_RANGE_KEY),
        serializable: true,
        ..RangeRequest::default()
    };
    while !finishing(&ctl) {
        local.issue(OpKind::Range, 1);
        let sent = Instant::now();
        let result = kv.range(request.clone()).await;
        let done = Instant::now();
        let mut rec = local.recorder.borrow_mut();
        match result {
            Ok(response) => {
                rec.record_ok(OpKind::Range, sent, sent, done);
                let bytes = response.kvs.iter().map(|kv| kv.value.len() as u64).sum();
                rec.record_payload(OpKind::Range, response.kvs.len() as u64, bytes);
            }
            Err(status) => {
                rec.record_error(OpKind::Range, code(&status), done);
                rec.record_error_message(OpKind::Range, code(&status), status.message());
            }
        }
        drop(rec);
        local.last.set(done);
    }
}

/// Makes put values that start with their send time, split off one buffer so that a put
/// allocates nothing of its own (one allocation per [`STAMP_ARENA`] bytes).
struct Stamp {
    arena: BytesMut,
    filler: Bytes,
}

impl Stamp {
    fn new(filler: Bytes) -> Self {
        debug_assert!(filler.len() >= STAMP_LEN);
        Self { arena: BytesMut::new(), filler }
    }

    fn value(&mut self, nanos: u64) -> Bytes {
        let len = self.filler.len();
        if self.arena.capacity() < len {
            self.arena.reserve(len.max(STAMP_ARENA));
        }
        self.arena.put_u64_le(nanos);
        self.arena.extend_from_slice(&self.filler[STAMP_LEN..]);
        self.arena.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::tally::stamp_of;

    #[test]
    fn stamps_carry_the_send_time_and_nothing_else_changes() {
        let filler = Bytes::from(vec![7u8; 32]);
        let mut stamp = Stamp::new(filler);
        let a = stamp.value(42);
        let b = stamp.value(u64::MAX - 1);
        assert_eq!(a.len(), 32);
        assert_eq!(stamp_of(&a, 32), Some(42));
        assert_eq!(stamp_of(&b, 32), Some(u64::MAX - 1));
        assert!(a[STAMP_LEN..].iter().all(|&x| x == 7));
        assert_eq!(stamp_of(&a, 16), None, "a value of another length is not this run's");
        let big = Bytes::from(vec![1u8; STAMP_ARENA * 2]);
        assert_eq!(Stamp::new(big).value(3).len(), STAMP_ARENA * 2);
    }
}
