//! The consistency audit against real etcd: through a paused leader and a killed and
//! restarted one, nothing acknowledged is lost or out of order, and the audit's counts
//! reconcile with the server's revisions; serializable reads served by followers while the
//! leader takes writes are measurably behind, and on a single member never.

use etcdlat_core::audit::AuditReport;
use etcdlat_core::{OpKind, Report};
use etcdlat_testkit::{Etcd, skip};

use crate::run_on;

/// The report's audit, checked to have found nothing wrong.
fn clean_audit(report: &Report) -> &AuditReport {
    let audit = report.audit.as_ref().expect("the run was audited");
    assert_eq!(audit.violation_count(), 0, "{audit:#?}");
    assert_eq!(audit.read_back_error, None, "{audit:#?}");
    assert!(report.failures().is_empty(), "{:?}", report.failures());
    assert_eq!(audit.audited, audit.issued, "under the limit, every request is audited");
    assert_eq!(audit.issued, report.requests(), "every request of the run is of an audited kind");
    audit
}

#[tokio::test]
async fn nothing_acknowledged_is_lost_through_a_paused_and_a_killed_leader() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        3,
        "[load]\nclients = 6\nduration = \"6s\"\n[checks]\naudit = true\n\
         [[mix]]\nweight = 6\n[mix.op.put]\nkey-space-size = 200\n\
         [[mix]]\nweight = 3\n[mix.op.range]\nkey = \"\"\nkey-space-size = 200\n\
         [[mix]]\nweight = 1\n[mix.op.delete]\nkey = \"\"\nkey-space-size = 200\n\
         [[faults]]\nat = \"1s\"\naction = \"pause\"\nmember = \"leader\"\nfor = \"1s\"\n\
         [[faults]]\nat = \"3s\"\naction = \"kill\"\nmember = \"leader\"\n\
         [[faults]]\nat = \"4s\"\naction = \"restart\"\n",
    )
    .await;
    assert!(report.faults.iter().all(|f| f.error.is_none()), "{:#?}", report.faults);
    let audit = clean_audit(&report);
    let after = etcd.revision().await;

    // Every acknowledged write took a revision of its own; writes of unknown outcome may
    // have taken one too. Nobody else wrote.
    let written = u64::try_from(after - before).unwrap();
    assert!(
        (audit.writes..=audit.writes + audit.unknown_outcome).contains(&written),
        "{written} revisions for {} writes acknowledged and {} unknown: {audit:#?}",
        audit.writes,
        audit.unknown_outcome
    );
    assert!(audit.first_revision > before && audit.last_revision <= after, "{audit:#?}");
    assert!(audit.unknown_outcome > 0 || report.errors_total() == 0, "{audit:#?}");
    // Each acknowledged put was read back at its revision (nothing compacted).
    let put = report.op(OpKind::Put);
    assert_eq!(audit.puts_read_at_revision, put.ok, "{audit:#?}");
    assert_eq!(audit.puts_compacted, 0);
    assert!(audit.keys_read_back > 0 && audit.keys_read_back <= 200, "{audit:#?}");
    assert_eq!(audit.linearizable_reads, report.op(OpKind::Range).ok + deleted_nothing(&report));
}

/// Deletes that found nothing to delete: etcd answers them at its current revision, and the
/// audit checks them as linearizable reads.
fn deleted_nothing(report: &Report) -> u64 {
    let delete = report.op(OpKind::Delete);
    let audit = report.audit.as_ref().unwrap();
    // Acknowledged writes are the puts and the deletes that deleted a key.
    delete.ok - (audit.writes - report.op(OpKind::Put).ok)
}

/// Half puts, half serializable reads of the same keys, from 20 clients.
const WRITE_AND_READ_S: &str = "[load]\nclients = 20\ntotal = 4000\n[checks]\naudit = true\n\
    [[mix]]\nweight = 1\n[mix.op.put]\nkey-space-size = 100\n\
    [[mix]]\nweight = 1\n[mix.op.range]\nkey = \"\"\nkey-space-size = 100\nconsistency = \"s\"\n";

#[tokio::test]
async fn serializable_reads_on_followers_are_behind_and_on_one_member_never() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let leader = etcd.leader_name().await;
    let report = run_on(&etcd, 4, &format!("target = \"followers\"\n{WRITE_AND_READ_S}")).await;
    let audit = clean_audit(&report);
    let staleness = audit.serializable_staleness.as_ref().expect("serializable reads measured");
    assert_eq!(staleness.reads, report.op(OpKind::Range).ok);
    assert!(staleness.behind > 0 && staleness.max_revisions > 0, "{audit:#?}");
    assert!(staleness.max_ms > 0.0, "{audit:#?}");
    assert_eq!(audit.members.len(), 2, "both followers answered: {audit:#?}");
    assert!(audit.members.iter().all(|m| m.name != leader), "{audit:#?}");
    let reads: u64 = audit.members.iter().map(|m| m.staleness.reads).sum();
    assert_eq!(reads, staleness.reads);

    // One member acknowledges a write only once it is applied: no read sent later misses it.
    let single = Etcd::start().await;
    let report = run_on(&single, 4, WRITE_AND_READ_S).await;
    let audit = clean_audit(&report);
    let staleness = audit.serializable_staleness.as_ref().expect("serializable reads measured");
    assert!(staleness.reads > 1000, "{audit:#?}");
    assert_eq!((staleness.behind, staleness.max_revisions, staleness.max_ms), (0, 0, 0.0));
}

#[tokio::test]
async fn a_bounded_audit_of_transactions_says_how_much_it_audited() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let txn = |checks: &str| {
        format!(
            "[load]\nclients = 4\ntotal = 200\n[checks]\naudit = true\n{checks}\n\
             [op.txn-put]\ntxn-ops = 3\nkey-space-size = 300\n"
        )
    };
    let before = etcd.revision().await;
    let report = run_on(&etcd, 2, &txn("")).await;
    let audit = clean_audit(&report);
    // One revision per transaction, its three keys each read back at it.
    assert_eq!(etcd.revision().await - before, 200);
    assert_eq!((audit.writes, audit.puts_read_at_revision), (200, 600), "{audit:#?}");

    // 150 entries hold 50 transactions of 3 keys, give or take one per worker.
    let report = run_on(&etcd, 2, &txn("audit-limit = 150")).await;
    let audit = report.audit.as_ref().unwrap();
    assert_eq!(audit.violation_count(), 0, "{audit:#?}");
    assert_eq!(audit.issued, 200);
    assert!((50..=52).contains(&audit.audited), "{audit:#?}");
    assert_eq!(audit.writes, audit.audited);
    assert_eq!(audit.puts_read_at_revision, 3 * audit.audited);
}
