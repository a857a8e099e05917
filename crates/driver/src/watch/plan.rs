//! What a watch run does, worked out once per variant (`watch`, `watch-latency`,
//! `watch-get`) and shared read-only by the workers: streams, watchers and their keys,
//! puts, and how events are checked.

use std::collections::HashMap;
use std::ops::Range;
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcdlat_core::workload::keyspace::{KeyGen, random_value};
use etcdlat_core::{OpKind, Scenario, WatchGetOp, WatchLatencyOp, WatchOp};

use crate::transport::WatchCreate;

use super::ack::Acks;

/// Bytes of the send time at the start of every put's value.
pub(super) const STAMP_LEN: usize = 8;

/// The key watch-get's watchers watch, and the key its gets read (etcd's tool's).
pub(super) const WATCH_GET_KEY: &[u8] = b"watchkey";
pub(super) const WATCH_GET_RANGE_KEY: &[u8] = b"abc";

/// Where connections live: connection `c` on worker `c % workers`, at its index
/// `c / workers` (as the driver's pool places them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub(super) conns: u64,
    pub(super) workers: u64,
}

impl Layout {
    /// The worker and the worker's connection index of connection `c % conns`.
    pub(super) fn place(self, c: u64) -> (usize, usize) {
        let c = c % self.conns;
        ((c % self.workers) as usize, (c / self.workers) as usize)
    }
}

/// Everything the workers need to know about a run, shared read-only.
pub(super) struct Plan {
    /// Kinds whose histograms are allocated up front.
    pub(super) kinds: Vec<OpKind>,
    pub(super) interval: Duration,
    pub(super) layout: Layout,
    pub(super) streams: u64,
    pub(super) watchers: u64,
    /// The distinct watched keys.
    pub(super) keys: Vec<Bytes>,
    /// The distinct key of each watched key; watcher `w` watches, and put `i` writes,
    /// watched key `w % len`, `i % len`.
    pub(super) watched: Vec<usize>,
    /// Watchers of each distinct key.
    pub(super) watchers_of_key: Vec<u64>,
    pub(super) options: WatchCreate,
    pub(super) events: Events,
    pub(super) puts: Option<Puts>,
    /// Whether a getter runs (watch-get).
    pub(super) get: bool,
    /// Events expected, when known before the run (watch-get); otherwise counted per
    /// acknowledged put.
    pub(super) expected: Option<u64>,
    /// Puts made before measuring (watch-get).
    pub(super) setup_puts: u64,
    /// The instant put values count nanoseconds from.
    pub(super) base: Instant,
    /// Start of measurement: watch creation.
    pub(super) start: Instant,
}

/// What an event tells and how it is checked.
pub(super) enum Events {
    /// Its value starts with its put's send time (watch).
    Stamped { value_len: usize },
    /// That, and it is matched by revision to its put's acknowledgement (watch-latency).
    Acked { value_len: usize, acks: Acks },
    /// Watchers catch up on revisions `first..=last` (watch-get).
    CatchUp { first: i64, last: i64 },
}

/// The put phase.
pub(super) struct Puts {
    pub(super) putters: u64,
    pub(super) total: u64,
    /// Per second, for the whole run; 0 = unlimited.
    pub(super) rate: u64,
    /// The value; its first [`STAMP_LEN`] bytes are replaced by the send time.
    pub(super) filler: Bytes,
}

impl Plan {
    pub(super) fn watch(op: &WatchOp, scenario: &Scenario, seed: u64, layout: Layout) -> Self {
        let mut keygen = KeyGen::new(&op.key_space(), seed);
        let watchers = op.streams * op.watch_per_stream;
        let (keys, watched, watchers_of_key) =
            group_keys((0..op.watched_key_total).map(|i| keygen.key(i).to_vec()), watchers);
        let base = Instant::now();
        Self {
            kinds: vec![OpKind::WatchCreate, OpKind::WatchEvent, OpKind::Put],
            interval: scenario.series_interval().length,
            layout,
            streams: op.streams,
            watchers,
            keys,
            watched,
            watchers_of_key,
            options: WatchCreate::default(),
            events: Events::Stamped { value_len: STAMP_LEN },
            puts: Some(Puts {
                putters: u64::from(scenario.load.clients.max(1)),
                total: op.put_total,
                rate: op.put_rate,
                filler: Bytes::from_static(&[0; STAMP_LEN]),
            }),
            get: false,
            expected: None,
            setup_puts: 0,
            base,
            start: base,
        }
    }

    pub(super) fn latency(
        op: &WatchLatencyOp,
        scenario: &Scenario,
        seed: u64,
        layout: Layout,
    ) -> Self {
        let key = random_value(op.key_size as usize, seed.wrapping_add(1));
        let watchers = op.streams * op.watchers_per_stream;
        let (keys, watched, watchers_of_key) = group_keys(std::iter::once(key), watchers);
        let value_len = (op.val_size as usize).max(STAMP_LEN);
        let options = WatchCreate { prev_kv: op.prevkv, ..WatchCreate::default() };
        let base = Instant::now();
        Self {
            kinds: vec![
                OpKind::WatchEvent,
                OpKind::WatchEventAcked,
                OpKind::Put,
                OpKind::WatchCreate,
            ],
            interval: scenario.series_interval().length,
            layout,
            streams: op.streams,
            watchers,
            keys,
            watched,
            watchers_of_key,
            options,
            events: Events::Acked { value_len, acks: Acks::new(op.put_total) },
            puts: Some(Puts {
                putters: 1,
                total: op.put_total,
                rate: op.put_rate,
                filler: random_value(value_len, seed).into(),
            }),
            get: false,
            expected: None,
            setup_puts: 0,
            base,
            start: base,
        }
    }

    pub(super) fn get(
        op: &WatchGetOp,
        scenario: &Scenario,
        (first, last): (i64, i64),
        layout: Layout,
    ) -> Self {
        let (keys, watched, watchers_of_key) =
            group_keys(std::iter::once(WATCH_GET_KEY.to_vec()), op.watchers);
        let base = Instant::now();
        Self {
            kinds: vec![OpKind::Range, OpKind::WatchCreate],
            interval: scenario.series_interval().length,
            layout,
            streams: op.streams,
            watchers: op.watchers,
            keys,
            watched,
            watchers_of_key,
            options: WatchCreate { start_revision: first, ..WatchCreate::default() },
            events: Events::CatchUp { first, last },
            puts: None,
            get: true,
            expected: Some(op.watchers * op.events),
            setup_puts: op.events,
            base,
            start: base,
        }
    }

    /// The watchers of stream `s`: the watchers split evenly over the streams, in order.
    pub(super) fn stream_watchers(&self, s: u64) -> Range<u64> {
        let each = self.watchers / self.streams;
        let rest = self.watchers % self.streams;
        let start = s * each + s.min(rest);
        start..start + each + u64::from(s < rest)
    }

    /// The distinct key of watcher or put `i`.
    pub(super) fn key_of(&self, i: u64) -> usize {
        self.watched[(i % self.watched.len() as u64) as usize]
    }

    pub(super) fn since_base(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    pub(super) fn at(&self, nanos: u64) -> Instant {
        // `nanos` may come from a server (a stamp in an event's value): never overflow.
        self.base.checked_add(Duration::from_nanos(nanos)).unwrap_or(self.base)
    }
}

/// Groups watched keys (`keys`, possibly repeating) into distinct keys: returns the
/// distinct keys, the distinct key of each watched key, and how many of `watchers` watch
/// each distinct key (watcher `w` watches watched key `w % watched`).
fn group_keys(
    keys: impl Iterator<Item = Vec<u8>>,
    watchers: u64,
) -> (Vec<Bytes>, Vec<usize>, Vec<u64>) {
    let mut ids: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut distinct = Vec::new();
    let watched: Vec<usize> = keys
        .map(|k| {
            *ids.entry(k).or_insert_with_key(|k| {
                distinct.push(Bytes::copy_from_slice(k));
                distinct.len() - 1
            })
        })
        .collect();
    let total = watched.len() as u64;
    let mut of_key = vec![0; distinct.len()];
    for (j, &id) in watched.iter().enumerate() {
        of_key[id] += watchers / total + u64::from((j as u64) < watchers % total);
    }
    (distinct, watched, of_key)
}

#[cfg(test)]
pub(super) fn one_worker_plan(toml: &str) -> Plan {
    let scenario = Scenario::from_toml_str(toml).expect("valid scenario");
    let Some(etcdlat_core::Operation::Watch(op)) = &scenario.op else { unreachable!() };
    Plan::watch(op, &scenario, 1, Layout { conns: 1, workers: 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcdlat_core::Operation;

    #[test]
    fn keys_are_grouped_and_their_watchers_counted() {
        let keys = ["a", "b", "a", "c"].map(|k| k.as_bytes().to_vec());
        let (distinct, watched, of_key) = group_keys(keys.into_iter(), 10);
        assert_eq!(distinct, [&b"a"[..], b"b", b"c"]);
        assert_eq!(watched, [0, 1, 0, 2]);
        // Watchers 0..10 on watched keys w % 4: 3, 3, 2, 2 of them.
        assert_eq!(of_key, [3 + 2, 3, 2]);
        assert_eq!(of_key.iter().sum::<u64>(), 10);
    }

    #[test]
    fn watchers_split_evenly_over_streams() {
        let layout = Layout { conns: 3, workers: 2 };
        let scenario = Scenario::from_toml_str("[op.watch-get]\nwatchers = 10\nstreams = 4\n")
            .expect("valid scenario");
        let Some(Operation::WatchGet(op)) = &scenario.op else { unreachable!() };
        let plan = Plan::get(op, &scenario, (5, 12), layout);
        let ranges: Vec<_> = (0..4).map(|s| plan.stream_watchers(s)).collect();
        assert_eq!(ranges, [0..3, 3..6, 6..8, 8..10]);
        assert_eq!(plan.expected, Some(80));
        // Connection c on worker c % 2 at index c / 2; streams wrap over the connections.
        assert_eq!(layout.place(0), (0, 0));
        assert_eq!(layout.place(1), (1, 0));
        assert_eq!(layout.place(2), (0, 1));
        assert_eq!(layout.place(3), (0, 0));
    }

    #[test]
    fn watch_keys_follow_the_key_space() {
        let plan = one_worker_plan(
            "[op.watch]\nstreams = 2\nwatch-per-stream = 5\nwatched-key-total = 4\n\
             key-space-size = 2\nsequential-keys = true\n",
        );
        // Watched keys 0..4 are key indices 0, 1, 0, 1: two distinct keys, 5 watchers each.
        assert_eq!(plan.keys.len(), 2);
        assert_eq!(plan.watched, [0, 1, 0, 1]);
        assert_eq!(plan.watchers_of_key, [5, 5]);
        assert!(plan.keys.iter().all(|k| k.starts_with(b"watch/") && k.len() == 6 + 32));
    }
}
