//! The audit's recording end ([`etcdlat_core::audit`]): what each worker writes down for
//! it while the load runs.
//!
//! Each worker owns an [`AuditLog`], a buffer allocated once at the start of the run with
//! room for its share of `audit-limit` entries. A request appends its entries when its key
//! is chosen, before it is sent, with its outcome unknown; its answer fills them in
//! ([`Recording::finish`]). A request abandoned at the stop (its task dropped mid-flight)
//! thus stays of unknown outcome. Nothing is locked or allocated per request; once the
//! buffer is full, requests are only counted.
//!
//! An entry names its key by number in its key space, and its key space by number:
//! [`Spaces`] numbers them while the run's operations are prepared, and after the run
//! turns the numbers back into keys and tells the values written.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use etcdlat_core::OpKind;
use etcdlat_core::audit::{Access, Entry, Outcome};
use etcdlat_core::workload::keyspace::{KeyGen, KeySpace};

use super::completion::Done;
use crate::transport::outcome_unknown;

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
        if let Some(values) = self.values.get_mut(usize::from(space))
            && !values.iter().any(|v| v == value)
        {
            values.push(value.to_vec());
        }
    }

    /// A key generator for each space, in the order of their numbers.
    pub(crate) fn keygens(&self) -> Vec<KeyGen> {
        self.spaces.iter().map(|s| KeyGen::new(s, 0)).collect()
    }

    /// Whether the run puts `value` into space `space`.
    pub(crate) fn wrote(&self, space: u16, value: &[u8]) -> bool {
        self.values[usize::from(space)].iter().any(|v| v == value)
    }
}
