//! Watch workloads against real etcd: every expected event arrives exactly once, on every
//! watcher; event latency is measured from the put; watch-get's gets run while watchers
//! catch up; a stop ends the run with what was measured.

use std::time::{Duration, Instant};

use etcdlat_core::{OpKind, Report, WatchAccounting};
use etcdlat_testkit::{Etcd, eventually, skip};

use crate::{START_WITHIN, run_on, scenario};

fn accounting(report: &Report) -> WatchAccounting {
    report.watch.clone().expect("a watch run reports its accounting")
}

#[tokio::test]
async fn watch_delivers_every_put_to_every_watcher_of_its_key_once() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    // Two connections: streams and putters on both worker threads.
    let driver = etcd.driver(2).await;
    let before = etcd.revision().await;
    let t0 = Instant::now();
    let report = driver
        .run(&scenario(
            "[load]\nclients = 4\n[op.watch]\nstreams = 4\nwatch-per-stream = 25\n\
             watched-key-total = 10\nkey-space-size = 10\nsequential-keys = true\nput-total = 200\n",
        ))
        .await
        .unwrap();
    let elapsed = t0.elapsed();

    let w = accounting(&report);
    assert_eq!((w.streams, w.watchers, w.puts), (4, 100, 200), "{w:?}");
    // 10 distinct keys, 10 watchers each: every put makes 10 events.
    assert_eq!(w.expected, 200 * 10, "{w:?}");
    assert_eq!(w.received, 200 * 10, "{w:?}");
    assert_eq!((w.missing, w.duplicate, w.out_of_order), (0, 0, 0), "{w:?}");
    // Every put answered, and every event one of theirs.
    assert_eq!((w.uncertain_puts, w.uncertain_events, w.unexplained), (0, 0, 0), "{w:?}");
    assert!(report.failures().is_empty(), "{:?}", report.failures());
    assert!(!report.interrupted);

    assert_eq!(report.op(OpKind::WatchCreate).ok, 100);
    assert_eq!(report.op(OpKind::WatchCreate).errors_total, 0);
    let events = &report.op(OpKind::WatchEvent);
    assert_eq!(events.latency.count(), 2000);
    assert_eq!(events.ok, 2000);
    // Measured from the put's send: never less than the server takes to answer at all.
    assert!(events.latency.min_us() >= 10, "min {} us", events.latency.min_us());
    assert_eq!(report.op(OpKind::Put).ok, 200);
    assert_eq!(report.op(OpKind::Put).errors_total, 0);
    assert_eq!(etcd.revision().await - before, 200, "exactly the puts were written");
    assert!(report.duration_s > 0.0 && report.duration_s < elapsed.as_secs_f64());
}

#[tokio::test]
async fn watch_keeps_the_put_rate() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        1,
        "[load]\nclients = 2\n[op.watch]\nstreams = 2\nwatch-per-stream = 3\nput-rate = 50\nput-total = 25\n",
    )
    .await;
    let w = accounting(&report);
    // One key (key-space-size 1): all 6 watchers see every put.
    assert_eq!((w.expected, w.received, w.missing), (25 * 6, 25 * 6, 0), "{w:?}");
    assert_eq!(etcd.revision().await - before, 25);
    // 25 puts at 50/s: the last one is sent 0.48 s after the first.
    assert!(report.duration_s >= 0.45, "took {} s", report.duration_s);
    assert!(report.duration_s < 3.0, "took {} s", report.duration_s);
}

#[tokio::test]
async fn watch_latency_measures_from_send_and_from_acknowledgement() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        2,
        "[op.watch-latency]\nstreams = 3\nwatchers-per-stream = 4\nput-rate = 200\nput-total = 100\nprevkv = true\n",
    )
    .await;
    let w = accounting(&report);
    assert_eq!((w.streams, w.watchers, w.puts), (3, 12, 100), "{w:?}");
    assert_eq!((w.expected, w.received), (1200, 1200), "{w:?}");
    assert_eq!((w.missing, w.duplicate, w.out_of_order), (0, 0, 0), "{w:?}");
    assert_eq!((w.uncertain_puts, w.uncertain_events, w.unexplained), (0, 0, 0), "{w:?}");
    assert_eq!(etcd.revision().await - before, 100);

    let sent = &report.op(OpKind::WatchEvent).latency;
    assert_eq!(sent.count(), 1200);
    // Every event is either measured from its acknowledgement or counted as arriving first.
    let acked = report.try_op(OpKind::WatchEventAcked).map_or(0, |o| o.latency.count());
    assert_eq!(acked + w.before_ack, 1200, "{w:?}");
    assert!(sent.min_us() > 0);
    if acked > 0 {
        let acked = &report.op(OpKind::WatchEventAcked).latency;
        assert!(acked.min_us() > 0);
        assert!(
            sent.mean_us() >= acked.mean_us(),
            "from send {} us, from ack {} us",
            sent.mean_us(),
            acked.mean_us()
        );
        assert!(sent.quantile_us(0.5) >= acked.quantile_us(0.5));
    }
    assert_eq!(report.op(OpKind::Put).ok, 100);
    assert_eq!(report.op(OpKind::WatchCreate).ok, 12);
}

#[tokio::test]
async fn watch_get_gets_while_unsynced_watchers_catch_up() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report =
        run_on(&etcd, 2, "[op.watch-get]\nwatchers = 200\nstreams = 4\nevents = 8\n").await;
    let w = accounting(&report);
    assert_eq!((w.streams, w.watchers, w.puts), (4, 200, 8), "{w:?}");
    assert_eq!((w.expected, w.received), (1600, 1600), "{w:?}");
    assert_eq!((w.missing, w.duplicate, w.out_of_order), (0, 0, 0), "{w:?}");
    assert!(report.op(OpKind::Range).ok > 0);
    assert_eq!(report.op(OpKind::Range).errors_total, 0);
    assert_eq!(report.op(OpKind::WatchCreate).ok, 200);
    assert_eq!(etcd.revision().await - before, 8, "the gets and watches write nothing");
}

#[tokio::test]
async fn a_stopped_watch_run_reports_what_it_measured() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(1).await;
    let before = etcd.revision().await;
    let t0 = Instant::now();
    // Stopped once the server holds a few of the puts (a watch run publishes no progress): the
    // watchers are in place and events are flowing.
    let report = driver
        .run_until(
            &scenario(
                "[op.watch]\nstreams = 2\nwatch-per-stream = 5\nput-rate = 20\nput-total = 1000\n",
            ),
            async {
                eventually(START_WITHIN, async || etcd.revision().await, |&r| r >= before + 3)
                    .await;
            },
        )
        .await
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(4), "took {:?}", t0.elapsed());
    assert!(report.interrupted);
    let w = accounting(&report);
    assert!(w.puts > 0 && w.puts < 1000, "{w:?}");
    assert_eq!(w.expected, w.puts * 10, "{w:?}");
    assert_eq!(report.op(OpKind::Put).ok, w.puts);
    assert!(w.received <= w.expected, "{w:?}");
    assert_eq!(w.duplicate + w.out_of_order, 0, "{w:?}");
    // Puts still in flight at the stop are of unknown outcome; every event is explained.
    assert_eq!(w.uncertain_events, w.uncertain_puts * 10, "{w:?}");
    assert_eq!(w.unexplained, 0, "{w:?}");
}
