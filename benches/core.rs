//! Benchmarks of etcdlat-core's own cost: what the client spends per request (key
//! generation, recording, the audit's entry) and once per run (merging, building and
//! rendering the report, the audit's checks of 1,000,000 requests).
//!
//! Run with `cargo bench --bench core`; add `-- --warm-up-time 1 --measurement-time 2` for
//! a quick pass.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use etcdlat_core::audit::{self, Access, AtRevision, Entry, Outcome, ReadBack, ReadPlan};
use etcdlat_core::workload::keyspace::KeyGen;
use etcdlat_core::{
    ErrorCode, OpKind, OpReport, Operation, Params, PutOp, Recorder, Report, ReportSet, Scenario,
    TargetInfo,
};
use etcdlat_render::{self as render, TextOptions};

/// Values recorded into each recorder of the merge benchmark.
const MERGE_VALUES: u64 = 100_000;

/// A recorder holding `n` puts with latencies spread from 200 us to ~20 ms over `n` ms.
fn filled_recorder(t0: Instant, n: u64, salt: u64) -> Recorder {
    let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    for i in 0..n {
        let done = t0 + Duration::from_millis(1 + i / 10);
        let spread = (i.wrapping_mul(2_654_435_761) ^ salt) % 1_000;
        let latency = Duration::from_micros(200 + spread * spread / 50);
        rec.record_ok(OpKind::Put, done - latency, done - latency / 2, done);
        if i % 1_000 == 999 {
            rec.record_error(OpKind::Put, ErrorCode::Unavailable, done);
        }
    }
    rec
}

fn put_op() -> PutOp {
    PutOp { val_size: 256, key_space_size: 100_000, seed: Some(1), ..PutOp::default() }
}

/// A report of a 10 s put run with 100,000 requests.
fn sample_report() -> Report {
    let t0 = Instant::now();
    let rec = filled_recorder(t0, MERGE_VALUES, 7);
    let (kind, record) = rec.finish().remove(0);
    let duration = Duration::from_secs(10);
    let op = OpReport::from_record(&record, duration, Duration::from_secs(1));
    let scenario = Scenario::new(Operation::Put(put_op()));
    let params = {
        let mut p = Params::default();
        p.op = "put".to_owned();
        p.conns = 10;
        p.clients = 100;
        p.workers = 2;
        p.total = Some(MERGE_VALUES);
        p.key_size = Some(8);
        p.val_size = Some(256);
        p.key_space_size = Some(100_000);
        p.sequential_keys = Some(false);
        p.seed = 1;
        p
    };
    let target = {
        let mut t = TargetInfo::default();
        t.endpoints = vec!["127.0.0.1:2379".to_owned()];
        t.etcd_version = "3.5.17".to_owned();
        t.members = 1;
        t
    };
    let mut report = Report::new(scenario.clone(), params, target);
    report.started_at = "2026-11-21T21:00:00.000Z".to_owned();
    report.duration_s = duration.as_secs_f64();
    report.interval_s = 1.0;
    report.ops = [(kind, op)].into();
    report
}

fn keys(c: &mut Criterion) {
    let mut group = c.benchmark_group("keygen");
    group.throughput(Throughput::Elements(1));
    for sequential in [true, false] {
        let op = PutOp { sequential_keys: sequential, ..put_op() };
        let mut keygen = KeyGen::new(&op.key_space(), 1);
        let mut i = 0u64;
        let name = if sequential { "key/sequential" } else { "key/random" };
        group.bench_function(name, |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                black_box(keygen.key(black_box(i)).len())
            });
        });
    }
    group.finish();
}

fn recording(c: &mut Criterion) {
    let mut group = c.benchmark_group("recorder");
    group.throughput(Throughput::Elements(1));
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    // Completion times walk forward a microsecond a call, wrapping after an hour, so
    // intervals roll over as they do in a run.
    let mut i = 0u64;
    group.bench_function("record_ok", |b| {
        b.iter(|| {
            i = (i + 1) % 3_600_000_000;
            let done = t0 + Duration::from_micros(i);
            let intended = done.checked_sub(Duration::from_micros(300 + i % 700)).unwrap_or(t0);
            rec.record_ok(OpKind::Put, black_box(intended), black_box(intended), black_box(done));
        });
    });
    group.finish();

    let mut group = c.benchmark_group("recorder");
    let a = filled_recorder(t0, MERGE_VALUES, 1);
    let other = filled_recorder(t0, MERGE_VALUES, 2);
    group.bench_function("merge/2x100k", |b| {
        b.iter_batched(
            || (a.clone(), other.clone()),
            |(mut a, other)| {
                a.merge(other);
                a
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

fn reporting(c: &mut Criterion) {
    let t0 = Instant::now();
    let (_, record) = filled_recorder(t0, MERGE_VALUES, 3).finish().remove(0);
    c.bench_function("report/from_record/100k", |b| {
        b.iter(|| {
            OpReport::from_record(
                black_box(&record),
                Duration::from_secs(10),
                Duration::from_secs(1),
            )
        });
    });

    let report = sample_report();
    let set = ReportSet::new(vec![report.clone()]);
    let runs = [report.clone()];
    let mut group = c.benchmark_group("render");
    group.bench_function("text", |b| {
        b.iter(|| render::text(black_box(&report), &TextOptions::default()));
    });
    group.bench_function("text/precise+sample", |b| {
        b.iter(|| {
            render::text(
                black_box(&report),
                &TextOptions { precise: true, sample: true, dbtester_rows: true },
            )
        });
    });
    group.bench_function("json", |b| b.iter(|| render::json(black_box(&set))));
    group.bench_function("markdown", |b| b.iter(|| render::markdown(black_box(&runs))));
    group.finish();
}

/// Audited requests in the end-of-run check benchmark.
const AUDITED: u64 = 1_000_000;

/// A history of `n` requests from 64 clients at once, each 100 us to 1 ms long: half puts
/// over 100,000 keys, a quarter linearizable and a quarter serializable reads over three
/// members, revisions in acknowledgement order (a faithful history: the checks find nothing
/// and walk every request), with the store's answers to its read plan.
fn audited_history(n: u64) -> (Vec<Entry>, ReadPlan, ReadBack) {
    let mut history: Vec<Entry> = (0..n)
        .map(|i| {
            let client = i % 64;
            let sent_ns = (i / 64) * 1_000_000 + client * 1_000;
            let took_ns = 100_000 + (i.wrapping_mul(2_654_435_761) % 900_000);
            let (access, op) = match i % 4 {
                0 | 1 => (Access::Put, OpKind::Put),
                2 => (Access::Read, OpKind::Range),
                _ => (Access::SerializableRead, OpKind::Range),
            };
            Entry {
                done_ns: sent_ns + took_ns,
                key: i.wrapping_mul(0x9E37_79B9) % 100_000,
                member: 1 + i % 3,
                outcome: Outcome::Ok,
                ..Entry::new(op, access, sent_ns)
            }
        })
        .collect();
    let mut by_ack: Vec<usize> = (0..history.len()).collect();
    by_ack.sort_unstable_by_key(|&i| history[i].done_ns);
    let mut revision = 1;
    for i in by_ack {
        let e = &mut history[i];
        if e.access == Access::Put {
            revision += 1;
        }
        // Reads answer at the revision of their acknowledgement; serializable ones a
        // revision behind, now and then.
        e.revision = revision - i64::from(e.access == Access::SerializableRead && i % 16 == 3);
    }
    let plan = ReadPlan::of(&history);
    let mut latest = std::collections::HashMap::new();
    for e in history.iter().filter(|e| e.access == Access::Put) {
        let r = latest.entry(e.key).or_insert(0);
        *r = e.revision.max(*r);
    }
    let back = ReadBack {
        current: plan.keys.iter().map(|k| latest[&k.key]).collect(),
        at_revision: plan
            .puts
            .iter()
            .map(|&i| AtRevision::Found { mod_revision: history[i].revision, value_matches: true })
            .collect(),
    };
    (history, plan, back)
}

fn auditing(c: &mut Criterion) {
    let mut group = c.benchmark_group("audit");
    // What a worker does per audited request: append the entry when the key is chosen, fill
    // in the answer when it arrives (into a buffer allocated once, as the driver's is).
    let mut log: Vec<Entry> = Vec::with_capacity(1 << 20);
    let mut i = 0u64;
    group.throughput(Throughput::Elements(1));
    group.bench_function("record", |b| {
        b.iter(|| {
            if log.len() == log.capacity() {
                log.clear();
            }
            i += 1;
            log.push(Entry {
                key: i % 1_000,
                ..Entry::new(OpKind::Put, Access::Put, black_box(i))
            });
            let last = log.len() - 1;
            let e = &mut log[last];
            e.done_ns = black_box(i + 300);
            e.outcome = Outcome::Ok;
            e.revision = black_box(i as i64);
            e.member = 1;
        });
    });
    let (history, plan, back) = audited_history(AUDITED);
    let name = |id: u64| format!("m{id}");
    group.sample_size(10);
    group.throughput(Throughput::Elements(AUDITED));
    group.bench_function("check/1M", |b| {
        b.iter(|| audit::check(black_box(&history), Some((&plan, &back)), &name));
    });
    group.bench_function("read-plan/1M", |b| b.iter(|| ReadPlan::of(black_box(&history))));
    group.finish();
    let report = audit::check(&history, Some((&plan, &back)), &name);
    assert_eq!(report.violation_count(), 0, "a faithful history: {report:#?}");
}

criterion_group!(benches, keys, recording, reporting, auditing);
criterion_main!(benches);
