//! Client steps in one run on one server: each step sends its own total with exactly its
//! number of clients, the steps do not overlap, keys continue from step to step, timed
//! steps end at their time from the run's start, warm-up stays out of them, and a stop ends
//! the steps at once.

use std::time::{Duration, Instant};

use etcdlat_core::OpKind;
use etcdlat_testkit::{Etcd, skip};

use crate::{run_on, scenario, under_way};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_step_sends_its_total_with_its_clients() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    // Four connections over the driver's workers: the steps' clients are spread over them,
    // and the workers meet at each step's end.
    let report = run_on(
        &etcd,
        4,
        "[load]\nclients = 16\nclient-steps = [\n\
         { clients = 1, total = 300 },\n\
         { clients = 4, total = 1200 },\n\
         { clients = 16, total = 4800 },\n]\n\
         [op.put]\nkey-space-size = 1000000\nsequential-keys = true\n",
    )
    .await;
    let figures: Vec<(u32, u64, u64, u64)> =
        report.steps.iter().map(|s| (s.clients, s.active_clients, s.ok, s.errors_total)).collect();
    eprintln!(
        "steps: {}",
        report
            .steps
            .iter()
            .map(|s| format!(
                "{} clients {:.0}/s p99 {} us",
                s.clients,
                s.throughput,
                s.latency.quantile_us(0.99)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Exactly each step's total, every one answered, each sent by exactly its clients.
    assert_eq!(figures, [(1, 1, 300, 0), (4, 4, 1200, 0), (16, 16, 4800, 0)]);
    assert!(report.steps.iter().all(|s| s.latency.count() == s.ok));
    assert_eq!(report.op(OpKind::Put).ok, 6300);
    assert_eq!(report.requests(), 6300);
    // The server saw every request, and no key twice: the steps' keys continue instead of
    // starting over.
    assert_eq!(etcd.revision().await - before, 6300);
    assert_eq!(etcd.key_count().await, 6300);
    // A step starts when every request of the one before is answered: they never overlap.
    for w in report.steps.windows(2) {
        assert!(
            w[1].start_s + 0.001 >= w[0].start_s + w[0].duration_s,
            "a step started before the last answer of the one before: {:?}",
            report.steps.iter().map(|s| (s.start_s, s.duration_s)).collect::<Vec<_>>()
        );
    }
    assert_eq!(report.steps[0].start_s, 0.0);
    let last = &report.steps[2];
    assert!((last.start_s + last.duration_s - report.duration_s).abs() < 0.01);
    // More clients, more throughput: one client waits for each answer, sixteen do not.
    let (one, sixteen) = (report.steps[0].throughput, report.steps[2].throughput);
    assert!(sixteen > 1.5 * one, "1 client {one:.0}/s, 16 clients {sixteen:.0}/s");
    assert_eq!(report.params.total, Some(6300));
    assert_eq!(report.params.clients, 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_steps_end_at_their_time_from_the_start() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        2,
        "[load]\nclients = 8\nclient-steps = [\n\
         { clients = 2, duration = \"700ms\" },\n\
         { clients = 8, duration = \"700ms\" },\n\
         { clients = 1, total = 50 },\n]\n\
         [op.put]\nkey-space-size = 1000000\nsequential-keys = true\n",
    )
    .await;
    let [first, second, third] = &report.steps[..] else { panic!("three steps") };
    // The second step starts 700 ms after the first, on every worker, with no meeting.
    assert_eq!((first.start_s, second.start_s), (0.0, 0.7));
    // And the counted step after it at the end of its time, too.
    assert_eq!(third.start_s, 1.4);
    assert_eq!((first.active_clients, second.active_clients, third.active_clients), (2, 8, 1));
    assert_eq!((third.ok, third.errors_total), (50, 0));
    assert!(first.ok > 0 && second.ok > 0);
    assert_eq!(first.planned_s, Some(0.7));
    // Every request of the run is in exactly one step, and on the server.
    let in_steps: u64 = report.steps.iter().map(|s| s.requests()).sum();
    assert_eq!(in_steps, report.requests());
    assert_eq!(report.errors_total(), 0);
    assert_eq!(etcd.revision().await - before, report.requests() as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_ends_the_steps_and_keeps_what_they_measured() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let driver = etcd.driver(2).await;
    let progress = driver.progress();
    let t0 = Instant::now();
    // Stopped in the first step: the clients of later steps, idle, stop too.
    let report = driver
        .run_until(
            &scenario(
                "[load]\nclients = 4\nclient-steps = [{ clients = 2, duration = \"60s\" }, \
                 { clients = 4, total = 1000000 }]\n[op.put]\nkey-space-size = 100\n",
            ),
            async {
                under_way(&progress).await;
            },
        )
        .await
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "stopped after {:?}", t0.elapsed());
    assert!(report.interrupted);
    let [first, second] = &report.steps[..] else { panic!("two steps") };
    assert!(first.ok > 0);
    assert_eq!(second.requests(), 0, "the second step never began");
    assert_eq!(first.requests(), report.requests());
    assert_eq!(etcd.revision().await - before, report.op(OpKind::Put).ok as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_up_runs_before_the_first_step_and_is_not_in_it() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        2,
        "[load]\nclients = 4\nwarmup = \"300ms\"\nclient-steps = [{ clients = 1, total = 50 }, \
         { clients = 4, total = 200 }]\n[op.put]\nkey-space-size = 1000\n",
    )
    .await;
    let counts: Vec<(u64, u64)> = report.steps.iter().map(|s| (s.active_clients, s.ok)).collect();
    assert_eq!(counts, [(1, 50), (4, 200)]);
    assert_eq!(report.requests(), 250);
    let written = etcd.revision().await - before;
    assert!(written > 250, "warm-up wrote too ({written} in all)");
}
