//! Server metrics and client usage: every member's `/metrics` is in the report, and its
//! figures move as the load says they must.

use etcdlat_core::metrics::metric;
use etcdlat_core::{OpKind, Report};
use etcdlat_testkit::{Etcd, skip};

use crate::run_on;

/// Puts in each run.
const PUTS: u64 = 500;

/// Proposals the leader may commit during a run besides our puts (etcd's own: member
/// attributes, lease checkpoints, cluster version).
const INTERNAL_PROPOSALS: u64 = 20;

/// Runs `PUTS` puts against a fresh cluster of `members` and checks what every member's
/// metrics and the client usage say.
async fn puts_on(members: u32) -> Report {
    let etcd = Etcd::start_cluster(members).await;
    let report = run_on(
        &etcd,
        4,
        &format!("[load]\nclients = 16\ntotal = {PUTS}\n[op.put]\nval-size = 256\nkey-space-size = {PUTS}\nsequential-keys = true\n"),
    )
    .await;
    assert_eq!(report.op(OpKind::Put).ok, PUTS);

    let names: Vec<&str> = etcd.local().members().iter().map(|m| m.name()).collect();
    let mut scraped: Vec<&str> = report.server.iter().map(|m| m.name.as_str()).collect();
    scraped.sort_unstable();
    assert_eq!(scraped, names, "every member, once");
    for m in &report.server {
        let who = format!("{} ({})", m.name, m.url);
        // At the start and at the end at least; none failed.
        assert!(m.samples >= 2, "{who}: {m:?}");
        assert_eq!(m.failed_samples, 0, "{who}: {m:?}");
        let (avg, max) = (m.rss_avg_bytes.unwrap(), m.rss_max_bytes.unwrap());
        assert!(avg > 0 && avg <= max, "{who}: rss avg {avg}, max {max}");
        assert!(m.db_size_bytes.unwrap() > 0, "{who}: {m:?}");
        assert!(m.cpu_s.unwrap() >= 0.0, "{who}: {m:?}");
        // Every member applied the puts, so every one fsynced its WAL during the run.
        let (p50, p99) = (m.wal_fsync_p50_us.unwrap(), m.wal_fsync_p99_us.unwrap());
        assert!(p50 > 0 && p50 <= p99, "{who}: fsync p50 {p50}, p99 {p99}");
        assert_eq!(m.proposals_failed, Some(0), "{who}");
        assert_eq!(m.leader_changes, Some(0), "{who}");
        assert!(m.proposals_committed.is_some(), "{who}");
        if members > 1 {
            assert!(m.peer_sent_bytes.unwrap() > 0, "{who}: {m:?}");
            assert!(m.peer_received_bytes.unwrap() > 0, "{who}: {m:?}");
        }
        // Every metric etcdlat reads is exported by this etcd (.ci/run runs this against
        // every version of .ci/etcd-versions): a renamed one fails here. A single member
        // has no peers to count traffic to.
        let unexported =
            if members > 1 { vec![] } else { vec![metric::PEER_SENT, metric::PEER_RECEIVED] };
        assert_eq!(
            m.not_exported, unexported,
            "{who}: not exported by etcd {}",
            report.target.etcd_version
        );
    }
    let leader = report
        .server
        .iter()
        .find(|m| m.name == report.target.leader)
        .unwrap_or_else(|| panic!("no metrics of the leader {}", report.target.leader));
    let committed = leader.proposals_committed.unwrap();
    assert!(
        (PUTS..=PUTS + INTERNAL_PROPOSALS).contains(&committed),
        "the leader committed {committed} proposals for {PUTS} puts"
    );
    // The connections spread over every member; together they received every value.
    let grpc_in: u64 = report.server.iter().map(|m| m.grpc_received_bytes.unwrap()).sum();
    assert!(grpc_in >= PUTS * 256, "{grpc_in} gRPC bytes received for {PUTS} 256 B values");

    let client = report.client.as_ref().expect("the client measured itself");
    assert!(client.user_cpu_s + client.system_cpu_s > 0.0, "{client:?}");
    assert!(client.max_rss_bytes > 0, "{client:?}");
    report
}

#[tokio::test]
async fn one_member_reports_its_metrics() {
    if skip() {
        return;
    }
    let report = puts_on(1).await;
    assert_eq!(report.server[0].peer_sent_bytes.unwrap_or(0), 0, "no peers to send to");
}

#[tokio::test]
async fn each_of_three_members_reports_its_metrics() {
    if skip() {
        return;
    }
    let report = puts_on(3).await;
    assert_eq!(report.server.len(), 3);
}
