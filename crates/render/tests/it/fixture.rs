//! Reports built from fixed, deterministic measurements, shared by the renderer and JSON
//! contract tests. Only offsets from one `Instant` are used, so every histogram, interval
//! and figure is the same on every run and machine.

use std::time::{Duration, Instant};

use etcdlat_core::audit::{AuditReport, MemberStaleness, Staleness, Violation};
use etcdlat_core::fault::{FaultAction, FaultReport, Window};
use etcdlat_core::invariant::InvariantReport;
use etcdlat_core::metrics::{
    DiskDevice, NotAvailable, ResourceSample, ResourceSeries, metric, source,
};
use etcdlat_core::recorder::kubernetes::WatchRecord;
use etcdlat_core::report::kubernetes::{
    KubernetesReport, ObjectSizeReport, SteadyStateReport, VerdictScope,
};
use etcdlat_core::workload::kubernetes::{RequestKind, Verb};
use etcdlat_core::{
    ClientStep, ClientUsage, Consistency, Distribution, EmulatorUsage, ErrorCode, HashKvCheck,
    LeaderChange, LinkReport, MemberMetrics, MemberReport, NetworkReport, OpKind, OpReport,
    Operation, PacingReport, Params, PutOp, RangeOp, Recorder, Report, Scenario, ShardInfo,
    StepReport, TargetInfo, Targeting, WatchAccounting,
};

/// When measurement started in every fixture.
pub const STARTED_AT: &str = "2026-11-21T21:00:00.123Z";

/// Records `n` successful puts or ranges, one every `every_us`, with latencies skewed
/// towards the low end and a long tail, a queueing delay before the send, and one slow outlier
/// in 500.
fn record(rec: &mut Recorder, kind: OpKind, t0: Instant, n: u64, every_us: u64, base_us: u64) {
    for i in 0..n {
        let done = t0 + Duration::from_micros(1_000 + i * every_us);
        let spread = (i * 37) % 100;
        let latency_us =
            if i % 500 == 499 { base_us + 6_000 } else { base_us + spread.pow(3) / 400 };
        let queued_us = (i % 10) * 20;
        let intended = done - Duration::from_micros(latency_us);
        let sent = intended + Duration::from_micros(queued_us.min(latency_us - 1));
        rec.record_ok(kind, intended, sent, done);
        if kind == OpKind::Put {
            // One key of a 256-byte value per put, as the driver records it.
            rec.record_payload(kind, 1, 256);
        }
    }
}

fn op_report(rec: Recorder, kind: OpKind, duration: Duration) -> OpReport {
    let interval = rec.interval();
    let (_, record) =
        rec.finish().into_iter().find(|(k, _)| *k == kind).expect("the fixture recorded this kind");
    OpReport::from_record(&record, duration, interval)
}

/// The parameters the driver records for a run of `scenario` (`op`) on `workers` workers with
/// `seed`: its connections (1 unless it says), clients and total; the rest of [`Params`]
/// as its default, for each report to set what its workload adds.
fn params(scenario: &Scenario, op: &str, workers: u32, seed: u64) -> Params {
    let mut p = Params::default();
    p.op = op.to_owned();
    p.conns = scenario.load.conns.unwrap_or(1);
    p.clients = scenario.load.clients;
    p.workers = workers;
    p.total = scenario.load.total;
    p.seed = seed;
    p
}

/// An etcd 3.5.17 cluster (built with go1.23.4) of `members`, led by `leader`, with the load on `endpoints`; the
/// rest of [`TargetInfo`] as its default (not local, targeted by the endpoints as given).
fn target(endpoints: Vec<String>, members: u32, leader: &str, cluster_id: &str) -> TargetInfo {
    let mut t = TargetInfo::default();
    t.endpoints = endpoints;
    t.etcd_version = "3.5.17".to_owned();
    t.go_version = "go1.23.4".to_owned();
    t.members = members;
    t.leader = leader.to_owned();
    t.cluster_id = cluster_id.to_owned();
    t
}

/// A 3 s put run: 2,000 puts from 10 clients against one endpoint, with 3 `InvalidArgument`
/// errors (with the server's message) and 2 `Unavailable` errors (without one).
pub fn put_report() -> Report {
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    record(&mut rec, OpKind::Put, t0, 2_000, 1_490, 400);
    rec.record_errors(OpKind::Put, ErrorCode::InvalidArgument, 3, t0 + Duration::from_millis(100));
    rec.record_error_message(
        OpKind::Put,
        ErrorCode::InvalidArgument,
        "etcdserver: request is too large",
    );
    rec.record_error(OpKind::Put, ErrorCode::Unavailable, t0 + Duration::from_millis(2_200));
    rec.record_error(OpKind::Put, ErrorCode::Unavailable, t0 + Duration::from_millis(2_300));
    let duration = Duration::from_secs(3);

    let put = PutOp { val_size: 256, key_space_size: 10_000, seed: Some(42), ..PutOp::default() };
    let mut scenario = Scenario::new(Operation::Put(put));
    scenario.name = "put-256b".to_owned();
    scenario.cluster.endpoints = vec!["127.0.0.1:2379".to_owned()];
    scenario.load.clients = 10;
    scenario.load.total = Some(2_005);

    let mut params = params(&scenario, "put", 1, 42);
    params.key_size = Some(8);
    params.val_size = Some(256);
    params.key_space_size = Some(10_000);
    params.sequential_keys = Some(false);
    let target = target(scenario.cluster.endpoints.clone(), 1, "default", "cdf818194e3a8c32");
    let mut report = Report::new(scenario.clone(), params, target);
    report.started_at = STARTED_AT.to_owned();
    report.duration_s = duration.as_secs_f64();
    report.interval_s = 1.0;
    report.ops = [(OpKind::Put, op_report(rec, OpKind::Put, duration))].into();
    report.pacing = Some(pacing());
    report
}

/// A 2 s serializable range run against a throwaway 3-member cluster: 1,500 ranges, no
/// errors.
pub fn range_report() -> Report {
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Range], t0, Duration::from_secs(1));
    record(&mut rec, OpKind::Range, t0, 1_500, 1_300, 150);
    let duration = Duration::from_secs(2);

    let range = RangeOp {
        key: "foo".to_owned(),
        consistency: Consistency::Serializable,
        ..RangeOp::default()
    };
    let mut scenario = Scenario::new(Operation::Range(range));
    scenario.name = "range-s".to_owned();
    scenario.cluster.members = Some(3);
    scenario.load.clients = 100;
    scenario.load.conns = Some(10);
    scenario.load.total = Some(1_500);

    let mut params = params(&scenario, "range", 2, 7);
    params.consistency = Some("s".to_owned());
    let endpoints = ["127.0.0.1:40001", "127.0.0.1:40003", "127.0.0.1:40005"];
    let mut target = target(endpoints.map(str::to_owned).into(), 3, "m1", "8e9e05c52164694d");
    target.local = true;
    target.targeting = Targeting::All;
    target.targeted = vec!["m0".to_owned(), "m1".to_owned(), "m2".to_owned()];
    target.source_addresses = vec!["127.0.0.1".to_owned(), "127.0.0.2".to_owned()];
    let mut report = Report::new(scenario.clone(), params, target);
    report.started_at = STARTED_AT.to_owned();
    report.scale = Some(0.1);
    report.duration_s = duration.as_secs_f64();
    report.interval_s = 1.0;
    report.ops = [(OpKind::Range, op_report(rec, OpKind::Range, duration))].into();
    report.members = served_by();
    report.leader_changes =
        vec![LeaderChange { t_s: 1.25, from: "m0".to_owned(), to: "m1".to_owned() }];
    report.faults = vec![paused_leader()];
    report.server = vec![member("m0", 40001, 0), member("m1", 40003, 1), member("m2", 40005, 2)];
    report.client = Some(ClientUsage {
        user_cpu_s: 1.25,
        system_cpu_s: 0.5,
        max_rss_bytes: 48 << 20,
        worker_cpu_s: Some(1.5),
        busy: Some(etcdlat_core::ClientBusy {
            process: 0.45,
            worker_max: Some(0.62),
            worker_peak: Some(0.71),
        }),
        sent_bytes: Some(450_000),
        received_bytes: Some(1_020_000),
        cpu_max_percent: Some(65.0),
        voluntary_ctxt_switches: Some(700),
        nonvoluntary_ctxt_switches: Some(11),
        resources: client_series(),
    });
    report
}

/// [`range_report`]'s fault step: the leader paused for a second, with the figures
/// [`etcdlat_core::fault::analyze`] would give.
fn paused_leader() -> FaultReport {
    let window = |from_s: f64, to_s: f64, ok: u64, errors: u64, p99_us: u64| Window {
        from_s,
        to_s,
        ok,
        errors,
        throughput: if to_s > from_s { ok as f64 / (to_s - from_s) } else { 0.0 },
        p50_us: p99_us / 4,
        p99_us,
        max_us: p99_us * 2,
    };
    FaultReport {
        step: 0,
        action: FaultAction::Pause,
        member: Some("m0".to_owned()),
        what: "paused m0 (the leader) for 1s".to_owned(),
        at_s: 1.0,
        started_s: 1.0004,
        finished_s: 1.0005,
        resumed_s: Some(2.0011),
        error: None,
        last_success_before_s: Some(0.999),
        first_success_after_s: Some(2.25),
        unavailable_s: 1.251,
        first_write_after_s: None,
        before: window(0.0, 1.0, 700, 0, 1_200),
        during: window(1.0, 2.0, 100, 12, 1_250_000),
        after: window(2.0, 2.0, 0, 0, 0),
    }
}

/// [`range_report`]'s requests by the member that answered them: 1,300 over three members.
fn served_by() -> Vec<MemberReport> {
    [("m0", "a0", 400, 900), ("m1", "a1", 500, 1_100), ("m2", "a2", 400, 1_300)]
        .into_iter()
        .map(|(name, id, ok, base_us)| {
            let mut h = etcdlat_core::recorder::new_histogram();
            for i in 0..ok {
                h.record(base_us + i).unwrap();
            }
            MemberReport {
                name: name.to_owned(),
                id: id.to_owned(),
                ok,
                throughput: ok as f64 / 2.0,
                latency: Distribution::new(h),
            }
        })
        .collect()
}

/// [`put_report`]'s schedule: an open loop at 1,000/s that fell behind, with a verdict.
fn pacing() -> PacingReport {
    let mut lateness = etcdlat_core::recorder::new_histogram();
    let mut timer = etcdlat_core::recorder::new_histogram();
    for i in 0..2_005u64 {
        lateness.record(if i < 1_900 { 50 + i % 40 } else { 20_000 + i }).unwrap();
        timer.record(20 + i % 30).unwrap();
    }
    PacingReport {
        schedule: "open".to_owned(),
        arrivals: "constant".to_owned(),
        target_rate: 1_000.0,
        achieved_rate: 802.0,
        paced: 2_005,
        late: 105,
        lateness: Distribution::new(lateness),
        timer_lateness: Distribution::new(timer),
        verdict: Some(
            "802.0/s achieved of 1000.0/s asked: every logical client was busy".to_owned(),
        ),
    }
}

/// The server metrics of member `name` of [`range_report`]'s cluster: the `i`th member
/// (`m1`, the leader, committed the most; only two members exported the database size: the
/// third names it as not exported).
fn member(name: &str, port: u16, i: u64) -> MemberMetrics {
    MemberMetrics {
        name: name.to_owned(),
        url: format!("http://127.0.0.1:{port}/metrics"),
        samples: 4,
        failed_samples: 0,
        last_error: None,
        rss_avg_bytes: Some((30 + i) << 20),
        rss_max_bytes: Some((32 + 2 * i) << 20),
        cpu_s: Some(0.25 * (i + 1) as f64),
        db_size_bytes: (i < 2).then_some(20 << 20),
        quota_backend_bytes: Some(2 << 30),
        wal_fsync_p50_us: Some(600 + 10 * i),
        wal_fsync_p99_us: Some(1_900 + 100 * i),
        backend_commit_p50_us: Some(1_200),
        backend_commit_p99_us: Some(7_500 + 250 * i),
        proposals_committed: Some(if i == 1 { 12 } else { 11 }),
        proposals_failed: Some(0),
        proposals_pending_max: Some(i),
        leader_changes: Some(0),
        slow_applies: Some(0),
        peer_sent_bytes: Some(10_000 + i),
        peer_received_bytes: Some(9_000 + i),
        grpc_sent_bytes: Some(450_000),
        grpc_received_bytes: Some(60_000),
        not_exported: if i < 2 { vec![] } else { vec![metric::DB_SIZE.to_owned()] },
        resources: member_series(i),
    }
}

/// The resource series of the `i`th member of [`range_report`]'s cluster, which etcdlat
/// started: a sample a second, every source read, the three data dirs on one disk (so its
/// machine-wide figures are the same in each).
fn member_series(i: u64) -> ResourceSeries {
    let second = |t: u64| {
        let i_if_last = if t == 2 { i } else { 0 };
        ResourceSample {
            t_s: t as f64,
            span_s: 1.0,
            cpu_percent: Some((10 * t + 10 * i) as f64 * 2.0),
            cpu_max_percent: Some((10 * t + 10 * i) as f64 * 2.0),
            rss_bytes: Some((30 + i + t) << 20),
            db_size_bytes: (i < 2).then_some(20 << 20),
            grpc_sent_bytes: Some(225_000),
            grpc_received_bytes: Some(30_000),
            peer_sent_bytes: Some(5_000 + i_if_last),
            peer_received_bytes: Some(4_500 + i_if_last),
            read_bytes: Some(0),
            write_bytes: Some((t + i) << 20),
            read_syscalls: Some(10),
            write_syscalls: Some(400 * t),
            read_chars: Some(40_000),
            write_chars: Some(t * 1_000_000),
            voluntary_ctxt_switches: Some(1_000 + 100 * i + 200 * t),
            nonvoluntary_ctxt_switches: Some(10 * t + i),
            data_dir_bytes: Some((128 << 20) + ((20 + t) << 20)),
            wal_bytes: Some(128 << 20),
            snap_bytes: Some((20 + t) << 20),
            disk_reads_completed: Some(2 * (t - 1)),
            disk_sectors_read: Some(16 * (t - 1)),
            disk_writes_completed: Some(300 + 200 * (t - 1)),
            disk_sectors_written: Some(6_000 + 4_000 * (t - 1)),
            ..ResourceSample::default()
        }
    };
    // Warm-up, before measurement, busier than any second of it: in no figure.
    let warmup = ResourceSample {
        t_s: 0.0,
        span_s: 1.0,
        cpu_percent: Some(900.0),
        cpu_max_percent: Some(900.0),
        rss_bytes: Some(900 << 20),
        disk_writes_completed: Some(90_000),
        ..ResourceSample::default()
    };
    ResourceSeries {
        period_s: 1.0,
        samples: vec![second(1), second(2)],
        outside: vec![warmup],
        not_available: Vec::new(),
        disk: Some(DiskDevice { name: "vda".to_owned(), device: "254:0".to_owned() }),
    }
}

/// Sets every figure `sample` lacks (to 7).
fn every_figure(sample: &mut ResourceSample) {
    let ResourceSample {
        t_s: _,
        span_s: _,
        cpu_percent,
        cpu_max_percent,
        rss_bytes,
        down_s,
        db_size_bytes,
        grpc_sent_bytes,
        grpc_received_bytes,
        peer_sent_bytes,
        peer_received_bytes,
        sent_bytes,
        received_bytes,
        read_bytes,
        write_bytes,
        read_syscalls,
        write_syscalls,
        read_chars,
        write_chars,
        voluntary_ctxt_switches,
        nonvoluntary_ctxt_switches,
        data_dir_bytes,
        wal_bytes,
        snap_bytes,
        disk_reads_completed,
        disk_sectors_read,
        disk_writes_completed,
        disk_sectors_written,
        leader,
        wal_fsync_p99_us,
        backend_commit_p99_us,
        apply_p99_us,
        peer_rtt_p99_us,
        proposals_committed,
        leader_changes,
    } = sample;
    for figure in [cpu_percent, cpu_max_percent, down_s] {
        figure.get_or_insert(7.0);
    }
    leader.get_or_insert(true);
    for figure in [
        rss_bytes,
        db_size_bytes,
        grpc_sent_bytes,
        grpc_received_bytes,
        peer_sent_bytes,
        peer_received_bytes,
        sent_bytes,
        received_bytes,
        read_bytes,
        write_bytes,
        read_syscalls,
        write_syscalls,
        read_chars,
        write_chars,
        voluntary_ctxt_switches,
        nonvoluntary_ctxt_switches,
        data_dir_bytes,
        wal_bytes,
        snap_bytes,
        disk_reads_completed,
        disk_sectors_read,
        disk_writes_completed,
        disk_sectors_written,
        wal_fsync_p99_us,
        backend_commit_p99_us,
        apply_p99_us,
        peer_rtt_p99_us,
        proposals_committed,
        leader_changes,
    ] {
        figure.get_or_insert(7);
    }
}

/// [`range_report`]'s client: a sample a second of its CPU, memory, context switches and
/// the load connections' bytes.
fn client_series() -> ResourceSeries {
    let second = |t: u64| ResourceSample {
        t_s: t as f64,
        span_s: 1.0,
        cpu_percent: Some(45.0 + 10.0 * t as f64),
        cpu_max_percent: Some(45.0 + 10.0 * t as f64),
        rss_bytes: Some((32 + 8 * t) << 20),
        sent_bytes: Some(150_000 + 50_000 * t),
        received_bytes: Some(490_000 + 20_000 * t),
        voluntary_ctxt_switches: Some(200 + 100 * t),
        nonvoluntary_ctxt_switches: Some(4 + t),
        ..ResourceSample::default()
    };
    ResourceSeries {
        period_s: 1.0,
        samples: vec![second(1), second(2)],
        ..ResourceSeries::default()
    }
}

/// [`range_report`] with its third member one etcdlat did not start: its resources are what
/// its `/metrics` gave (CPU, memory, traffic), its process, data dir and disk named as not
/// available; so dbtester's disk figures are unknown, with why.
pub fn external_member_report() -> Report {
    let mut report = range_report();
    let external = &mut report.server[2].resources;
    for s in &mut external.samples {
        *s = ResourceSample {
            t_s: s.t_s,
            span_s: s.span_s,
            cpu_percent: s.cpu_percent,
            cpu_max_percent: s.cpu_max_percent,
            rss_bytes: s.rss_bytes,
            db_size_bytes: s.db_size_bytes,
            grpc_sent_bytes: s.grpc_sent_bytes,
            grpc_received_bytes: s.grpc_received_bytes,
            peer_sent_bytes: s.peer_sent_bytes,
            peer_received_bytes: s.peer_received_bytes,
            ..ResourceSample::default()
        };
    }
    external.disk = None;
    let why = "etcdlat did not start this member: its process and data dir are not known here";
    external.not_available = [source::PROCESS, source::DATA_DIR, source::DISK]
        .into_iter()
        .map(|s| NotAvailable { source: s.to_owned(), why: why.to_owned() })
        .collect();
    report
}

/// An interrupted run with both kinds: the puts of [`put_report`], and ranges that all
/// failed with `DeadlineExceeded`.
pub fn mixed_interrupted_report() -> Report {
    let mut report = put_report();
    report.name = "mixed".to_owned();
    report.interrupted = true;
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Range], t0, Duration::from_secs(1));
    rec.record_errors(
        OpKind::Range,
        ErrorCode::DeadlineExceeded,
        4,
        t0 + Duration::from_millis(2_900),
    );
    report.ops.insert(OpKind::Range, op_report(rec, OpKind::Range, Duration::from_secs(3)));
    report
}

/// A put run in three client steps of 1, 4 and 16 clients (200, 800 and 1,600 puts), each
/// faster and slower to answer than the one before; the last step has one `Unavailable`
/// error.
pub fn steps_report() -> Report {
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_millis(100)).with_steps(3);
    // (clients, puts, one completion every, base latency), us.
    let shape: [(u32, u64, u64, u64); 3] =
        [(1, 200, 1_000, 900), (4, 800, 400, 1_500), (16, 1_600, 150, 2_400)];
    let mut start = t0;
    for (k, &(clients, n, every_us, base_us)) in shape.iter().enumerate() {
        rec.start_step(k, start);
        for _ in 0..clients {
            rec.record_step_client(k);
        }
        for i in 0..n {
            let done = start + Duration::from_micros((i + 1) * every_us);
            let intended = done - Duration::from_micros(base_us + (i * 37) % 100 * 10);
            rec.record_ok(OpKind::Put, intended, intended, done);
            rec.record_payload(OpKind::Put, 1, 256);
            rec.record_step_ok(k, intended, done);
        }
        // The next step starts once every worker has had its last answer.
        start += Duration::from_micros(n * every_us + 300);
    }
    let last = start - Duration::from_micros(300);
    rec.record_error(OpKind::Put, ErrorCode::Unavailable, last);
    rec.record_step_errors(2, 1, last);
    let duration = last - t0;

    let mut report = put_report();
    report.name = "client-steps".to_owned();
    report.scenario.name = report.name.clone();
    report.duration_s = duration.as_secs_f64();
    report.interval_s = 0.1;
    report.pacing = None;
    let steps: Vec<ClientStep> = shape
        .iter()
        .map(|&(clients, n, ..)| ClientStep {
            clients,
            total: Some(n + u64::from(clients == 16)),
            duration: None,
        })
        .collect();
    report.scenario.load.clients = 16;
    report.scenario.load.total = None;
    report.scenario.load.client_steps.clone_from(&steps);
    report.params.clients = 16;
    report.params.total = Some(2_601);
    report.steps = steps
        .iter()
        .zip(rec.steps())
        .map(|(step, record)| StepReport::from_record(step, record, t0))
        .collect();
    report.ops = [(OpKind::Put, op_report(rec, OpKind::Put, duration))].into();
    report
}

/// A report with every part the JSON leaves out when empty present, so that its output holds
/// every field of the contract: [`mixed_interrupted_report`] (error messages, now for the
/// failed ranges too; pacing with a verdict) with an `all` row, a HashKV check, a watch
/// accounting with uncertain puts, two shards, a place in a matrix, [`steps_report`]'s steps,
/// and [`range_report`]'s members, leader change, server metrics (a scrape of each member
/// failed), client usage and fault step (which could not resume its member).
pub fn full_report() -> Report {
    let mut report = mixed_interrupted_report();
    let range = range_report();
    let failed = report.ops.get_mut(&OpKind::Range).expect("the mixed run sent ranges");
    failed
        .error_messages
        .insert("DeadlineExceeded".to_owned(), "context deadline exceeded".to_owned());
    // Two more requests of each kind abandoned at the stop, out 2.1 s and 2.4 s by then.
    for (&kind, op) in &mut report.ops {
        let t0 = Instant::now();
        let mut rec = Recorder::new(&[kind], t0, Duration::from_secs(1));
        for out_ms in [2_100, 2_400] {
            rec.record_abandoned(kind, t0, t0 + Duration::from_millis(out_ms));
        }
        op.errors.insert("Cancelled".to_owned(), 2);
        op.errors_total += 2;
        op.error_messages.insert(
            "Cancelled".to_owned(),
            "abandoned: no answer within the grace after the run ended or was stopped".to_owned(),
        );
        op.abandoned = op_report(rec, kind, Duration::from_secs(3)).abandoned;
    }
    report.all = Some(report.op(OpKind::Put).clone());
    report.hashkv = Some(HashKvCheck {
        revision: 2_006,
        compact_revision: 1,
        members: [("m0".to_owned(), 4_215_301_823), ("m1".to_owned(), 4_215_301_823)].into(),
        consistent: true,
    });
    report.members = range.members;
    report.leader_changes = range.leader_changes;
    report.alarms =
        vec![etcdlat_core::AlarmReport { member: "m1".to_owned(), alarm: "NOSPACE".to_owned() }];
    report.faults = range.faults;
    report.faults[0].error = Some("m0 did not resume: no such process".to_owned());
    report.server = range.server;
    for member in &mut report.server {
        member.failed_samples = 1;
        member.last_error = Some("scrape timed out after 1s".to_owned());
        member.db_size_bytes = None;
        member.not_exported = vec![metric::DB_SIZE.to_owned()];
    }
    report.client = range.client;
    // Every figure in every sample and a source each series could not read, whether or not
    // one series would have them all, so that the output holds every field a series can have.
    let series = report.server.iter_mut().map(|m| &mut m.resources);
    for resources in series.chain(report.client.as_mut().map(|c| &mut c.resources)) {
        if resources.outside.is_empty() {
            resources.outside =
                vec![ResourceSample { t_s: 0.0, span_s: 1.0, ..Default::default() }];
        }
        for sample in resources.samples.iter_mut().chain(&mut resources.outside) {
            every_figure(sample);
        }
        resources.not_available = vec![NotAvailable {
            source: source::PROCESS.to_owned(),
            why: "reading /proc/4242/io: Permission denied (os error 13)".to_owned(),
        }];
        resources.disk = Some(DiskDevice { name: "vda".to_owned(), device: "254:0".to_owned() });
    }
    report.scale = range.scale;
    report.target.targeting = range.target.targeting;
    report.target.targeted = range.target.targeted;
    report.target.source_addresses = range.target.source_addresses;
    let mut machine = etcdlat_core::Machine::default();
    machine.cpus = 4;
    machine.memory_bytes = Some(16_000_000_000);
    machine.memory_available_bytes = Some(9_200_000_000);
    machine.load_average = Some([0.52, 0.4, 0.33]);
    machine.kernel = "Linux 6.1.0-18-amd64".to_owned();
    machine.client_cpus = vec![0, 1];
    machine.emulator_cpus = vec![3];
    machine.member_cpus = vec![0, 1, 2, 3];
    machine.shared_cpus =
        Some(vec!["client and members".to_owned(), "emulator and members".to_owned()]);
    report.target.machine = Some(machine);
    let network: etcdlat_core::Network =
        toml::from_str("zones = [\"a\", \"b\"]\nzone-latency = \"2ms\"\nbandwidth = \"100MB/s\"\n")
            .expect("a valid [network] table");
    report.target.network = Some(NetworkReport {
        summary: network.summary(),
        config: network,
        links: vec![
            LinkReport {
                from: "client".to_owned(),
                to: "m0".to_owned(),
                latency_us: 0,
                jitter_us: 0,
                bandwidth_bytes_per_s: None,
                bytes: 1_234_567,
                late_p50_us: Some(18),
                late_p99_us: Some(95),
            },
            LinkReport {
                from: "m0".to_owned(),
                to: "m1".to_owned(),
                latency_us: 2_000,
                jitter_us: 0,
                bandwidth_bytes_per_s: Some(100_000_000),
                bytes: 2_469_134,
                late_p50_us: None,
                late_p99_us: None,
            },
        ],
        emulator: Some(EmulatorUsage {
            user_cpu_s: 0.42,
            system_cpu_s: 0.17,
            voluntary_ctxt_switches: 5_120,
            nonvoluntary_ctxt_switches: 33,
            realtime: false,
        }),
    });
    report.watch = Some(WatchAccounting {
        streams: 2,
        watchers: 20,
        puts: 100,
        expected: 1_000,
        received: 1_012,
        uncertain_puts: 1,
        uncertain_events: 10,
        unexplained: 2,
        ..WatchAccounting::default()
    });
    report.audit = Some(audit());
    report.invariants =
        Some(InvariantReport { list_count_mismatches: 1, ..InvariantReport::default() });
    report.steps = steps_report().steps;
    // Axes out of alphabetical order, so that a sorted map would show.
    let axes: toml::Table =
        toml::from_str("\"op.put.val-size\" = 256\n\"load.clients\" = 10\n").expect("a TOML table");
    report.matrix = Some(etcdlat_core::MatrixCell { axes, repetition: 2, repeat: 3 });
    report.shards = ["a.json", "b.json"]
        .into_iter()
        .map(|name| ShardInfo {
            name: name.to_owned(),
            started_at: STARTED_AT.to_owned(),
            duration_s: 3.0,
            clients: 5,
            conns: 1,
            ok: 1_000,
            errors_total: 5,
        })
        .collect();
    report.kubernetes = Some(kubernetes());
    report
}

/// The apiserver's requests of a small cluster, by resource and verb: node lease renewals
/// within their SLO, pod updates with conflicts, pod lists with pages over theirs, events
/// that all failed, the pods' watch (its deliveries' lag, a cancelled watch, progress) and
/// counts of pods (reported, not judged).
pub fn kubernetes() -> KubernetesReport {
    let kind = |resource: &str, verb| RequestKind { resource: resource.to_owned(), verb };
    let kinds = [
        kind("leases", Verb::Update),
        kind("pods", Verb::Update),
        kind("pods", Verb::List),
        kind("events", Verb::Create),
        kind("pods", Verb::Watch),
        kind("pods", Verb::Count),
    ];
    let t0 = Instant::now();
    let at = |us: u64| t0 + Duration::from_micros(us);
    let mut rec = Recorder::new(&[], t0, Duration::from_secs(1));
    for i in 0..100 {
        rec.record_request_ok(0, t0, at(800 + i * 20), 0, 0, 0);
    }
    for i in 0..50 {
        let conflicts = u64::from(i % 10 == 0);
        rec.record_request_ok(1, t0, at(1_500 + i * 100), 0, conflicts, conflicts);
    }
    // The two of 7 pages each had one page of 31 s: 2 of 24 pages over the list SLO; 500
    // keys a page, 2,000 a list.
    for (i, pages) in [1, 2, 3, 4, 7, 7].into_iter().enumerate() {
        rec.record_request_ok(2, t0, at(20_000_000 + i as u64 * 4_000_000), pages, 0, 0);
        let (over, slowest_us) = if pages == 7 { (1, 31_000_000) } else { (0, 12_000_000) };
        rec.record_page_calls(2, pages, over, slowest_us, pages * 500);
    }
    for i in 0..4 {
        rec.record_request_ok(5, t0, at(40_000 + i * 10_000), 0, 0, 0);
    }
    rec.record_request_error(2, ErrorCode::OutOfRange, true);
    for _ in 0..3 {
        rec.record_request_error(3, ErrorCode::DeadlineExceeded, false);
    }
    // 40 own writes delivered 1 to 9 ms after their answers (10 each); 12 progress
    // notifications, 5 consistent reads waiting 0.5 to 2.5 s; one watch cancelled by a
    // compaction.
    let mut watch = WatchRecord::default();
    for ms in [1, 3, 5, 9] {
        for _ in 0..10 {
            watch.lagged(ms * 1_000);
        }
    }
    watch.progress_notifications = 12;
    for ms in [500, 1_000, 1_500, 2_000, 2_500] {
        watch.waited(ms * 1_000);
    }
    watch.compacted = 1;
    watch.events = 55;
    rec.record_watch(4, &watch);
    // A second apiserver's watch of pods: 55 events too (etcd sends each to each).
    let second = WatchRecord { apiserver: 1, events: 55, ..WatchRecord::default() };
    rec.record_watch(4, &second);
    // A third apiserver's watch of one namespace of pods: 20 events, that namespace's.
    let third = WatchRecord {
        apiserver: 2,
        namespace: Some("ns-0".to_owned()),
        events: 20,
        ..WatchRecord::default()
    };
    rec.record_watch(4, &third);
    // Four node leases over a minute: two renewed every 10 to 30 s, one first renewed at
    // 45 s and one never; the last two past 40 s.
    let s = |secs: u64| t0 + Duration::from_secs(secs);
    for (node, renewed) in [(0, &[10, 20, 30][..]), (1, &[5, 35, 55]), (2, &[45])] {
        for &at in renewed {
            rec.record_renewal(0, node, 4, s(at));
        }
    }
    rec.close_renewals(s(60));
    let (nodes, grace) = (Some(4), Duration::from_secs(40));
    let mut model = etcdlat_core::scenario::Kubernetes::with_nodes(4);
    model.etcd_share = 0.25;
    let scope = VerdictScope::of(Some(&model));
    let mut report =
        KubernetesReport::from_requests(&kinds, rec.requests_by_slot(), nodes, grace, scope)
            .expect("requests recorded");
    // In steady state: history and events preloaded, two compactions, three leases that
    // expired deleting 30 keys, 12 at once.
    report.steady_state = Some(SteadyStateReport {
        history_writes: 300,
        preloaded_events: 1200,
        preloaded_event_leases: 12,
        compactions: 2,
        compacted_revision: 4321,
        leases_expired: 3,
        keys_expired: 30,
        largest_expiry_keys: 12,
    });
    // The model's objects at its sizes: pods drawn from the default profile, the others
    // fixed.
    let scenario = etcdlat_core::Scenario::from_toml_str(
        "[load]\nduration = \"1m\"\n[kubernetes]\nnodes = 4\n",
    )
    .expect("a model");
    report.object_sizes = ObjectSizeReport::of(&scenario);
    report
}

/// An audit of [`full_report`]'s puts and ranges that found one lost write, could not read
/// some keys back, and measured serializable staleness on two members.
pub fn audit() -> AuditReport {
    let staleness = |behind: u64, max: u64| Staleness {
        reads: 700,
        behind,
        p50_revisions: 0,
        p99_revisions: max / 2,
        max_revisions: max,
        p50_ms: 0.0,
        p99_ms: 1.25,
        max_ms: 4.5,
    };
    AuditReport {
        issued: 2_009,
        audited: 2_000,
        limit: 2_000,
        writes: 1_990,
        failed_writes: 3,
        unknown_outcome: 2,
        first_revision: 2,
        last_revision: 1_992,
        keys_read_back: 1_000,
        puts_read_at_revision: 1_989,
        puts_compacted: 1,
        read_back_error: Some("m2 did not answer within 5s".to_owned()),
        lost: 1,
        order_violations: 0,
        duplicate_revisions: 0,
        stale_reads: 0,
        linearizable_reads: 0,
        serializable_reads: 1_400,
        serializable_staleness: Some(Staleness { reads: 1_400, ..staleness(130, 9) }),
        members: vec![
            MemberStaleness { name: "m0".to_owned(), id: "a0".to_owned(), staleness: staleness(10, 3) },
            MemberStaleness { name: "m2".to_owned(), id: "a2".to_owned(), staleness: staleness(120, 9) },
        ],
        violations: vec![Violation {
            check: "lost-write".to_owned(),
            op: "put".to_owned(),
            key: Some(17),
            revision: 412,
            other_revision: 0,
            sent_s: 0.5,
            done_s: 0.5012,
            member: "m1".to_owned(),
            detail: "lost-write: put of key #17 answered at revision 412 by m1 (sent 0.500000 s, answered 0.501200 s): read at its revision, the key was absent".to_owned(),
        }],
    }
}
