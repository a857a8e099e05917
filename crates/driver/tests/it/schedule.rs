//! Open-loop schedules against a real etcd: latency from the intended start shows a stall
//! that a closed loop hides; rates are kept; lateness is accounted.

use std::time::Duration;

use etcdlat_core::OpKind;
use etcdlat_testkit::{Etcd, skip};

use crate::{scenario, under_way};

#[tokio::test]
async fn a_one_second_stall_shows_in_the_open_loop_percentiles() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let member = etcd.local().members()[0].name().to_owned();
    let driver = etcd.driver(2).await;
    let s = scenario(
        "[load]\nclients = 16\nduration = \"4s\"\nrate = 200\nschedule = \"open\"\n\
         [op.put]\nkey-space-size = 1000\n[report]\ninterval = \"500ms\"\n",
    );
    let progress = driver.progress();
    let run = driver.run(&s);
    // A stall of one second once requests complete (the progress shows them within 100 ms):
    // it begins early in the run, however late the run itself began, and ends long before
    // the run's 4 s do.
    let stall = async {
        assert!(under_way(&progress).await > 0, "the run did not start");
        etcd.pause(&member);
        tokio::time::sleep(Duration::from_secs(1)).await;
        etcd.resume(&member);
    };
    let (report, ()) = tokio::join!(run, stall);
    let report = report.unwrap();
    let put = report.op(OpKind::Put);
    // The schedule does not bend: 200/s for 4 s is 800 requests, stall or not.
    assert_eq!(put.ok + put.errors_total, 800, "{:?}", put.errors);
    let p99 = put.latency.quantile(0.99);
    assert!(p99 >= Duration::from_millis(500), "corrected p99 {p99:?} shows the stall");
    assert!(
        put.service_time.quantile(0.5) < Duration::from_millis(100),
        "most requests were served quickly once sent"
    );
    // Some interval during the stall completes (almost) nothing, then the backlog lands.
    let counts: Vec<u64> = put.intervals.iter().map(|i| i.count).collect();
    assert!(counts.iter().any(|&c| c <= 10), "a quiet interval in {counts:?}");
    assert!(counts.iter().any(|&c| c >= 150), "a catch-up interval in {counts:?}");
    let worst = put.intervals.iter().map(|i| i.max_us).max().unwrap();
    assert!(worst >= 900_000, "the stall is visible in the intervals (max {worst} us)");
    let pacing = report.pacing.as_ref().expect("an open-loop run reports its pacing");
    assert_eq!(pacing.schedule, "open");
    assert!(pacing.late > 100, "the requests due during the stall started late: {}", pacing.late);
    assert!(pacing.lateness.quantile(0.99) >= Duration::from_millis(300));
}

#[tokio::test]
async fn open_loop_keeps_its_rate_within_one_percent() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s = scenario(
        "[load]\nclients = 32\nduration = \"3s\"\nrate = 500\nschedule = \"open\"\n[op.put]\nkey-space-size = 100\n",
    );
    let report = driver.run(&s).await.unwrap();
    let put = report.op(OpKind::Put);
    assert_eq!(put.errors_total, 0);
    assert_eq!(put.ok, 1500);
    let pacing = report.pacing.unwrap();
    assert!(
        (pacing.achieved_rate - 500.0).abs() <= 5.0,
        "achieved {} of 500/s",
        pacing.achieved_rate
    );
    assert!(pacing.verdict.is_none(), "{:?}", pacing.verdict);
    assert!(pacing.timer_lateness.count() > 0, "sleeping until slots is measured");
}

#[tokio::test]
async fn poisson_arrivals_and_stages() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let poisson = scenario(
        "[load]\nclients = 16\nduration = \"2s\"\nrate = 300\nschedule = \"open\"\narrivals = \"poisson\"\n\
         [op.put]\nkey-space-size = 100\nseed = 3\n",
    );
    let report = driver.run(&poisson).await.unwrap();
    let n = report.op(OpKind::Put).ok;
    // 600 expected; a Poisson count has a standard deviation of about sqrt(600) = 24.
    assert!((500..=700).contains(&n), "{n} arrivals");

    let staged = scenario(
        "[load]\nclients = 16\nschedule = \"open\"\n\
         stages = [{ rate = 100, duration = \"1s\" }, { rate = 300, duration = \"1s\", ramp = true }]\n\
         [op.put]\nkey-space-size = 100\n[report]\ninterval = \"500ms\"\n",
    );
    let report = driver.run(&staged).await.unwrap();
    let put = report.op(OpKind::Put);
    // 100 in the first second, then a ramp from 100/s to 300/s: 200 more.
    assert!((290..=310).contains(&put.ok), "{} requests", put.ok);
    let counts: Vec<u64> = put.intervals.iter().map(|i| i.count).collect();
    assert!(counts.len() >= 4, "{counts:?}");
    assert!(counts[3] > counts[0] * 2, "the ramp shows in the intervals: {counts:?}");
}
