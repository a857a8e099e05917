//! The checks on a run's history: real-time order, unique revisions, linearizable reads'
//! freshness, serializable reads' staleness, and (with the store's answers) lost writes.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::readback::{LostWrites, lost_writes};
use super::{
    Access, AuditReport, Entry, KeyRef, MAX_VIOLATIONS, MemberStaleness, Outcome, ReadBack,
    ReadPlan, Staleness, Violation,
};

/// Which check a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Lost,
    Order,
    Duplicate,
    StaleRead,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Self::Lost => "lost-write",
            Self::Order => "order",
            Self::Duplicate => "duplicate-revision",
            Self::StaleRead => "stale-read",
        }
    }
}

/// One offending request, before it is put in words.
struct Offense {
    check: Check,
    index: usize,
    /// The request it contradicts, if one.
    other: Option<usize>,
    /// The revision it contradicts.
    other_revision: i64,
    why: &'static str,
}

/// Checks `history` (every worker's entries, in any order) and, when the driver read the
/// store back, `server`'s answers to [`ReadPlan::of`] the same history. `member_name` names
/// a member id. `issued`, `limit` and `read_back_error` are the caller's to fill.
#[must_use]
#[doc(hidden)] // internal: the driver's; not part of the API
pub fn check(
    history: &[Entry],
    server: Option<(&ReadPlan, &ReadBack)>,
    member_name: &dyn Fn(u64) -> String,
) -> AuditReport {
    let requests = history.iter().filter(|e| e.access != Access::PutMore).count();
    let mut report = AuditReport { audited: requests as u64, ..AuditReport::default() };
    for e in history {
        match (e.access, e.outcome) {
            (Access::Put | Access::Delete, Outcome::Ok) => report.writes += 1,
            (Access::Put | Access::Delete, Outcome::Failed) => report.failed_writes += 1,
            (Access::Put | Access::Delete, Outcome::Unknown) => report.unknown_outcome += 1,
            (Access::Read | Access::DeleteNothing, Outcome::Ok) => report.linearizable_reads += 1,
            (Access::SerializableRead, Outcome::Ok) => report.serializable_reads += 1,
            _ => {}
        }
    }

    // Acknowledged writes by acknowledgement time, and by revision.
    let mut acks: Vec<(u64, i64, usize)> = history
        .iter()
        .enumerate()
        .filter(|(_, e)| e.acked() && e.access.is_write())
        .map(|(i, e)| (e.done_ns, e.revision, i))
        .collect();
    acks.sort_unstable();
    let mut by_revision: Vec<(i64, u64, usize)> =
        acks.iter().map(|&(done, rev, i)| (rev, done, i)).collect();
    by_revision.sort_unstable();
    report.first_revision = by_revision.first().map_or(0, |w| w.0);
    report.last_revision = by_revision.last().map_or(0, |w| w.0);

    let mut offenses = Vec::new();
    for w in by_revision.windows(2).filter(|w| w[0].0 == w[1].0) {
        offenses.push(Offense {
            check: Check::Duplicate,
            index: w[1].2,
            other: Some(w[0].2),
            other_revision: w[0].0,
            why: "another acknowledged write has the same revision",
        });
    }
    report.duplicate_revisions = offenses.len() as u64;

    // The earliest acknowledgement among the writes from each revision-sorted position on:
    // when the first write a serializable read missed was acknowledged.
    let mut earliest_from = vec![u64::MAX; by_revision.len() + 1];
    for i in (0..by_revision.len()).rev() {
        earliest_from[i] = earliest_from[i + 1].min(by_revision[i].1);
    }

    // Every acknowledged request by send time, swept with the highest revision acknowledged
    // before it was sent.
    let mut sends: Vec<(u64, usize)> = history
        .iter()
        .enumerate()
        .filter(|(_, e)| e.acked() && e.access != Access::PutMore)
        .map(|(i, e)| (e.sent_ns, i))
        .collect();
    sends.sort_unstable();
    let mut stale = Vec::new();
    let mut staleness: BTreeMap<u64, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    let (mut next, mut top): (usize, Option<(i64, usize)>) = (0, None);
    for &(sent, i) in &sends {
        while next < acks.len() && acks[next].0 < sent {
            let (_, rev, by) = acks[next];
            if top.is_none_or(|(t, _)| rev > t) {
                top = Some((rev, by));
            }
            next += 1;
        }
        let e = &history[i];
        let (top_rev, by) = top.unwrap_or((0, usize::MAX));
        match e.access {
            Access::Put | Access::Delete if top.is_some() && e.revision <= top_rev => {
                offenses.push(Offense {
                    check: Check::Order,
                    index: i,
                    other: Some(by),
                    other_revision: top_rev,
                    why: "a write acknowledged before it was sent has a revision as high",
                });
            }
            Access::Read | Access::DeleteNothing if e.revision < top_rev => {
                stale.push(Offense {
                    check: Check::StaleRead,
                    index: i,
                    other: Some(by),
                    other_revision: top_rev,
                    why: "answered at a revision older than a write acknowledged before it was sent",
                });
            }
            Access::SerializableRead => {
                let behind = u64::try_from(top_rev - e.revision).unwrap_or(0);
                let missed = by_revision.partition_point(|w| w.0 <= e.revision);
                let since = if behind > 0 { sent.saturating_sub(earliest_from[missed]) } else { 0 };
                let samples = staleness.entry(e.member).or_default();
                samples.0.push(behind);
                samples.1.push(since / 1000);
            }
            _ => {}
        }
    }
    report.order_violations = offenses.len() as u64 - report.duplicate_revisions;
    stale_keys(history, &mut stale);
    stale.sort_unstable_by_key(|o| o.index);
    stale.dedup_by_key(|o| o.index);
    report.stale_reads = stale.len() as u64;
    offenses.append(&mut stale);

    if let Some((plan, back)) = server {
        let LostWrites { lost, read_at_revision, compacted } = lost_writes(history, plan, back);
        report.keys_read_back = back.current.len() as u64;
        report.puts_read_at_revision = read_at_revision;
        report.puts_compacted = compacted;
        report.lost = lost.len() as u64;
        offenses.extend(lost.into_iter().map(|l| Offense {
            check: Check::Lost,
            index: l.index,
            other: None,
            other_revision: l.found,
            why: l.why,
        }));
    }

    let (mut all_revisions, mut all_micros) = (Vec::new(), Vec::new());
    for (member, (revisions, micros)) in &mut staleness {
        all_revisions.extend_from_slice(revisions);
        all_micros.extend_from_slice(micros);
        report.members.push(MemberStaleness {
            name: member_name(*member),
            id: format!("{member:x}"),
            staleness: Staleness::of(revisions, micros),
        });
    }
    report.members.sort_by(|a, b| a.name.cmp(&b.name));
    if !all_revisions.is_empty() {
        report.serializable_staleness = Some(Staleness::of(&mut all_revisions, &mut all_micros));
    }

    offenses.sort_unstable_by_key(|o| (history[o.index].sent_ns, o.index));
    report.violations =
        offenses.iter().take(MAX_VIOLATIONS).map(|o| violation(history, o, member_name)).collect();
    report
}

/// Single-key linearizable reads that found their key at a mod revision older than a put
/// of that key acknowledged before they were sent. (A key found is at least as new as every
/// put of it before: a delete and a new put in between make it newer still.)
fn stale_keys(history: &[Entry], stale: &mut Vec<Offense>) {
    let mut puts: Vec<(KeyRef, u64, i64, usize)> = history
        .iter()
        .enumerate()
        .filter(|(_, e)| e.acked() && matches!(e.access, Access::Put | Access::PutMore))
        .filter_map(|(i, e)| Some((e.key_ref()?, e.done_ns, e.revision, i)))
        .collect();
    puts.sort_unstable();
    let mut reads: Vec<(KeyRef, u64, usize)> = history
        .iter()
        .enumerate()
        .filter(|(_, e)| e.acked() && e.access == Access::Read && e.mod_revision > 0)
        .filter_map(|(i, e)| Some((e.key_ref()?, e.sent_ns, i)))
        .collect();
    reads.sort_unstable();
    let (mut next, mut newest): (usize, Option<(KeyRef, i64, usize)>) = (0, None);
    for (key, sent, i) in reads {
        while next < puts.len()
            && (puts[next].0 < key || (puts[next].0 == key && puts[next].1 < sent))
        {
            let (k, _, rev, by) = puts[next];
            if newest.is_none_or(|(nk, nrev, _)| nk != k || rev > nrev) {
                newest = Some((k, rev, by));
            }
            next += 1;
        }
        if let Some((k, rev, by)) = newest
            && k == key
            && history[i].mod_revision < rev
        {
            stale.push(Offense {
                check: Check::StaleRead,
                index: i,
                other: Some(by),
                other_revision: rev,
                why: "returned its key older than a put of it acknowledged before it was sent",
            });
        }
    }
}

/// Seconds since the epoch, from nanoseconds.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A request in words: `put of key #12 answered at revision 9 by m1 (sent 0.000200 s,
/// answered 0.000300 s)`.
fn describe(e: &Entry, member_name: &dyn Fn(u64) -> String) -> String {
    let mut s = e.op.name().to_owned();
    if let Some(k) = e.key_ref() {
        let _ = write!(s, " of key #{}", k.key);
        if k.space > 0 {
            let _ = write!(s, " (key space {})", k.space);
        }
    }
    let _ = write!(
        s,
        " answered at revision {} by {} (sent {:.6} s, answered {:.6} s)",
        e.revision,
        member_name(e.member),
        secs(e.sent_ns),
        secs(e.done_ns)
    );
    s
}

fn violation(history: &[Entry], o: &Offense, member_name: &dyn Fn(u64) -> String) -> Violation {
    let e = &history[o.index];
    let mut detail = format!("{}: {}: {}", o.check.name(), describe(e, member_name), o.why);
    match o.other {
        Some(other) => {
            let _ = write!(detail, " ({})", describe(&history[other], member_name));
        }
        None if e.mod_revision != 0 || o.other_revision != 0 => {
            let _ = write!(detail, " (found mod revision {})", o.other_revision);
        }
        None => {}
    }
    Violation {
        check: o.check.name().to_owned(),
        op: e.op.name().to_owned(),
        key: e.key_ref().map(|k| k.key),
        revision: e.revision,
        other_revision: o.other_revision,
        sent_s: secs(e.sent_ns),
        done_s: secs(e.done_ns),
        member: member_name(e.member),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AtRevision;
    use crate::op::OpKind;

    fn name(id: u64) -> String {
        format!("m{id}")
    }

    fn entry(access: Access, key: u64, rev: i64, sent_us: u64, done_us: u64) -> Entry {
        let op = match access {
            Access::Read | Access::SerializableRead => OpKind::Range,
            Access::Delete | Access::DeleteNothing => OpKind::Delete,
            Access::Put | Access::PutMore => OpKind::Put,
        };
        Entry {
            sent_ns: sent_us * 1000,
            done_ns: done_us * 1000,
            revision: rev,
            member: 1,
            key,
            outcome: Outcome::Ok,
            ..Entry::new(op, access, 0)
        }
    }

    fn put(key: u64, rev: i64, sent_us: u64, done_us: u64) -> Entry {
        entry(Access::Put, key, rev, sent_us, done_us)
    }

    /// Ten puts one after another, revisions 2..=11, each 100 us long.
    fn sequential() -> Vec<Entry> {
        (0..10).map(|i| put(i, i as i64 + 2, i * 100, i * 100 + 90)).collect()
    }

    /// The store as it should be after `history`: every key at its last put.
    fn faithful(history: &[Entry]) -> (ReadPlan, ReadBack) {
        let plan = ReadPlan::of(history);
        let current = plan
            .keys
            .iter()
            .map(|k| {
                history
                    .iter()
                    .filter(|e| e.key_ref() == Some(*k) && e.outcome == Outcome::Ok)
                    .map(|e| e.revision)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let at_revision = plan
            .puts
            .iter()
            .map(|&i| AtRevision::Found { mod_revision: history[i].revision, value_matches: true })
            .collect();
        (plan, ReadBack { current, at_revision })
    }

    #[test]
    fn a_faithful_history_passes() {
        let mut h = sequential();
        // Concurrent writes may take either order; reads after them see them.
        h.push(put(20, 13, 1_000, 1_100));
        h.push(put(21, 12, 1_000, 1_100));
        h.push(entry(Access::Read, 20, 13, 1_200, 1_300));
        let (plan, back) = faithful(&h);
        let r = check(&h, Some((&plan, &back)), &name);
        assert_eq!(r.violation_count(), 0, "{r:#?}");
        assert!(r.failures().is_empty());
        assert_eq!((r.writes, r.first_revision, r.last_revision), (12, 2, 13));
        assert_eq!((r.keys_read_back, r.puts_read_at_revision), (12, 12));
        assert_eq!(r.linearizable_reads, 1);
    }

    #[test]
    fn a_lost_write_is_named() {
        let h = sequential();
        let (plan, mut back) = faithful(&h);
        // Key 4's put (revision 6) acknowledged, but the store never had it.
        back.at_revision[4] = AtRevision::Absent;
        back.current[4] = 0;
        let r = check(&h, Some((&plan, &back)), &name);
        assert_eq!(r.lost, 1, "{r:#?}");
        assert_eq!(r.violation_count(), 1);
        let v = &r.violations[0];
        assert_eq!((v.check.as_str(), v.key, v.revision), ("lost-write", Some(4), 6));
        assert!(v.detail.contains("put of key #4 answered at revision 6 by m1"), "{}", v.detail);
        assert!(r.failures()[1].contains("key #4"), "{:?}", r.failures());

        // Compacted: the current state alone shows it when the key is older than the put.
        back.at_revision[4] = AtRevision::Compacted;
        back.current[4] = 3;
        let r = check(&h, Some((&plan, &back)), &name);
        assert_eq!((r.lost, r.puts_compacted), (1, 1));
        assert_eq!(r.violations[0].other_revision, 3);
    }

    #[test]
    fn an_absent_key_deleted_later_is_not_lost() {
        let mut h = sequential();
        let mut del = entry(Access::Delete, 4, 12, 1_000, 1_100);
        del.outcome = Outcome::Unknown;
        h.push(del);
        let (plan, mut back) = faithful(&h);
        let k = plan.keys.binary_search(&KeyRef { space: 0, key: 4 }).unwrap();
        back.current[k] = 0;
        assert_eq!(check(&h, Some((&plan, &back)), &name).lost, 0);
        h.last_mut().unwrap().outcome = Outcome::Failed;
        let (plan, mut back) = faithful(&h);
        back.current[k] = 0;
        let r = check(&h, Some((&plan, &back)), &name);
        assert_eq!(r.lost, 1, "a refused delete explains nothing");
        assert_eq!(r.failed_writes, 1);
    }

    #[test]
    fn a_reordered_pair_is_named() {
        let mut h = sequential();
        // Key 7's put was sent after key 6's was acknowledged, yet has a lower revision.
        h[6].revision = 9;
        h[7].revision = 8;
        let r = check(&h, None, &name);
        assert_eq!(r.order_violations, 1, "{r:#?}");
        assert_eq!(r.violation_count(), 1);
        let v = &r.violations[0];
        assert_eq!(
            (v.check.as_str(), v.key, v.revision, v.other_revision),
            ("order", Some(7), 8, 9)
        );
        assert!(v.detail.contains("put of key #6 answered at revision 9"), "{}", v.detail);
    }

    #[test]
    fn a_stale_linearizable_read_is_named() {
        let mut h = sequential();
        // Sent after revision 11 was acknowledged; answered at revision 7.
        h.push(entry(Access::Read, 3, 7, 2_000, 2_100));
        // A delete that found nothing answers at the current revision too.
        h.push(entry(Access::DeleteNothing, 3, 11, 2_000, 2_100));
        // The header is fresh but the key older than its last put (revision 5).
        let mut read = entry(Access::Read, 3, 11, 2_000, 2_100);
        read.mod_revision = 4;
        h.push(read);
        let r = check(&h, None, &name);
        assert_eq!(r.stale_reads, 2, "{r:#?}");
        assert_eq!(r.violations[0].check, "stale-read");
        assert_eq!((r.violations[0].revision, r.violations[0].other_revision), (7, 11));
        assert_eq!(r.violations[1].other_revision, 5);
        // A serializable read as old is only measured.
        let mut h = sequential();
        h.push(entry(Access::SerializableRead, 3, 7, 2_000, 2_100));
        let r = check(&h, None, &name);
        assert_eq!(r.violation_count(), 0);
        let s = r.serializable_staleness.unwrap();
        assert_eq!((s.reads, s.behind, s.max_revisions), (1, 1, 4));
        // It missed revision 8, acknowledged at 690 us: 1.31 ms before the read was sent.
        assert!((s.max_ms - 1.31).abs() < 1e-9, "{s:?}");
        assert_eq!(r.members[0].name, "m1");
    }

    #[test]
    fn a_duplicated_revision_is_named() {
        let mut h = sequential();
        // Two concurrent puts, both acknowledged at revision 12.
        h.push(put(30, 12, 1_000, 1_100));
        h.push(put(31, 12, 1_010, 1_090));
        let r = check(&h, None, &name);
        assert_eq!(r.duplicate_revisions, 1, "{r:#?}");
        assert_eq!(r.violation_count(), 1);
        assert_eq!(r.violations[0].check, "duplicate-revision");
        assert_eq!(r.violations[0].revision, 12);
        // The keys of one transaction share their revision and are not duplicates.
        let mut h = sequential();
        h.push(put(30, 12, 1_000, 1_100));
        h.push(entry(Access::PutMore, 31, 12, 1_000, 1_100));
        assert_eq!(check(&h, None, &name).violation_count(), 0);
    }

    #[test]
    fn unknown_outcomes_are_counted_apart_and_never_lost() {
        let mut h = sequential();
        h[9].outcome = Outcome::Unknown;
        let (plan, mut back) = faithful(&h);
        back.current[9] = 0;
        let r = check(&h, Some((&plan, &back)), &name);
        assert_eq!((r.writes, r.unknown_outcome, r.lost), (9, 1, 0));
    }
}
