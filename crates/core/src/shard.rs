//! Splitting a scenario into shards: the `I`-th of `N` parts, run by `N` processes (on as
//! many machines, or Kubernetes pods) at the same time against one cluster, so that
//! together they do exactly what the scenario describes, and whose reports
//! [`crate::merge()`] combines exactly.
//!
//! ```
//! use etcdlat_core::{Operation, Scenario, Shard};
//!
//! let whole = Scenario::from_toml_str(r#"
//!     [load]
//!     conns = 10
//!     clients = 100
//!     total = 10000
//!     [op.put]
//!     key-space-size = 1000
//!     sequential-keys = true
//! "#)?;
//! let shard: Shard = "1/3".parse()?;                  // the second of three, counted from 0
//! let part = shard.part(&whole)?;
//! assert_eq!(part.load.conns, Some(3));                // 4 + 3 + 3
//! assert_eq!(part.load.clients, 33);                   // 34 + 33 + 33
//! assert_eq!(part.load.total, Some(3333));             // 3334 + 3333 + 3333
//! let Some(Operation::Put(put)) = &part.op else { unreachable!() };
//! assert_eq!((put.key_starts, put.key_space_size), (334, 333)); // keys 334..667
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How a scenario is cut
//!
//! Every count is split as evenly as integers allow, the first `whole % N` shards taking one
//! more ([`Shard::share`]), so the parts add up to the whole exactly. A count that cannot
//! give every shard at least one (3 clients over 4 shards) is an error rather than a shard
//! that does nothing or, for a rate, one that runs unlimited.
//!
//! - `load`: `clients`, `conns`, `total`, `rate` and every stage's rate are split; the
//!   duration, warm-up, schedule and arrivals are every shard's (the shards run side by
//!   side). Open-loop Poisson arrivals stay Poisson: the sum of independent Poisson streams
//!   is one of the summed rate. Each client step's clients and total are split too (a step
//!   of one client cannot be sharded); its duration is every shard's. Each shard moves to
//!   its next counted step when its own part is answered, not waiting for the others.
//! - `setup`: `total` is split and its keys are split like put's; its clients are split
//!   too (at least one each: setup is not measured).
//! - keys, per operation:
//!   - `put` (and `setup.put`), `txn-put`, the writes of `txn-mixed`, and `range` or
//!     `delete` with a `key-space-size`: shard `I` gets the `I`-th contiguous range of the
//!     key indices (`key-starts` moves, `key-space-size` is split), so the shards' keys are
//!     disjoint and together are the scenario's. With sequential keys and a total and key
//!     space that both divide by `N`, every key is written exactly as often as by one
//!     process. Two cases keep the whole key space on every shard, because cutting it would
//!     change what the scenario measures: a key space smaller than `N` (etcd's default of
//!     one key, which every request writes) and Zipf keys (the popularity skew over the whole
//!     space is the point).
//!   - `range` and `delete` of a fixed key or range, and the reads of `txn-mixed`: every
//!     shard reads (deletes) the same keys, as the scenario does.
//!   - `stm`: the keys are shared: conflicts between clients over the same keys are what
//!     STM measures. The counters still add up to the writes committed.
//!   - lease operations have no keys.
//!   - `watch`: `streams`, `watched-key-total`, `key-space-size`, `put-total` and
//!     `put-rate` are split, and shard `I` puts `I/` after the prefix (`watch/0/...`), so
//!     its watchers see only its own puts: an event is timed from its put's send, which
//!     only the process that sent it knows. Each put reaches as many watchers as in the
//!     whole, and the events add up to the whole's when the counts divide by `N`.
//!   - `watch-latency` and `watch-get` cannot be sharded: all their watchers watch one key,
//!     whose puts one process must make and time.
//! - seeds: an operation's `seed` becomes `seed ^ (I * 0x9E37_79B9_7F4A_7C15)`, so shards
//!   draw different random streams (shard 0 keeps the scenario's).
//! - `compaction` and scripted `faults` run on shard 0 only (one compactor and one fault
//!   script for the cluster, as in the whole); the HashKV check runs on every shard.
//! - everything else (name, target, cluster, thresholds, report options) is the whole's;
//!   the name must be, for [`crate::merge()`] to line the shards' runs up.

use std::ops::Range;

use crate::scenario::{Load, Scenario, ScenarioError, Setup};
use crate::workload::{Operation, PutOp};

/// One of `N` parts of a scenario: `index` in `0..count`. Written `I/N` (`0/3`, `1/3`,
/// `2/3`), counted from 0 like a Kubernetes Indexed Job's completion index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// Why a shard cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// The text is not `I/N`.
    #[error("shard {text:?}: expected I/N with 0 <= I < N, like 0/3")]
    Parse {
        /// The text as given.
        text: String,
    },
    /// The index is not below the count, or the count is 0.
    #[error("shard {index}/{count}: the index counts from 0 and must be below {count}")]
    Index {
        /// The index given.
        index: u32,
        /// The count given.
        count: u32,
    },
    /// A count of the scenario is smaller than the number of shards, so some shard would
    /// get none of it.
    #[error(
        "{field} = {whole} cannot be split into {shards} shards: each needs at least 1; raise it to {shards} or more, or run fewer shards"
    )]
    TooSmall {
        /// Dotted path of the field, as in TOML (`load.clients`).
        field: String,
        /// Its value in the whole scenario.
        whole: u64,
        /// The number of shards.
        shards: u32,
    },
    /// The workload cannot be split.
    #[error("{op} cannot be sharded: {reason}")]
    Unsupported {
        /// The operation's name.
        op: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The scenario still has a matrix; shard each of its runs ([`Scenario::expand`]).
    #[error("the scenario has a matrix: shard each of its runs (Scenario::expand)")]
    Matrix,
    /// The part is not a valid scenario (for example a txn-put whose `txn-ops` exceeds its
    /// share of the key space).
    #[error("shard {shard}: {source}")]
    Invalid {
        /// The shard, `I/N`.
        shard: String,
        /// What is wrong with the part.
        #[source]
        source: ScenarioError,
    },
}

impl Shard {
    /// The shard `index` of `count`.
    ///
    /// # Errors
    /// [`ShardError::Index`] unless `index < count`.
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if index >= count {
            return Err(ShardError::Index { index, count });
        }
        Ok(Self { index, count })
    }

    /// This shard's index, from 0.
    #[must_use]
    pub fn index(self) -> u32 {
        self.index
    }

    /// The number of shards.
    #[must_use]
    pub fn count(self) -> u32 {
        self.count
    }

    /// This shard's contiguous part of `0..whole`: the parts of all shards are disjoint, in
    /// shard order, and cover it; the first `whole % count` are one longer.
    #[must_use]
    pub fn range(self, whole: u64) -> Range<u64> {
        let (n, i) = (u64::from(self.count), u64::from(self.index));
        let (each, rest) = (whole / n, whole % n);
        let start = i * each + i.min(rest);
        start..start + each + u64::from(i < rest)
    }

    /// This shard's share of `whole`: the length of [`Shard::range`]. The shares of all
    /// shards add up to `whole`.
    #[must_use]
    pub fn share(self, whole: u64) -> u64 {
        let r = self.range(whole);
        r.end - r.start
    }

    /// The share of a count every shard needs at least one of.
    fn required(self, field: &str, whole: u64) -> Result<u64, ShardError> {
        if whole < u64::from(self.count) {
            return Err(ShardError::TooSmall {
                field: field.to_owned(),
                whole,
                shards: self.count,
            });
        }
        Ok(self.share(whole))
    }

    /// The share of a rate, where 0 means unlimited: a non-zero rate must give every shard
    /// at least 1 request per second, or that shard would run unlimited.
    fn rate(self, field: &str, whole: u64) -> Result<u64, ShardError> {
        if whole == 0 { Ok(0) } else { self.required(field, whole) }
    }

    fn required_u32(self, field: &str, whole: u32) -> Result<u32, ShardError> {
        // A share is never more than the whole, so it fits.
        self.required(field, u64::from(whole)).map(|s| u32::try_from(s).unwrap_or(whole))
    }

    /// This shard's part of a key space of `space` indices from `start`: its contiguous
    /// range, or the whole space when that is smaller than the number of shards or `split`
    /// is false. Returns the part's (start, size).
    fn keys(self, start: u64, space: u64, split: bool) -> (u64, u64) {
        if !split || space < u64::from(self.count) {
            return (start, space);
        }
        let r = self.range(space);
        (start + r.start, r.end - r.start)
    }

    fn seed(self, seed: Option<u64>) -> Option<u64> {
        seed.map(|s| s ^ u64::from(self.index).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// This shard's part of `scenario`, as the module docs describe, validated.
    ///
    /// # Errors
    /// [`ShardError::TooSmall`] when a count cannot give every shard one,
    /// [`ShardError::Unsupported`] for `watch-latency` and `watch-get`,
    /// [`ShardError::Matrix`] for a scenario with a matrix, and [`ShardError::Invalid`] when
    /// the part is not a valid scenario.
    pub fn part(self, scenario: &Scenario) -> Result<Scenario, ShardError> {
        if !scenario.matrix.is_empty() {
            return Err(ShardError::Matrix);
        }
        let mut part = scenario.clone();
        // The workload first: one that cannot be sharded at all says so before any count.
        if let Some(op) = &mut part.op {
            *op = self.operation(op)?;
        }
        for w in &mut part.mix {
            w.op = self.operation(&w.op)?;
        }
        part.load = self.load(&scenario.load)?;
        if let Some(setup) = &scenario.setup {
            part.setup = Some(self.setup(setup)?);
        }
        if self.index != 0 {
            // One compactor and one fault script for the cluster, as in the whole.
            part.compaction = None;
            part.faults.clear();
        }
        part.validate()
            .map_err(|source| ShardError::Invalid { shard: self.to_string(), source })?;
        Ok(part)
    }

    fn load(self, load: &Load) -> Result<Load, ShardError> {
        let mut out = load.clone();
        out.clients = self.required_u32("load.clients", load.clients)?;
        out.conns = load.conns.map(|c| self.required_u32("load.conns", c)).transpose()?;
        out.total = load.total.map(|t| self.required("load.total", t)).transpose()?;
        out.rate = self.rate("load.rate", load.rate)?;
        for (i, stage) in out.stages.iter_mut().enumerate() {
            stage.rate = self.rate(&format!("load.stages.{i}.rate"), stage.rate)?;
        }
        for (i, step) in out.client_steps.iter_mut().enumerate() {
            let at = format!("load.client-steps.{i}");
            step.clients = self.required_u32(&format!("{at}.clients"), step.clients)?;
            step.total =
                step.total.map(|t| self.required(&format!("{at}.total"), t)).transpose()?;
        }
        Ok(out)
    }

    fn setup(self, setup: &Setup) -> Result<Setup, ShardError> {
        Ok(Setup {
            total: self.required("setup.total", setup.total)?,
            clients: u32::try_from(self.share(u64::from(setup.clients)))
                .unwrap_or(setup.clients)
                .max(1),
            put: self.put(&setup.put),
        })
    }

    fn put(self, p: &PutOp) -> PutOp {
        let (key_starts, key_space_size) =
            self.keys(p.key_starts, p.key_space_size, p.zipf.is_none());
        PutOp { key_starts, key_space_size, seed: self.seed(p.seed), ..p.clone() }
    }

    /// The operation's keys and counts for this shard.
    fn operation(self, op: &Operation) -> Result<Operation, ShardError> {
        Ok(match op {
            Operation::Put(p) => Operation::Put(self.put(p)),
            Operation::Range(r) => {
                let mut r = r.clone();
                if let Some(space) = r.key_space_size {
                    let (start, size) = self.keys(r.key_starts, space, r.zipf.is_none());
                    (r.key_starts, r.key_space_size) = (start, Some(size));
                }
                Operation::Range(r)
            }
            Operation::Delete(d) => {
                let mut d = d.clone();
                if let Some(space) = d.key_space_size {
                    let (start, size) = self.keys(d.key_starts, space, d.zipf.is_none());
                    (d.key_starts, d.key_space_size) = (start, Some(size));
                }
                Operation::Delete(d)
            }
            Operation::TxnPut(t) => {
                let mut t = t.clone();
                (t.key_starts, t.key_space_size) = self.keys(t.key_starts, t.key_space_size, true);
                t.seed = self.seed(t.seed);
                Operation::TxnPut(t)
            }
            Operation::TxnMixed(t) => {
                let mut t = t.clone();
                (t.key_starts, t.key_space_size) = self.keys(t.key_starts, t.key_space_size, true);
                t.seed = self.seed(t.seed);
                Operation::TxnMixed(t)
            }
            Operation::Stm(s) => {
                let mut s = s.clone();
                s.seed = self.seed(s.seed);
                Operation::Stm(s)
            }
            Operation::LeaseGrant(_) | Operation::LeaseRevoke(_) | Operation::LeaseKeepalive(_) => {
                op.clone()
            }
            Operation::Watch(w) => {
                let mut w = w.clone();
                w.streams = self.required("op.watch.streams", w.streams)?;
                w.watched_key_total =
                    self.required("op.watch.watched-key-total", w.watched_key_total)?;
                w.key_space_size = self.required("op.watch.key-space-size", w.key_space_size)?;
                w.put_total = self.required("op.watch.put-total", w.put_total)?;
                w.put_rate = self.rate("op.watch.put-rate", w.put_rate)?;
                w.prefix = format!("{}{}/", w.prefix, self.index);
                Operation::Watch(w)
            }
            Operation::WatchLatency(_) => {
                return Err(ShardError::Unsupported {
                    op: "watch-latency",
                    reason: "every watcher watches one key, whose puts one process must make and time; run it unsharded, or shard a watch scenario",
                });
            }
            Operation::WatchGet(_) => {
                return Err(ShardError::Unsupported {
                    op: "watch-get",
                    reason: "every watcher catches up on one key's revisions, written by one process; run it unsharded",
                });
            }
            // The apiserver's operations (`k8s-*`), the only ones left.
            _ => {
                debug_assert!(op.is_kubernetes());
                return Err(ShardError::Unsupported {
                    op: op.name(),
                    reason: "its objects' writers and names are given out by client number within one process; run it unsharded",
                });
            }
        })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Self, ShardError> {
        let parse = || ShardError::Parse { text: text.to_owned() };
        let (index, count) = text.trim().split_once('/').ok_or_else(parse)?;
        let index = index.trim().parse::<u32>().map_err(|_| parse())?;
        let count = count.trim().parse::<u32>().map_err(|_| parse())?;
        Self::new(index, count)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::workload::keyspace::KeyGen;
    use crate::workload::{KeyTarget, RangeOp, TxnPutOp, WatchOp};

    fn shards(n: u32) -> impl Iterator<Item = Shard> {
        (0..n).map(move |i| Shard::new(i, n).unwrap())
    }

    fn parts(text: &str, n: u32) -> Vec<Scenario> {
        let whole = Scenario::from_toml_str(text).unwrap();
        shards(n).map(|s| s.part(&whole).unwrap()).collect()
    }

    const PUT: &str = r#"
name = "p"
[load]
conns = 10
clients = 100
total = 10001
rate = 5000
[op.put]
key-space-size = 1000
sequential-keys = true
seed = 7
[setup]
total = 999
clients = 2
[setup.put]
key-space-size = 999
sequential-keys = true
[compaction]
interval = "1s"
"#;

    #[test]
    fn parses_and_counts_from_zero() {
        let s: Shard = "2/3".parse().unwrap();
        assert_eq!((s.index(), s.count()), (2, 3));
        assert_eq!(s.to_string(), "2/3");
        assert_eq!(" 0 / 1 ".parse::<Shard>().unwrap(), Shard::new(0, 1).unwrap());
        for bad in ["3/3", "0/0", "1", "a/3", "-1/3", "1/3/4", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!("3/3".parse::<Shard>().unwrap_err(), ShardError::Index { index: 3, count: 3 });
    }

    #[test]
    fn ranges_are_disjoint_contiguous_and_cover_the_whole() {
        for n in 1..=7 {
            for whole in [0, 1, 6, 7, 100, 1001] {
                let mut next = 0;
                for s in shards(n) {
                    let r = s.range(whole);
                    assert_eq!(r.start, next, "{s} of {whole}");
                    assert!(s.share(whole) >= whole / u64::from(n));
                    assert!(s.share(whole) <= whole.div_ceil(u64::from(n)));
                    next = r.end;
                }
                assert_eq!(next, whole);
            }
        }
    }

    #[test]
    fn parts_sum_to_the_whole() {
        let parts = parts(PUT, 3);
        let sum = |f: fn(&Scenario) -> u64| parts.iter().map(f).sum::<u64>();
        assert_eq!(sum(|p| u64::from(p.load.clients)), 100);
        assert_eq!(sum(|p| u64::from(p.load.conns.unwrap())), 10);
        assert_eq!(sum(|p| p.load.total.unwrap()), 10001);
        assert_eq!(sum(|p| p.load.rate), 5000);
        assert_eq!(sum(|p| p.setup.as_ref().unwrap().total), 999);
        assert_eq!(
            parts.iter().map(|p| (p.load.clients, p.load.total.unwrap())).collect::<Vec<_>>(),
            [(34, 3334), (33, 3334), (33, 3333)]
        );
        // The whole's name (so merge lines the runs up), duration and the like are kept.
        assert!(parts.iter().all(|p| p.name == "p" && p.load.duration.is_none()));
        // One compactor for the cluster.
        assert!(parts[0].compaction.is_some());
        assert!(parts[1..].iter().all(|p| p.compaction.is_none()));
    }

    #[test]
    fn stage_rates_are_split() {
        let text = "[load]\nclients = 3\nschedule = \"open\"\n[[load.stages]]\nrate = 100\nduration = \"1s\"\n[[load.stages]]\nrate = 0\nduration = \"1s\"\n[[load.stages]]\nrate = 7\nduration = \"1s\"\nramp = true\n[op.put]\n";
        let parts = parts(text, 3);
        for stage in 0..3 {
            let rates: Vec<u64> = parts.iter().map(|p| p.load.stages[stage].rate).collect();
            assert_eq!(rates.iter().sum::<u64>(), [100, 0, 7][stage], "{rates:?}");
        }
        assert!(parts.iter().all(|p| p.load.stages[2].ramp));
    }

    /// Every key a sequential put of `part` writes.
    fn written(part: &Scenario) -> Vec<Vec<u8>> {
        let Some(Operation::Put(p)) = &part.op else { panic!("a put") };
        let mut keys = KeyGen::new(&p.key_space(), 0);
        (0..part.load.total.unwrap()).map(|i| keys.key(i).to_vec()).collect()
    }

    #[test]
    fn sequential_keys_are_disjoint_and_cover_the_key_space() {
        let text = "[load]\nclients = 3\ntotal = 3000\n[op.put]\nkey-space-size = 1500\nsequential-keys = true\nprefix = \"k/\"\n";
        let whole = Scenario::from_toml_str(text).unwrap();
        let mut all = HashSet::new();
        let mut writes = 0;
        for part in parts(text, 3) {
            let keys: HashSet<Vec<u8>> = written(&part).into_iter().collect();
            writes += part.load.total.unwrap();
            assert_eq!(keys.len(), 500);
            assert!(all.is_disjoint(&keys), "shards share keys");
            all.extend(keys);
        }
        let whole_keys: HashSet<Vec<u8>> = written(&whole).into_iter().collect();
        assert_eq!(all, whole_keys, "together the shards write the scenario's keys");
        assert_eq!(writes, 3000);
    }

    #[test]
    fn small_and_zipf_key_spaces_are_shared() {
        // etcd's default: one key, which every put writes, in the whole and in every shard.
        let parts = parts("[load]\nclients = 3\ntotal = 30\n[op.put]\n", 3);
        assert!(parts.iter().all(|p| written(p).iter().all(|k| *k == written(&parts[0])[0])));
        let zipf = "[load]\nclients = 3\ntotal = 30\n[op.put]\nkey-space-size = 100\nzipf = 1.1\n";
        for p in self::parts(zipf, 3) {
            let Some(Operation::Put(put)) = &p.op else { panic!() };
            assert_eq!((put.key_starts, put.key_space_size), (0, 100));
        }
    }

    #[test]
    fn reads_and_deletes_of_a_key_space_are_split_fixed_ranges_shared() {
        let text = "[load]\nclients = 3\ntotal = 30\n[op.range]\nkey = \"r/\"\nkey-space-size = 10\nkey-starts = 5\n";
        let starts: Vec<(u64, Option<u64>)> = parts(text, 3)
            .iter()
            .map(|p| match &p.op {
                Some(Operation::Range(r)) => (r.key_starts, r.key_space_size),
                _ => panic!(),
            })
            .collect();
        assert_eq!(starts, [(5, Some(4)), (9, Some(3)), (12, Some(3))]);
        let fixed = "[load]\nclients = 3\ntotal = 30\n[op.range]\nkey = \"r/\"\nprefix = true\n";
        for p in parts(fixed, 3) {
            let Some(Operation::Range(r)) = &p.op else { panic!() };
            assert_eq!(
                r.target(),
                RangeOp { key: "r/".into(), prefix: true, ..RangeOp::default() }.target()
            );
            assert!(matches!(r.target(), KeyTarget::Fixed { .. }));
        }
    }

    #[test]
    fn txn_put_keys_are_split_and_checked() {
        let text =
            "[load]\nclients = 3\ntotal = 30\n[op.txn-put]\ntxn-ops = 2\nkey-space-size = 9\n";
        let mut seen = HashSet::new();
        for p in parts(text, 3) {
            let Some(Operation::TxnPut(t)) = &p.op else { panic!() };
            let mut keys = KeyGen::new(&t.key_space(), 0);
            let mine: HashSet<Vec<u8>> = (0..20).map(|i| keys.key(i).to_vec()).collect();
            assert_eq!(mine.len(), 3);
            assert!(seen.is_disjoint(&mine));
            seen.extend(mine);
        }
        assert_eq!(seen.len(), 9);
        // Four keys cannot hold 3 transactions of 2 distinct keys in every shard.
        let whole = Scenario::new(Operation::TxnPut(TxnPutOp {
            txn_ops: 2,
            key_space_size: 4,
            ..TxnPutOp::default()
        }));
        let mut whole = whole;
        whole.load.clients = 3;
        assert!(matches!(
            Shard::new(2, 3).unwrap().part(&whole),
            Err(ShardError::Invalid { ref shard, .. }) if shard == "2/3"
        ));
    }

    #[test]
    fn watch_gets_its_own_keys() {
        let text = "[load]\nclients = 3\nconns = 3\n[op.watch]\nstreams = 10\nwatch-per-stream = 10\nwatched-key-total = 100\nkey-space-size = 100\nsequential-keys = true\nput-total = 1000\n";
        let parts = parts(text, 3);
        let watches: Vec<WatchOp> = parts
            .iter()
            .map(|p| match &p.op {
                Some(Operation::Watch(w)) => w.clone(),
                _ => panic!(),
            })
            .collect();
        assert_eq!(watches.iter().map(|w| w.streams).sum::<u64>(), 10);
        assert_eq!(watches.iter().map(|w| w.put_total).sum::<u64>(), 1000);
        assert_eq!(watches.iter().map(|w| w.watched_key_total).sum::<u64>(), 100);
        assert!(watches.iter().all(|w| w.watch_per_stream == 10));
        let prefixes: HashSet<&str> = watches.iter().map(|w| w.prefix.as_str()).collect();
        assert_eq!(prefixes, HashSet::from(["watch/0/", "watch/1/", "watch/2/"]));

        let latency = Scenario::from_toml_str("[op.watch-latency]\n").unwrap();
        assert!(matches!(
            Shard::new(0, 2).unwrap().part(&latency),
            Err(ShardError::Unsupported { op: "watch-latency", .. })
        ));
    }

    #[test]
    fn client_steps_split_their_clients_and_totals() {
        let whole = Scenario::from_toml_str(
            "[load]\nclients = 10\nclient-steps = [{ clients = 4, total = 100 }, { clients = 10, duration = \"1s\" }]\n[op.put]\n",
        )
        .unwrap();
        let parts: Vec<Scenario> =
            (0..3).map(|i| Shard::new(i, 3).unwrap().part(&whole).unwrap()).collect();
        let steps = |k: usize| -> Vec<(u32, Option<u64>)> {
            parts
                .iter()
                .map(|p| (p.load.client_steps[k].clients, p.load.client_steps[k].total))
                .collect()
        };
        assert_eq!(steps(0), [(2, Some(34)), (1, Some(33)), (1, Some(33))]);
        assert_eq!(steps(1), [(4, None), (3, None), (3, None)]);
        assert!(
            parts
                .iter()
                .all(|p| p.load.client_steps[1].duration == whole.load.client_steps[1].duration)
        );
        let err = Shard::new(0, 5).unwrap().part(&whole).unwrap_err();
        assert_eq!(
            err,
            ShardError::TooSmall {
                field: "load.client-steps.0.clients".into(),
                whole: 4,
                shards: 5
            }
        );
    }

    #[test]
    fn a_count_below_the_shards_is_named() {
        let whole = Scenario::from_toml_str("[load]\nclients = 2\ntotal = 10\n[op.put]\n").unwrap();
        let err = Shard::new(0, 3).unwrap().part(&whole).unwrap_err();
        assert_eq!(err, ShardError::TooSmall { field: "load.clients".into(), whole: 2, shards: 3 });
        assert!(err.to_string().starts_with("load.clients = 2 cannot be split into 3 shards"));
        // A rate of 0 is unlimited, so a rate must give every shard at least 1 per second.
        let rate = Scenario::from_toml_str("[load]\nclients = 3\ntotal = 10\nrate = 2\n[op.put]\n")
            .unwrap();
        assert!(matches!(
            Shard::new(0, 3).unwrap().part(&rate),
            Err(ShardError::TooSmall { ref field, .. }) if field == "load.rate"
        ));
        let matrix = Scenario::from_toml_str(
            "[load]\ntotal = 10\n[op.put]\n[matrix]\n\"load.clients\" = [3, 6]\n",
        )
        .unwrap();
        assert_eq!(Shard::new(0, 3).unwrap().part(&matrix).unwrap_err(), ShardError::Matrix);
        for run in matrix.expand().unwrap() {
            assert!(Shard::new(0, 3).unwrap().part(&run).is_ok());
        }
    }

    #[test]
    fn seeds_differ_between_shards() {
        let parts = parts(PUT, 3);
        let seeds: HashSet<Option<u64>> = parts
            .iter()
            .map(|p| match &p.op {
                Some(Operation::Put(put)) => put.seed,
                _ => None,
            })
            .collect();
        assert_eq!(seeds.len(), 3);
        assert!(seeds.contains(&Some(7)), "shard 0 keeps the scenario's seed");
    }

    #[test]
    fn one_shard_is_the_whole() {
        let whole = Scenario::from_toml_str(PUT).unwrap();
        assert_eq!(Shard::new(0, 1).unwrap().part(&whole).unwrap(), whole);
    }
}
