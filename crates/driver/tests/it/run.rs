//! Runs: connections, stop conditions, rate, shutdown, unreachable endpoints.

use std::time::{Duration, Instant};

use etcdlat_core::OpKind;
use etcdlat_driver::{Driver, DriverError};
use etcdlat_testkit::{Etcd, eventually, port_of, skip, tcp_connections_to};

use crate::{run_on, scenario, under_way};

/// This process's TCP connections to `port` once they number `expected`, or after 5 s:
/// connections being closed (a discovery client's, a replaced driver's) go asynchronously.
async fn connections_settle_at(port: u16, expected: usize) -> usize {
    eventually(Duration::from_secs(5), async || tcp_connections_to(port), |&n| n == expected).await
}

#[tokio::test]
async fn ten_conns_are_ten_tcp_connections() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let port = port_of(&etcd.endpoint());
    let driver = etcd.driver(10).await;
    // The discovery client closes asynchronously; wait for it to go.
    assert_eq!(connections_settle_at(port, 10).await, 10);
    let report =
        driver.run(&scenario("[load]\nclients = 100\ntotal = 2000\n[op.put]\n")).await.unwrap();
    assert_eq!(report.params.conns, 10);
    assert_eq!(report.params.clients, 100);
    assert_eq!(report.op(OpKind::Put).ok, 2000);
    assert_eq!(connections_settle_at(port, 10).await, 10, "a run opens no connections of its own");

    // A scenario with its own conns reopens exactly that many.
    let report = driver
        .run(&scenario("[load]\nconns = 3\nclients = 9\ntotal = 90\n[op.put]\n"))
        .await
        .unwrap();
    assert_eq!(report.params.conns, 3);
    assert_eq!(connections_settle_at(port, 3).await, 3);
}

#[tokio::test]
async fn nothing_listening_fails_within_the_dial_timeout_naming_the_endpoint() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    let err = Driver::builder()
        .endpoints([endpoint.clone()])
        .dial_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3), "took {:?}", t0.elapsed());
    assert!(matches!(err, DriverError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains(&endpoint), "{err}");
    // The socket's own error is the cause, not words copied from it.
    let source = std::error::Error::source(&err).expect("a source");
    let io = source.downcast_ref::<std::io::Error>().expect("an io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused, "{io:?}");
}

#[tokio::test]
async fn duration_bounded_run_with_rate_cap() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        2,
        "[load]\nclients = 4\nduration = \"2s\"\nrate = 100\n[op.put]\nkey-space-size = 100\n\
         [report]\ninterval = \"1s\"\n",
    )
    .await;
    let put = report.op(OpKind::Put);
    assert_eq!(report.interval_s, 1.0, "the interval asked for");
    // 100 per second for 2 seconds, as etcd's --rate would send.
    assert!((180..=202).contains(&put.ok), "{} puts", put.ok);
    assert!((1.9..2.5).contains(&report.duration_s), "{}", report.duration_s);
    assert_eq!(etcd.revision().await - before, put.ok as i64);
    assert!(put.intervals.len() >= 2);
    // Each second near 100: a capped closed loop does not catch up on a stall.
    assert!(
        put.intervals[..2].iter().all(|i| (70..=130).contains(&i.count)),
        "{:?}",
        put.intervals
    );
}

#[tokio::test]
async fn warmup_is_not_measured() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        1,
        "[load]\ntotal = 100\nwarmup = \"300ms\"\n[op.put]\nkey-space-size = 10\n",
    )
    .await;
    let put = report.op(OpKind::Put);
    assert_eq!(put.ok, 100);
    let written = etcd.revision().await - before;
    assert!(written > 100, "warm-up wrote too ({written} in all)");
}

#[tokio::test]
async fn shutdown_stops_the_run_and_keeps_what_was_measured() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let driver = etcd.driver(2).await;
    let progress = driver.progress();
    let t0 = Instant::now();
    // Stopped once requests complete: what was measured by then is kept.
    let report = driver
        .run_until(
            &scenario("[load]\nclients = 8\nduration = \"60s\"\n[op.put]\nkey-space-size = 100\n"),
            async {
                under_way(&progress).await;
            },
        )
        .await
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "stopped after {:?}", t0.elapsed());
    assert!(report.interrupted);
    let put = report.op(OpKind::Put);
    assert!(put.ok > 0);
    // Every request issued is accounted for, and the server saw exactly the successful ones.
    assert_eq!(etcd.revision().await - before, put.ok as i64);
    assert_eq!(put.errors_total, 0);
}

#[tokio::test]
async fn target_leader_connects_to_the_leader_only() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver_builder().target_leader(true).conns(3).connect().await.unwrap();
    let target = driver.target();
    assert_eq!(target.members, 3);
    assert_eq!(target.endpoints.len(), 1, "{:?}", target.endpoints);
    let leader = etcd
        .local()
        .members()
        .iter()
        .find(|m| m.name() == target.leader)
        .expect("leader is a member");
    assert_eq!(target.endpoints[0], leader.client_url());
    let port = port_of(leader.client_url());
    assert_eq!(connections_settle_at(port, 3).await, 3);
    let report =
        driver.run(&scenario("[load]\nclients = 6\ntotal = 300\n[op.put]\n")).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 300);
}

#[tokio::test]
async fn progress_reaches_the_total() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let progress = driver.progress();
    let report =
        driver.run(&scenario("[load]\nclients = 4\ntotal = 500\n[op.put]\n")).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 500);
    assert_eq!(progress.completed(), 500);
}

#[tokio::test]
async fn a_server_that_never_answers_fails_within_the_dial_timeout() {
    // Accepts connections (the kernel completes the handshake) but never speaks.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = listener.local_addr().unwrap().to_string();
    let t0 = Instant::now();
    let err = Driver::builder()
        .endpoints([endpoint.clone()])
        .dial_timeout(Duration::from_secs(1))
        .connect()
        .await
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_millis(2500), "took {:?}", t0.elapsed());
    assert!(err.to_string().contains(&endpoint), "{err}");
    drop(listener);
}

/// The CPUs each of this process's worker threads may run on, from `/proc`.
#[cfg(target_os = "linux")]
fn worker_cpus() -> Vec<String> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("etcdlat-worker") {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"));
        out.push(allowed.unwrap_or("?").trim().to_owned());
    }
    out
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn workers_run_on_the_cpus_they_are_pinned_to() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver_builder().conns(2).workers(2).pin_cpus([0]).connect().await.unwrap();
    // Both workers, round robin over the one CPU given (other tests' workers may be alive in
    // this process too, unpinned: only the pinned ones are counted).
    let pinned = worker_cpus().into_iter().filter(|cpus| cpus == "0").count();
    assert!(pinned >= 2, "{:?}", worker_cpus());
    let report = driver.run(&scenario("[load]\ntotal = 50\n[op.put]\n")).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 50);
    drop(driver);

    let e = etcd.driver_builder().pin_cpus([1000]).connect().await.unwrap_err().to_string();
    assert!(e.contains("pinning worker 0 to CPU 1000"), "{e}");
}
