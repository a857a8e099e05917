//! Targeting on real 3-member clusters: where the load goes, proven by the response headers
//! (the report's per-member breakdown) and by each member's own gRPC counters; leader
//! changes during a run.

use std::time::Duration;

use etcdlat_core::{OpKind, Targeting};
use etcdlat_testkit::{Etcd, grpc_handled, skip};

use crate::{scenario, under_way};

/// Each member's count of successful Puts.
fn puts_by_member(etcd: &Etcd) -> Vec<(String, u64)> {
    etcd.local()
        .members()
        .iter()
        .map(|m| (m.name().to_owned(), grpc_handled(m.client_url(), "Put")))
        .collect()
}

fn deltas(before: &[(String, u64)], after: &[(String, u64)]) -> Vec<(String, u64)> {
    before.iter().zip(after).map(|((n, b), (_, a))| (n.clone(), a - b)).collect()
}

#[tokio::test]
async fn leader_and_followers_targets_are_served_by_those_members_only() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let leader = etcd.leader_name().await;
    let driver = etcd.driver(4).await;

    let before = puts_by_member(&etcd);
    let mut s = scenario("[load]\nclients = 8\ntotal = 300\n[op.put]\nkey-space-size = 300\n");
    s.target = Targeting::Leader;
    let report = driver.run(&s).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 300);
    let served: Vec<(&str, u64)> = report.members.iter().map(|m| (m.name.as_str(), m.ok)).collect();
    assert_eq!(served, [(leader.as_str(), 300)], "the headers name the leader only");
    for (name, n) in deltas(&before, &puts_by_member(&etcd)) {
        assert_eq!(n, if name == leader { 300 } else { 0 }, "{name}'s own Put counter");
    }

    let before = puts_by_member(&etcd);
    s.target = Targeting::Followers;
    let report = driver.run(&s).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 300);
    assert_eq!(report.members.len(), 2, "{:?}", report.members);
    assert!(report.members.iter().all(|m| m.name != leader && m.ok > 0));
    assert_eq!(report.members.iter().map(|m| m.ok).sum::<u64>(), 300);
    for (name, n) in deltas(&before, &puts_by_member(&etcd)) {
        if name == leader {
            assert_eq!(n, 0, "the leader served no Put itself");
        } else {
            assert!(n > 0, "follower {name} served Puts");
        }
    }

    s.target = Targeting::Member(leader.clone());
    let report = driver.run(&s).await.unwrap();
    assert_eq!(report.members.len(), 1);
    assert_eq!(report.members[0].name, leader);
    s.target = Targeting::All;
    let report = driver.run(&s).await.unwrap();
    assert_eq!(report.members.len(), 3, "connections spread over every member");
    assert_eq!(report.target.endpoints.len(), 3);
}

#[tokio::test]
async fn a_killed_leader_is_detected_and_followed() {
    if skip() {
        return;
    }
    let mut etcd = Etcd::start_cluster(3).await;
    let leader = etcd.leader_name().await;
    let driver = etcd.driver(2).await;
    let mut s =
        scenario("[load]\nclients = 4\nduration = \"8s\"\n[op.put]\nkey-space-size = 100\n");
    s.target = Targeting::Leader;
    let progress = driver.progress();
    let run = driver.run(&s);
    // 1.5 s into the run (counted from when requests complete, not from when it was asked
    // for): the change is then seen past the run's first second, as asserted below.
    let kill = async {
        assert!(under_way(&progress).await > 0, "the run did not start");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        etcd.kill(&leader);
    };
    let (report, ()) = tokio::join!(run, kill);
    let report = report.unwrap();
    assert!(!report.interrupted);
    assert!(!report.leader_changes.is_empty(), "the change was seen");
    let change = &report.leader_changes[0];
    assert_eq!(change.from, leader);
    assert_ne!(change.to, leader);
    assert!((1.0..8.0).contains(&change.t_s), "seen at {} s", change.t_s);
    let put = report.op(OpKind::Put);
    assert!(put.errors_total > 0, "requests to the dead leader fail and are counted");
    let new_leader =
        report.members.iter().find(|m| m.name == change.to).expect("the new leader served");
    assert!(new_leader.ok > 0, "the load followed the new leader");
}
