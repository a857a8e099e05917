//! What the audit found: the report's `audit` section.

use serde::{Deserialize, Serialize};

/// Offending requests a report names, at most: the first by send time.
pub const MAX_VIOLATIONS: usize = 10;

/// The audit of one run ([`super`]): counts, serializable staleness, and the first
/// offending requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AuditReport {
    /// Requests of audited kinds issued in the measured run.
    pub issued: u64,
    /// Of those, audited (recorded): the rest came after the workers' buffers were full.
    pub audited: u64,
    /// The most requests the run audits (`audit-limit`).
    pub limit: u64,
    /// Writes acknowledged (a transaction of several puts counts once).
    pub writes: u64,
    /// Writes etcd refused.
    pub failed_writes: u64,
    /// Writes of unknown outcome: timed out, connection lost, or in flight at the stop.
    /// Perhaps applied; never counted lost.
    pub unknown_outcome: u64,
    /// The lowest and highest revision of the acknowledged writes (0 when none).
    pub first_revision: i64,
    /// See `first_revision`.
    pub last_revision: i64,
    /// Keys written and read back after the run (their current mod revision).
    pub keys_read_back: u64,
    /// Acknowledged puts (keys of transactions counted apiece) read back at their own
    /// revision.
    pub puts_read_at_revision: u64,
    /// Acknowledged puts whose revision was compacted before it could be read: checked
    /// against their key's current mod revision only.
    pub puts_compacted: u64,
    /// Why nothing could be read back, when so (lost writes were then not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_back_error: Option<String>,
    /// Acknowledged puts not in the store.
    pub lost: u64,
    /// Writes with a revision not above that of a write acknowledged before they were sent.
    pub order_violations: u64,
    /// Acknowledged writes sharing a revision with another.
    pub duplicate_revisions: u64,
    /// Linearizable reads that answered older than a write acknowledged before they were
    /// sent.
    pub stale_reads: u64,
    /// Linearizable reads audited (acknowledged).
    pub linearizable_reads: u64,
    /// Serializable reads audited (acknowledged).
    pub serializable_reads: u64,
    /// How far behind serializable reads answered, all members together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serializable_staleness: Option<Staleness>,
    /// The same per member that answered, in name order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberStaleness>,
    /// The first offending requests by send time, at most [`MAX_VIOLATIONS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
}

impl AuditReport {
    /// Lost writes, order violations, duplicate revisions and stale linearizable reads,
    /// together.
    #[must_use]
    pub fn violation_count(&self) -> u64 {
        self.lost + self.order_violations + self.duplicate_revisions + self.stale_reads
    }

    /// Adds `other`'s audit (another shard's, which saw none of these requests): counts
    /// summed, the revision span widened, offending requests kept up to [`MAX_VIOLATIONS`],
    /// and staleness combined per member as an upper bound (each percentile the higher of
    /// the two), since percentiles of separate histories cannot be added.
    pub fn add(&mut self, other: &Self) {
        self.issued += other.issued;
        self.audited += other.audited;
        self.limit += other.limit;
        self.writes += other.writes;
        self.failed_writes += other.failed_writes;
        self.unknown_outcome += other.unknown_outcome;
        let span = |a: i64, b: i64, f: fn(i64, i64) -> i64| {
            if a == 0 {
                b
            } else if b == 0 {
                a
            } else {
                f(a, b)
            }
        };
        self.first_revision = span(self.first_revision, other.first_revision, i64::min);
        self.last_revision = span(self.last_revision, other.last_revision, i64::max);
        self.keys_read_back += other.keys_read_back;
        self.puts_read_at_revision += other.puts_read_at_revision;
        self.puts_compacted += other.puts_compacted;
        if self.read_back_error.is_none() {
            self.read_back_error.clone_from(&other.read_back_error);
        }
        self.lost += other.lost;
        self.order_violations += other.order_violations;
        self.duplicate_revisions += other.duplicate_revisions;
        self.stale_reads += other.stale_reads;
        self.linearizable_reads += other.linearizable_reads;
        self.serializable_reads += other.serializable_reads;
        match (&mut self.serializable_staleness, &other.serializable_staleness) {
            (Some(mine), Some(theirs)) => mine.bound(theirs),
            (None, Some(theirs)) => self.serializable_staleness = Some(theirs.clone()),
            _ => {}
        }
        for m in &other.members {
            match self.members.iter_mut().find(|o| o.id == m.id) {
                Some(o) => o.staleness.bound(&m.staleness),
                None => self.members.push(m.clone()),
            }
        }
        let room = MAX_VIOLATIONS.saturating_sub(self.violations.len());
        self.violations.extend(other.violations.iter().take(room).cloned());
    }

    /// What failed, in words: one line of counts, then one per offending request named
    /// (empty when the audit passed).
    #[must_use]
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.violation_count() > 0 {
            out.push(format!(
                "audit: {} lost writes, {} order violations, {} duplicate revisions, {} stale linearizable reads",
                self.lost, self.order_violations, self.duplicate_revisions, self.stale_reads
            ));
            out.extend(self.violations.iter().take(5).map(|v| format!("audit: {}", v.detail)));
        }
        if let Some(e) = &self.read_back_error {
            out.push(format!("audit: the written keys could not be read back: {e}"));
        }
        out
    }
}

/// A distribution of how far behind reads answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Staleness {
    /// Reads measured.
    pub reads: u64,
    /// Of those, behind by at least one revision.
    pub behind: u64,
    /// Revisions behind the newest write acknowledged when the read was sent: median.
    pub p50_revisions: u64,
    /// 99th percentile.
    pub p99_revisions: u64,
    /// Largest.
    pub max_revisions: u64,
    /// Milliseconds between the acknowledgement of the first write the read missed and the
    /// read's send (0 when it missed none): median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

impl Staleness {
    /// The distribution of `(revisions, microseconds)` samples (sorted here).
    pub(super) fn of(revisions: &mut [u64], micros: &mut [u64]) -> Self {
        revisions.sort_unstable();
        micros.sort_unstable();
        let ms = |us: u64| us as f64 / 1000.0;
        Self {
            reads: revisions.len() as u64,
            behind: revisions.iter().filter(|&&r| r > 0).count() as u64,
            p50_revisions: nearest_rank(revisions, 0.5),
            p99_revisions: nearest_rank(revisions, 0.99),
            max_revisions: revisions.last().copied().unwrap_or(0),
            p50_ms: ms(nearest_rank(micros, 0.5)),
            p99_ms: ms(nearest_rank(micros, 0.99)),
            max_ms: ms(micros.last().copied().unwrap_or(0)),
        }
    }
}

impl Staleness {
    /// Adds `other`'s reads, each figure the higher of the two.
    fn bound(&mut self, other: &Self) {
        self.reads += other.reads;
        self.behind += other.behind;
        self.p50_revisions = self.p50_revisions.max(other.p50_revisions);
        self.p99_revisions = self.p99_revisions.max(other.p99_revisions);
        self.max_revisions = self.max_revisions.max(other.max_revisions);
        self.p50_ms = self.p50_ms.max(other.p50_ms);
        self.p99_ms = self.p99_ms.max(other.p99_ms);
        self.max_ms = self.max_ms.max(other.max_ms);
    }
}

/// The `q` quantile of sorted `xs` by nearest rank (0 when empty).
fn nearest_rank(xs: &[u64], q: f64) -> u64 {
    if xs.is_empty() {
        return 0;
    }
    let rank = (q * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

/// Serializable staleness of the reads one member answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MemberStaleness {
    /// Member name (its id in hex when unknown).
    pub name: String,
    /// Member id, hex, as in response headers.
    pub id: String,
    /// Its reads' staleness.
    pub staleness: Staleness,
}

/// One offending request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Violation {
    /// Which check: `lost-write`, `order`, `duplicate-revision` or `stale-read`.
    pub check: String,
    /// Its operation kind (`put`, `range`, ...).
    pub op: String,
    /// Its key: the index in its key space (absent for a range of keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<u64>,
    /// The revision it was answered at.
    pub revision: i64,
    /// The revision it contradicts: the earlier write's, or what the store holds.
    pub other_revision: i64,
    /// When it was sent, seconds since measurement started.
    pub sent_s: f64,
    /// When its answer arrived, seconds since measurement started.
    pub done_s: f64,
    /// The member that answered.
    pub member: String,
    /// All of it in words.
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut revs: Vec<u64> = (1..=100).rev().collect();
        let mut us: Vec<u64> = vec![0; 100];
        let s = Staleness::of(&mut revs, &mut us);
        assert_eq!((s.p50_revisions, s.p99_revisions, s.max_revisions), (50, 99, 100));
        assert_eq!((s.reads, s.behind), (100, 100));
        assert_eq!(Staleness::of(&mut [], &mut []), Staleness::default());
    }
}
