//! dbtester's figures computed from fixed reports: each with dbtester's meaning (per-second
//! throughput, the members' per-second average for the peaks, a shared disk counted once),
//! and each figure a report cannot know named with why.

use std::time::{Duration, Instant};

use etcdlat_core::{OpKind, OpReport, Recorder, ReportSet, Row};
use etcdlat_render as render;

use crate::fixture::{external_member_report, put_report, range_report};

#[test]
fn throughput_per_second_is_the_busiest_and_idlest_whole_second() {
    let report = range_report();
    let study = report.study();
    let per_second: Vec<u64> = report.op(OpKind::Range).intervals.iter().map(|i| i.count).collect();
    // Two whole seconds in a 2 s run of 1 s intervals.
    assert_eq!(per_second.len(), 2, "{per_second:?}");
    assert_eq!(study.throughput_max_per_s, per_second.iter().max().map(|&n| n as f64));
    assert_eq!(study.throughput_min_per_s, per_second.iter().min().map(|&n| n as f64));
    assert_eq!(study.throughput_window_s, Some(1.0));
    assert_eq!(study.throughput_avg_per_s, Some(750.0));
    assert_eq!(study.total_requests, Some(1_500));
}

#[test]
fn short_intervals_add_up_to_seconds_and_a_partial_second_is_left_out() {
    // 2.5 s of 200 ms intervals: 1,000 requests in the first second, 500 in the second,
    // 400 in the half second after (800/s, which a partial second must not report).
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_millis(200));
    let mut put = |from_ms: u64, to_ms: u64, n: u64| {
        for i in 0..n {
            let done =
                t0 + Duration::from_micros(from_ms * 1000 + i * (to_ms - from_ms) * 1000 / n);
            rec.record_ok(OpKind::Put, done, done, done + Duration::from_micros(100));
        }
    };
    put(0, 1000, 1_000);
    put(1000, 2000, 500);
    put(2000, 2500, 400);
    let (_, record) = rec.finish().remove(0);
    let mut report = put_report();
    report.duration_s = 2.5;
    report.interval_s = 0.2;
    let op =
        OpReport::from_record(&record, Duration::from_millis(2_500), Duration::from_millis(200));
    report.ops = [(OpKind::Put, op)].into();
    let study = report.study();
    assert_eq!(study.throughput_window_s, Some(1.0));
    assert_eq!(
        (study.throughput_max_per_s, study.throughput_min_per_s),
        (Some(1_000.0), Some(500.0))
    );

    // Shorter than a second: no whole window, and why.
    report.duration_s = 0.6;
    let study = report.study();
    assert_eq!(study.throughput_max_per_s, None);
    assert!(study.why_unknown(Row::MaxThroughput).unwrap().contains("shorter than one window"));
}

#[test]
fn server_peaks_are_the_largest_per_second_average_and_a_shared_disk_counts_once() {
    let study = range_report().study();
    // At 2 s the members ran at 40, 60 and 80 % (their peaks at different seconds would
    // add up to more): the average, 60.
    assert_eq!(study.server_cpu_max_percent, Some(60.0));
    // 32, 33 and 34 MiB at 2 s.
    assert_eq!(study.server_memory_max_bytes, Some(33 << 20));
    // Three members on one disk: its 300 + 500 writes once, not three times.
    assert_eq!(study.server_disk_writes_completed, Some(800));
    assert_eq!(study.server_disk_sectors_written, Some(16_000));
    assert_eq!(study.server_disk_sectors_read, Some(16));
    // Each member's data dir at the end: 128 MiB of WAL and 22 MiB of snapshots and db.
    assert_eq!(study.server_disk_space_avg_bytes, Some(150 << 20));
    // gRPC and peer bytes, every member's.
    assert_eq!(study.server_network_received_bytes, Some(3 * 60_000 + 3 * 9_000 + 3));
    assert_eq!(study.client_network_sent_bytes, Some(450_000));
    assert_eq!(
        (study.client_cpu_max_percent, study.client_memory_max_bytes),
        (Some(65.0), Some(48 << 20))
    );
    assert!(study.unknown.is_empty(), "{:?}", study.unknown);
    for row in Row::ALL {
        assert!(study.value(row).is_some(), "{}", row.label());
    }
}

#[test]
fn what_a_run_cannot_know_is_named_with_why() {
    // A member etcdlat did not start: no disk figures, and which member and why.
    let study = external_member_report().study();
    for row in [Row::ServerWritesCompleted, Row::ServerSectorsWritten, Row::ServerDiskSpace] {
        assert_eq!(study.value(row), None, "{}", row.label());
        let why = study.why_unknown(row).unwrap();
        assert!(why.starts_with("m2: etcdlat did not start this member"), "{why}");
        assert_eq!(study.cell(row), "n/a");
    }
    // Its CPU and memory came from /metrics: still known.
    assert!(study.server_cpu_max_percent.is_some());

    // No member scraped, no client measured: the server and client figures are unknown,
    // the load's are known.
    let study = put_report().study();
    assert!(study.why_unknown(Row::ServerMaxCpu).unwrap().contains("not sampled"));
    assert_eq!(study.why_unknown(Row::ClientMaxMemory), Some("the client did not measure itself"));
    assert_eq!(study.client_errors, Some(5));
    assert!(study.latency_p99_9_us.is_some() && study.why_unknown(Row::LatencyP99).is_none());
}

#[test]
fn a_report_read_back_has_the_same_figures() {
    let set = ReportSet::new(vec![range_report(), external_member_report(), put_report()]);
    let back: ReportSet = serde_json::from_str(&render::json(&set)).expect("reads back");
    for (a, b) in set.runs.iter().zip(&back.runs) {
        assert_eq!(a.study(), b.study(), "{}", a.name);
    }
}
