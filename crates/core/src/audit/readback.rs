//! Lost writes: what to read back from the store after the run ([`ReadPlan`]), and the
//! verdict on every acknowledged put once the driver has the store's answers
//! ([`ReadBack`]).

use super::{Access, Entry, Outcome};

/// A key of the run: its index in a numbered key space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyRef {
    /// The key space, numbered by the driver.
    pub space: u16,
    /// The key's index in it.
    pub key: u64,
}

/// What to read back after the run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadPlan {
    /// Every key written (or perhaps written), once, sorted: read their current mod
    /// revision.
    pub keys: Vec<KeyRef>,
    /// Every acknowledged put, as an index into the history: read its key at its revision.
    pub puts: Vec<usize>,
}

/// What reading one put's key at the put's revision found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtRevision {
    /// The key, with its mod revision there and whether its value is one the run wrote.
    Found {
        /// The key's mod revision at the put's revision.
        mod_revision: i64,
        /// The value is the value written.
        value_matches: bool,
    },
    /// No such key at that revision.
    Absent,
    /// The revision was compacted: only the key's current state says anything.
    Compacted,
}

/// The store's answers to a [`ReadPlan`], in its order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadBack {
    /// The current mod revision of each of `plan.keys` (0: absent).
    pub current: Vec<i64>,
    /// What reading each of `plan.puts` at its revision found.
    pub at_revision: Vec<AtRevision>,
}

impl ReadPlan {
    /// The reads that check `history` for lost writes.
    #[must_use]
    pub fn of(history: &[Entry]) -> Self {
        let mut keys: Vec<KeyRef> = history
            .iter()
            .filter(|e| e.outcome != Outcome::Failed)
            .filter(|e| matches!(e.access, Access::Put | Access::PutMore | Access::Delete))
            .filter_map(Entry::key_ref)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let puts = history
            .iter()
            .enumerate()
            .filter(|(_, e)| e.acked() && matches!(e.access, Access::Put | Access::PutMore))
            .filter(|(_, e)| e.key_ref().is_some())
            .map(|(i, _)| i)
            .collect();
        Self { keys, puts }
    }
}

/// One lost put: its index in the history and the revision its key held instead (0: none).
pub(super) struct Lost {
    pub index: usize,
    pub found: i64,
    pub why: &'static str,
}

/// Counts of the lost-write check.
#[derive(Default)]
pub(super) struct LostWrites {
    pub lost: Vec<Lost>,
    pub read_at_revision: u64,
    pub compacted: u64,
}

/// Every acknowledged put of `plan` that the store does not hold.
///
/// A put is lost when, read at its own revision, its key is absent, has another mod
/// revision or another value; or when its key's current mod revision is older than the put
/// (an absent key is lost too, unless a delete of that key acknowledged after the put, a
/// delete of unknown outcome, or a delete of a range could have removed it).
pub(super) fn lost_writes(history: &[Entry], plan: &ReadPlan, back: &ReadBack) -> LostWrites {
    // Deletes that may explain an absent key: per key, the highest revision of an
    // acknowledged delete (i64::MAX for one of unknown outcome); a range delete, any key.
    let mut deletes: Vec<(KeyRef, i64)> = Vec::new();
    let mut range_deleted = false;
    for e in history.iter().filter(|e| e.access == Access::Delete) {
        let rev = match e.outcome {
            Outcome::Failed => continue,
            Outcome::Unknown => i64::MAX,
            Outcome::Ok => e.revision,
        };
        match e.key_ref() {
            Some(k) => deletes.push((k, rev)),
            None => range_deleted = true,
        }
    }
    deletes.sort_unstable();
    let deleted_after = |k: KeyRef, rev: i64| {
        // The last of this key's deletes has the highest revision.
        let end = deletes.partition_point(|(d, _)| *d <= k);
        range_deleted || (end > 0 && deletes[end - 1].0 == k && deletes[end - 1].1 > rev)
    };
    let mut out = LostWrites::default();
    for (n, &index) in plan.puts.iter().enumerate() {
        let e = &history[index];
        let Some(key) = e.key_ref() else { continue };
        let current = plan
            .keys
            .binary_search(&key)
            .ok()
            .and_then(|i| back.current.get(i).copied())
            .unwrap_or(0);
        let verdict = match back.at_revision.get(n) {
            Some(AtRevision::Found { mod_revision, value_matches }) => {
                out.read_at_revision += 1;
                if *mod_revision != e.revision {
                    Some((*mod_revision, "read at its revision, the key had another mod revision"))
                } else if !value_matches {
                    Some((*mod_revision, "read at its revision, the key had another value"))
                } else {
                    None
                }
            }
            Some(AtRevision::Absent) => {
                out.read_at_revision += 1;
                Some((0, "read at its revision, the key was absent"))
            }
            Some(AtRevision::Compacted) | None => {
                out.compacted += u64::from(back.at_revision.get(n).is_some());
                None
            }
        };
        let verdict = verdict.or_else(|| {
            if current >= e.revision || (current == 0 && deleted_after(key, e.revision)) {
                None
            } else if current == 0 {
                Some((0, "the key is absent now and no delete of it followed"))
            } else {
                Some((current, "the key's current mod revision is older"))
            }
        });
        if let Some((found, why)) = verdict {
            out.lost.push(Lost { index, found, why });
        }
    }
    out
}
