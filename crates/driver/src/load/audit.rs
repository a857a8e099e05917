//! The consistency audit's two ends in the driver ([`etcdlat_core::audit`]): recording in
//! the workers, and reading the written keys back after the run.
//!
//! Recording: each worker owns an [`AuditLog`], a buffer allocated once at the start of the
//! run with room for its share of `audit-limit` entries. A request appends its entries when
//! its key is chosen, before it is sent, with its outcome unknown; its answer fills them in
//! ([`Recording::finish`]). A request abandoned at the stop (its task dropped mid-flight)
//! thus stays of unknown outcome. Nothing is locked or allocated per request; once the
//! buffer is full, requests are only counted.
//!
//! Read back: every key written, its current mod revision, and every acknowledged put's key
//! at the put's revision, up to [`READ_BACK_CONCURRENCY`] reads at a time over one
//! connection, each retried while the cluster is unavailable.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use etcdlat_core::OpKind;
use etcdlat_core::audit::{Access, AtRevision, Entry, KeyRef, Outcome, ReadBack, ReadPlan};
use etcdlat_core::workload::keyspace::{KeyGen, KeySpace};

use super::completion::Done;
use crate::transport::{outcome_unknown, status, within};

/// One worker's audit entries.
pub(crate) struct AuditLog {
    entries: RefCell<Vec<Entry>>,
    capacity: usize,
    /// Requests not recorded: the buffer was full.
    beyond: Cell<u64>,
    /// Where entries' times count from: the start of measurement, the same for every
    /// worker.
    epoch: Instant,
}

impl AuditLog {
    /// A log of `capacity` entries, a request making `parts` at most: allocated now with
    /// room for the last request's, touched as filled, never grown.
    pub(crate) fn new(capacity: usize, parts: usize, epoch: Instant) -> Self {
        Self {
            entries: RefCell::new(Vec::with_capacity(capacity + parts)),
            capacity,
            beyond: Cell::new(0),
            epoch,
        }
    }

    /// Forgets the warm-up's requests.
    pub(crate) fn clear(&self) {
        self.entries.borrow_mut().clear();
        self.beyond.set(0);
    }

    /// The entries, and the requests not recorded.
    pub(crate) fn into_parts(self) -> (Vec<Entry>, u64) {
        (self.entries.into_inner(), self.beyond.get())
    }

    fn ns(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Where a request's entries are in its worker's log.
#[derive(Clone, Copy)]
enum Slot {
    /// No key chosen yet.
    Unbegun,
    /// The log was full: not recorded.
    Full,
    /// `count` entries from `first`.
    At { first: usize, count: usize },
}

/// One request's audit while it is in flight.
pub(crate) struct Recording<'a> {
    log: &'a AuditLog,
    sent_ns: u64,
    slot: Cell<Slot>,
}

impl<'a> Recording<'a> {
    /// A request sent at `sent`.
    pub(crate) fn new(log: &'a AuditLog, sent: Instant) -> Self {
        Self { log, sent_ns: log.ns(sent), slot: Cell::new(Slot::Unbegun) }
    }

    /// Records that the request touches `key` of key space `space` (or
    /// [`etcdlat_core::audit::NO_KEY`]) as `access`. A transaction's further keys, recorded
    /// right after its first, follow it in the log.
    pub(crate) fn begin(&self, op: OpKind, access: Access, space: u16, key: u64) {
        let mut entries = self.log.entries.borrow_mut();
        let slot = match self.slot.get() {
            Slot::Full => return,
            // A request begun under the limit may make `parts` entries: room was kept.
            Slot::Unbegun if entries.len() >= self.log.capacity => {
                self.log.beyond.set(self.log.beyond.get() + 1);
                self.slot.set(Slot::Full);
                return;
            }
            Slot::Unbegun => Slot::At { first: entries.len(), count: 1 },
            Slot::At { first, count } => Slot::At { first, count: count + 1 },
        };
        self.slot.set(slot);
        entries.push(Entry { key, space, ..Entry::new(op, access, self.sent_ns) });
    }

    /// Fills in the answer, which arrived at `done`.
    pub(crate) fn finish(&self, result: &Result<Done, tonic::Status>, done: Instant) {
        let Slot::At { first, count } = self.slot.get() else { return };
        let done_ns = self.log.ns(done);
        let mut entries = self.log.entries.borrow_mut();
        for e in &mut entries[first..first + count] {
            e.done_ns = done_ns;
            match result {
                Ok(d) => {
                    e.outcome = Outcome::Ok;
                    e.revision = d.revision;
                    e.mod_revision = d.mod_revision;
                    e.member = d.member;
                    if e.access == Access::Delete && d.keys == 0 {
                        e.access = Access::DeleteNothing;
                    }
                }
                Err(s) if outcome_unknown(s) => e.outcome = Outcome::Unknown,
                Err(_) => e.outcome = Outcome::Failed,
            }
        }
    }
}

/// The key spaces of a run's operations, numbered for the audit (operations whose keys are
/// made alike share a number), and the values the run writes into each.
#[derive(Debug, Default)]
pub(crate) struct Spaces {
    spaces: Vec<KeySpace>,
    values: Vec<Vec<Vec<u8>>>,
}

impl Spaces {
    /// The number of `keys`' space.
    pub(crate) fn number(&mut self, keys: &KeySpace) -> u16 {
        let same = |s: &KeySpace| s.prefix == keys.prefix && s.key_size == keys.key_size;
        let n = self.spaces.iter().position(same).unwrap_or_else(|| {
            self.spaces.push(keys.clone());
            self.values.push(Vec::new());
            self.spaces.len() - 1
        });
        u16::try_from(n).unwrap_or(u16::MAX)
    }

    /// Notes that the run puts `value` into space `space`.
    pub(crate) fn writes(&mut self, space: u16, value: &[u8]) {
        if let Some(values) = self.values.get_mut(usize::from(space)) {
            if !values.iter().any(|v| v == value) {
                values.push(value.to_vec());
            }
        }
    }
}

/// Every worker's audit entries together, and what is needed to read their keys back.
pub(crate) struct History {
    pub entries: Vec<Entry>,
    /// Requests of audited kinds issued: recorded or not.
    pub issued: u64,
    /// The run's operations, for their key spaces and values.
    pub work: std::sync::Arc<super::request::Work>,
}

impl History {
    /// The workers' `(entries, not recorded)` concatenated.
    pub(crate) fn gather(
        parts: impl IntoIterator<Item = (Vec<Entry>, u64)>,
        work: std::sync::Arc<super::request::Work>,
    ) -> Self {
        let (mut entries, mut issued) = (Vec::new(), 0);
        for (mine, beyond) in parts {
            issued += beyond + mine.iter().filter(|e| e.access != Access::PutMore).count() as u64;
            if entries.is_empty() {
                entries = mine;
            } else {
                entries.extend_from_slice(&mine);
            }
        }
        Self { entries, issued, work }
    }

    /// Reads the keys back from `client` (when one could be had) and checks the history;
    /// `member_name` names member ids, `limit` is the run's `audit-limit`.
    pub(crate) async fn check(
        &self,
        client: Result<Client, String>,
        limit: u64,
        member_name: &dyn Fn(u64) -> String,
    ) -> etcdlat_core::audit::AuditReport {
        let plan = ReadPlan::of(&self.entries);
        let back = match client {
            Ok(client) => read_back(&client, &self.entries, &plan, self.work.spaces()).await,
            Err(e) => Err(e),
        };
        let server = back.as_ref().ok().map(|b| (&plan, b));
        let mut report = etcdlat_core::audit::check(&self.entries, server, member_name);
        report.issued = self.issued;
        report.limit = limit;
        report.read_back_error = back.err();
        report
    }
}

/// Reads at a time during the read back.
pub(crate) const READ_BACK_CONCURRENCY: usize = 64;

/// How long one read of the read back may take, and how long the read back keeps retrying
/// a read the cluster is unavailable for (a member restarting, an election).
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const RETRY_FOR: Duration = Duration::from_secs(30);

/// One read of the read back.
enum Read {
    /// A key's current mod revision: `plan.keys[i]`.
    Current(usize),
    /// A put's key at its revision: `plan.puts[i]`.
    At(usize, i64),
}

/// Reads back what `plan` asks for, from `client`.
///
/// # Errors
/// In words, when a read fails for longer than [`RETRY_FOR`] (or with an error retrying
/// cannot cure).
pub(crate) async fn read_back(
    client: &Client,
    history: &[Entry],
    plan: &ReadPlan,
    spaces: &Spaces,
) -> Result<ReadBack, String> {
    let mut keygens: Vec<KeyGen> = spaces.spaces.iter().map(|s| KeyGen::new(s, 0)).collect();
    let mut key = |k: KeyRef| keygens[usize::from(k.space)].key_at(k.key).to_vec();
    let mut reads = Vec::with_capacity(plan.keys.len() + plan.puts.len());
    for (i, &k) in plan.keys.iter().enumerate() {
        reads.push((Read::Current(i), key(k)));
    }
    for (i, &p) in plan.puts.iter().enumerate() {
        let e = &history[p];
        if let Some(k) = e.key_ref() {
            reads.push((Read::At(i, e.revision), key(k)));
        }
    }
    let mut back = ReadBack {
        current: vec![0; plan.keys.len()],
        at_revision: vec![AtRevision::Compacted; plan.puts.len()],
    };
    let mut running = tokio::task::JoinSet::new();
    let mut reads = reads.into_iter();
    loop {
        while running.len() < READ_BACK_CONCURRENCY {
            let Some((read, key)) = reads.next() else { break };
            let client = client.clone();
            running.spawn(async move {
                let answer = get(client, key, &read).await;
                (read, answer)
            });
        }
        let Some(joined) = running.join_next().await else { break };
        let (read, answer) = joined.map_err(|e| e.to_string())?;
        match (read, answer?) {
            (Read::Current(i), Got::Found(mod_revision, _)) => back.current[i] = mod_revision,
            (Read::Current(_), Got::Absent | Got::Compacted) => {}
            (Read::At(i, _), got) => {
                let space = history[plan.puts[i]].space;
                back.at_revision[i] = match got {
                    Got::Found(mod_revision, value) => AtRevision::Found {
                        mod_revision,
                        value_matches: spaces.values[usize::from(space)].contains(&value),
                    },
                    Got::Absent => AtRevision::Absent,
                    Got::Compacted => AtRevision::Compacted,
                };
            }
        }
    }
    Ok(back)
}

/// What one read found.
enum Got {
    /// The key, with its mod revision and value.
    Found(i64, Vec<u8>),
    /// No such key.
    Absent,
    /// The revision asked for was compacted.
    Compacted,
}

/// One read, retried while the cluster is unavailable.
async fn get(client: Client, key: Vec<u8>, read: &Read) -> Result<Got, String> {
    let options = match read {
        Read::Current(_) => GetOptions::new().with_keys_only(),
        Read::At(_, revision) => GetOptions::new().with_revision(*revision),
    };
    let deadline = Instant::now() + RETRY_FOR;
    let mut kv = client.kv_client();
    loop {
        let answer =
            within(READ_TIMEOUT, "a read back", kv.get(key.clone(), Some(options.clone())));
        match answer.await.map_err(status) {
            Ok(resp) => {
                return Ok(resp
                    .kvs()
                    .first()
                    .map_or(Got::Absent, |kv| Got::Found(kv.mod_revision(), kv.value().to_vec())));
            }
            Err(s) if s.code() == tonic::Code::OutOfRange && s.message().contains("compacted") => {
                return Ok(Got::Compacted);
            }
            Err(s) if outcome_unknown(&s) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(s) => return Err(format!("reading a key back: {}", s.message())),
        }
    }
}
