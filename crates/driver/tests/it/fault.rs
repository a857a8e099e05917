//! Scripted faults during a run, against real etcd clusters: the run goes on through a
//! killed follower, a paused leader and a killed-and-restarted single server; errors are
//! counted by code; each step's report (unavailability window, first write, before / during /
//! after) agrees with itself and with the run's figures; steps that need a local cluster are
//! refused before the run when the driver was built from endpoints, and the request steps
//! (compact, defrag, move-leader) work against endpoints.

use etcdlat_core::{ErrorCode, FaultAction, FaultReport, OpKind, Report};
use etcdlat_driver::{Driver, DriverError};
use etcdlat_testkit::{Etcd, skip};

use crate::{run_on, scenario};

/// Checks what holds for every step's figures, whatever the cluster did.
fn check_consistent(report: &Report) {
    let put = report.op(OpKind::Put);
    for f in &report.faults {
        let at = format!("step {} ({}): {f:#?}", f.step, f.what);
        assert!(f.started_s >= f.at_s - 0.01, "{at}");
        assert!(f.finished_s >= f.started_s, "{at}");
        if let (Some(last), Some(first)) = (f.last_success_before_s, f.first_success_after_s) {
            assert!(last <= first, "{at}");
            assert!((first - last - f.unavailable_s).abs() < 1e-6, "{at}");
            assert!(last <= f.started_s + 0.101, "the window begins by the step's grace: {at}");
            assert!(first + 0.001 >= f.started_s, "{at}");
        }
        // The windows follow each other: before, during, after.
        assert!(f.before.from_s <= f.before.to_s && f.before.to_s == f.during.from_s, "{at}");
        assert!(f.during.from_s <= f.started_s && f.started_s <= f.during.to_s, "{at}");
        assert!(f.after.from_s <= f.after.to_s, "{at}");
        // Empty when the next step came before this one recovered.
        assert!(f.during.to_s == f.after.from_s || f.after.from_s == f.after.to_s, "{at}");
        assert!(f.after.to_s <= report.duration_s + 1e-6, "{at}");
        for w in [&f.before, &f.during, &f.after] {
            assert!(w.ok + w.errors <= put.ok + put.errors_total, "{at}");
            if w.ok > 0 {
                assert!(w.p50_us <= w.p99_us && w.p99_us <= w.max_us, "{at}");
                // Interval histograms keep 2 significant digits.
                assert!(w.max_us as f64 <= put.latency.max_us() as f64 * 1.01 + 1.0, "{at}");
            }
        }
    }
    // The after of one step is the before of the next.
    for pair in report.faults.windows(2) {
        assert_eq!(pair[0].after, pair[1].before, "{:#?}", report.faults);
    }
    assert_eq!(put.errors.values().sum::<u64>(), put.errors_total, "errors by code add up");
    let in_intervals: u64 = put.intervals.iter().map(|i| i.count + i.errors).sum();
    assert_eq!(in_intervals, put.ok + put.errors_total, "every request is in an interval");
}

/// The store's revision, read from the members other than `down` (a client of every member
/// may pick the dead one).
async fn revision_without(etcd: &Etcd, down: &str) -> i64 {
    let urls: Vec<String> = etcd
        .local()
        .members()
        .iter()
        .filter(|m| m.name() != down)
        .map(|m| m.client_url().to_owned())
        .collect();
    let mut client = etcd_client::Client::connect(urls, None).await.expect("connecting");
    let resp = client.get("\0etcdlat-revision-probe", None).await.expect("reading the revision");
    resp.header().expect("a header").revision()
}

fn step(report: &Report, action: FaultAction) -> &FaultReport {
    report
        .faults
        .iter()
        .find(|f| f.action == action)
        .unwrap_or_else(|| panic!("no {action} step in {:#?}", report.faults))
}

#[tokio::test]
async fn a_run_goes_on_through_a_killed_follower_and_a_paused_leader() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let leader = etcd.leader_name().await;
    // One connection per member, so that some clients talk to the follower that is killed.
    // The run goes on 8.5 s after the pause: long enough for etcd's request timeout (about
    // 7 s) when the pause cost the leader its term and the puts it held were dropped, which
    // a loaded two-core machine sometimes makes happen.
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        3,
        "[load]\nclients = 6\nduration = \"12s\"\n[op.put]\nkey-space-size = 1000\n\
             [[faults]]\nat = \"1500ms\"\naction = \"kill\"\nmember = \"follower\"\n\
             [[faults]]\nat = \"3500ms\"\naction = \"pause\"\nmember = \"leader\"\nfor = \"1s\"\n",
    )
    .await;
    assert!(!report.interrupted);
    assert_eq!(report.faults.len(), 2, "{:#?}", report.faults);
    check_consistent(&report);

    let kill = step(&report, FaultAction::Kill);
    assert_eq!(kill.error, None, "{kill:#?}");
    let killed = kill.member.clone().unwrap();
    assert_ne!(killed, leader, "a follower was killed");
    assert_eq!(kill.what, format!("killed {killed} (a follower)"));
    // On time, give or take a busy two-core machine.
    assert!((1.49..2.5).contains(&kill.started_s), "{kill:#?}");
    assert!(kill.unavailable_s < 0.5, "the leader and the other follower went on: {kill:#?}");

    let pause = step(&report, FaultAction::Pause);
    assert_eq!(pause.error, None, "{pause:#?}");
    assert_eq!(pause.member.as_deref(), Some(leader.as_str()));
    assert_eq!(pause.what, format!("paused {leader} (the leader) for 1s"));
    let resumed = pause.resumed_s.expect("resumed after 1s");
    assert!((resumed - pause.started_s - 1.0).abs() < 0.2, "{pause:#?}");
    // Every write goes through the leader: nothing succeeds until it is back or replaced.
    // Puts proposed during the pause can wait for etcd's request timeout (about 7 s) after
    // the leader returns, and a busy two-core machine adds to it.
    assert!((0.5..12.0).contains(&pause.unavailable_s), "{pause:#?}");
    let first_write = pause.first_write_after_s.expect("writes succeeded after the pause");
    let first_after = pause.first_success_after_s.unwrap();
    assert!((first_write - (first_after - pause.started_s)).abs() < 0.002, "{pause:#?}");
    assert!(pause.during.max_us >= 500_000, "requests waited for the paused leader: {pause:#?}");
    assert!(pause.after.ok > 0, "the run went on after the pause: {pause:#?}");

    let put = report.op(OpKind::Put);
    assert!(put.errors_total > 0, "requests to the killed follower failed and were counted");
    assert!(put.errors_of(ErrorCode::Unavailable) > 0, "by code: {:?}", put.errors);
    // A put whose member died after forwarding it may be written and still fail: the server
    // holds every put counted ok, and at most the failed ones besides.
    let written = u64::try_from(revision_without(&etcd, &killed).await - before).unwrap();
    assert!(
        (put.ok..=put.ok + put.errors_total).contains(&written),
        "{written} written, {} ok, {} failed",
        put.ok,
        put.errors_total
    );
}

#[tokio::test]
async fn killing_the_only_server_and_restarting_it() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let report = run_on(
        &etcd,
        2,
        "[load]\nclients = 4\nduration = \"6s\"\n[op.put]\nkey-space-size = 100\n\
             [[faults]]\nat = \"1s\"\naction = \"kill\"\nmember = \"leader\"\n\
             [[faults]]\nat = \"2s\"\naction = \"restart\"\n",
    )
    .await;
    assert!(!report.interrupted);
    check_consistent(&report);
    let kill = step(&report, FaultAction::Kill);
    assert_eq!(kill.what, "killed m0 (the leader)", "{kill:#?}");
    assert_eq!(kill.first_success_after_s, None, "nothing succeeds until the restart");
    let restart = step(&report, FaultAction::Restart);
    assert_eq!(restart.error, None, "{restart:#?}");
    assert_eq!(restart.what, "restarted m0");
    let back = restart.first_success_after_s.expect("clients reconnected after the restart");
    assert!(back > restart.started_s, "{restart:#?}");
    assert!(restart.unavailable_s >= 0.9, "down from the kill to the restart: {restart:#?}");
    assert!(restart.first_write_after_s.is_some(), "{restart:#?}");
    assert!(restart.after.ok > 0, "{restart:#?}");

    let put = report.op(OpKind::Put);
    assert!(put.errors_of(ErrorCode::Unavailable) > 0, "by code: {:?}", put.errors);
    let after_restart: u64 = put
        .intervals
        .iter()
        .filter(|i| i.t_s >= restart.first_success_after_s.unwrap().floor())
        .map(|i| i.count)
        .sum();
    assert!(after_restart > 0, "puts succeeded after the restart");
    // The restarted member kept its data and serves it.
    assert!(etcd.key_count().await > 0);
}

#[tokio::test]
async fn process_steps_need_a_local_cluster_and_request_steps_do_not() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = Driver::builder().endpoints(etcd.endpoints()).connect().await.unwrap();
    let before = etcd.revision().await;
    let err = driver
        .run(&scenario(
            "[load]\ntotal = 10\n[op.put]\n[[faults]]\nat = \"0s\"\naction = \"pause\"\nmember = \"m1\"\n",
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::Fault { step: 0, .. }), "{err}");
    assert!(err.to_string().contains("throwaway local cluster"), "{err}");
    let err = driver
        .run(&scenario(
            "[load]\ntotal = 10\n[op.put]\n[[faults]]\nat = \"0s\"\naction = \"defrag\"\nmember = \"m7\"\n",
        ))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no member named \"m7\""), "{err}");
    assert_eq!(etcd.revision().await, before, "nothing ran");

    let leader = etcd.leader_name().await;
    let report = driver
        .run(&scenario(
            "[load]\nclients = 2\nduration = \"4s\"\n[op.put]\nkey-space-size = 10\n\
             [[faults]]\nat = \"500ms\"\naction = \"compact\"\n\
             [[faults]]\nat = \"1s\"\naction = \"defrag\"\n\
             [[faults]]\nat = \"1500ms\"\naction = \"move-leader\"\n",
        ))
        .await
        .unwrap();
    check_consistent(&report);
    for f in &report.faults {
        assert_eq!(f.error, None, "{f:#?}");
    }
    assert!(step(&report, FaultAction::Compact).what.starts_with("compacted at revision "));
    assert_eq!(step(&report, FaultAction::Defrag).what, "defragmented m0, m1, m2");
    let moved = step(&report, FaultAction::MoveLeader);
    let to = moved.member.clone().unwrap();
    assert_eq!(moved.what, format!("moved the leader from {leader} to {to}"));
    assert_eq!(etcd.leader_name().await, to);
    assert!(report.op(OpKind::Put).ok > 0);
}
