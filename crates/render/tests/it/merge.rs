//! The report tools: `merge` (shards of one run into one report, exactly), `compare` (two
//! runs side by side, changes told from noise) and thresholds (pass/fail conditions on a
//! report). Reports are built from recorders fed fixed samples, and go through a JSON round
//! trip where the CLI would read them from files.

use std::time::{Duration, Instant};

use etcdlat_core::comparison::{self, Figure};
use etcdlat_core::merge::{self, MergeError};
use etcdlat_core::recorder::new_histogram;
use etcdlat_core::report::QUANTILES;
use etcdlat_core::{
    Distribution, ErrorCode, MemberReport, OpKind, OpReport, Recorder, Report, ReportSet, Scenario,
    Threshold, WatchAccounting,
};
use etcdlat_render as render;

use crate::fixture::{mixed_interrupted_report, put_report, steps_report};

/// The measured time of every run here.
const DURATION: Duration = Duration::from_secs(3);

/// One request: completion time and latency from the start of measurement, us.
struct Sample {
    done_us: u64,
    latency_us: u64,
}

/// `n` requests of a shard spread over [`DURATION`], with latencies around `base_us` and a
/// long tail that differs between shards.
fn shard_samples(n: u64, base_us: u64, tail_every: u64) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            done_us: 2_000 + i * (DURATION.as_micros() as u64 - 4_000) / n,
            latency_us: if i % tail_every == 0 {
                base_us * 20 + i
            } else {
                base_us + (i * 7919) % (base_us / 2)
            },
        })
        .collect()
}

/// A report of the fixture's put run whose puts are exactly `samples` (and `errors`).
fn put_run(samples: &[&[Sample]], errors: &[(ErrorCode, u64, u64)], clients: u32) -> Report {
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    for s in samples.iter().flat_map(|s| s.iter()) {
        let done = t0 + Duration::from_micros(s.done_us);
        let intended = done - Duration::from_micros(s.latency_us);
        let sent = intended + Duration::from_micros(s.latency_us / 10);
        rec.record_ok(OpKind::Put, intended, sent, done);
        rec.record_payload(OpKind::Put, 1, 256);
    }
    for &(code, n, at_ms) in errors {
        rec.record_errors(OpKind::Put, code, n, t0 + Duration::from_millis(at_ms));
    }
    let (_, record) = rec.finish().remove(0);
    let mut report = put_report();
    report.ops =
        [(OpKind::Put, OpReport::from_record(&record, DURATION, Duration::from_secs(1)))].into();
    report.params.clients = clients;
    report.params.total = Some(record.ok + record.errors_total());
    report
}

/// A member's report with latencies `from_us..from_us + n`.
fn member(name: &str, from_us: u64, n: u64) -> MemberReport {
    let mut h = new_histogram();
    for v in from_us..from_us + n {
        h.record(v).unwrap();
    }
    MemberReport {
        name: name.to_owned(),
        id: format!("{name}-id"),
        ok: n,
        throughput: n as f64 / DURATION.as_secs_f64(),
        latency: Distribution::new(h),
    }
}

/// The set as a reader of the JSON file gets it.
fn round_trip(set: &ReportSet) -> ReportSet {
    serde_json::from_str(&render::json(set)).expect("a report reads back")
}

fn one(report: Report) -> ReportSet {
    round_trip(&ReportSet::new(vec![report]))
}

#[test]
fn merged_shards_equal_one_run_of_every_sample() {
    let a_samples = shard_samples(1_500, 800, 97);
    let b_samples = shard_samples(1_100, 1_300, 61);
    let a_errors = [(ErrorCode::InvalidArgument, 3, 100)];
    let b_errors = [(ErrorCode::Unavailable, 2, 2_200), (ErrorCode::InvalidArgument, 1, 2_900)];
    let mut a = put_run(&[&a_samples], &a_errors, 10);
    let mut b = put_run(&[&b_samples], &b_errors, 6);
    let whole = put_run(&[&a_samples, &b_samples], &[a_errors[0], b_errors[0], b_errors[1]], 16);
    a.members = vec![member("m0", 500, 300), member("m1", 900, 200)];
    b.members = vec![member("m1", 1_000, 400)];
    b.started_at = "2026-11-21T20:59:59.900Z".to_owned();

    let (a, b, whole) = (one(a), one(b), one(whole));
    let merged = round_trip(
        &merge::merge_labeled(&[("a.json", &a), ("b.json", &b)]).expect("the shards correspond"),
    );
    let (m, w) = (&merged.runs[0], &whole.runs[0]);
    let (mp, wp) = (m.op(OpKind::Put), w.op(OpKind::Put));

    // Histograms: the same as one histogram of every sample, to the last count.
    assert_eq!(mp.latency.histogram(), wp.latency.histogram());
    assert_eq!(mp.latency, wp.latency);
    assert_eq!(mp.service_time, wp.service_time);
    for (q, name) in QUANTILES {
        assert_eq!(mp.latency.quantile_us(q), wp.latency.quantile_us(q), "latency {name}");
        assert_eq!(
            mp.service_time.quantile_us(q),
            wp.service_time.quantile_us(q),
            "service {name}"
        );
    }
    assert_eq!(mp.latency.count(), 2_600);
    assert!((mp.latency.mean_us() - wp.latency.mean_us()).abs() < 1e-9);

    // Counts.
    assert_eq!(mp.ok, wp.ok);
    assert_eq!(mp.errors, wp.errors);
    assert_eq!(mp.errors_total, 6);
    assert_eq!((mp.keys, mp.value_bytes), (wp.keys, wp.value_bytes));
    assert_eq!(mp.duration_s, 3.0);
    assert!((mp.throughput - wp.throughput).abs() < 1e-9);
    assert_eq!(m.ok(), 2_600);

    // Intervals: counts, errors, min and max exact; the mean up to rounding; percentiles an
    // upper bound, the largest shard's.
    assert_eq!(mp.intervals.len(), wp.intervals.len());
    let (ai, bi) = (&a.runs[0].op(OpKind::Put).intervals, &b.runs[0].op(OpKind::Put).intervals);
    for (i, (mi, wi)) in mp.intervals.iter().zip(&wp.intervals).enumerate() {
        assert_eq!((mi.t_s, mi.count, mi.errors), (wi.t_s, wi.count, wi.errors), "interval {i}");
        assert_eq!((mi.min_us, mi.max_us), (wi.min_us, wi.max_us), "interval {i}");
        assert!((mi.mean_us - wi.mean_us).abs() < 0.002, "interval {i}: {mi:?} {wi:?}");
        assert!(mi.p99_us >= wi.p99_us && mi.p50_us >= wi.p50_us, "interval {i}");
        assert_eq!(mi.p99_us, ai[i].p99_us.max(bi[i].p99_us), "interval {i}");
    }

    // Members by name, histograms added.
    let names: Vec<&str> = m.members.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["m0", "m1"]);
    assert_eq!(m.members[1].ok, 600);
    let mut m1 = member("m1", 900, 200).latency.histogram().clone();
    m1.add(member("m1", 1_000, 400).latency.histogram()).unwrap();
    assert_eq!(m.members[1].latency.histogram(), &m1);

    // The run's own fields, and each shard kept.
    assert_eq!(m.params.clients, 16);
    assert_eq!(m.params.total, Some(2_606));
    assert_eq!(m.started_at, "2026-11-21T20:59:59.900Z");
    assert_eq!(m.target, a.runs[0].target);
    let shards: Vec<(&str, u32, u64, u64)> =
        m.shards.iter().map(|s| (s.name.as_str(), s.clients, s.ok, s.errors_total)).collect();
    assert_eq!(shards, [("a.json", 10, 1_500, 3), ("b.json", 6, 1_100, 3)]);
}

#[test]
fn merged_shards_keep_the_first_message_per_code() {
    let a = one(put_report());
    let mut b = put_report();
    let put = b.ops.get_mut(&OpKind::Put).unwrap();
    put.error_messages.insert("InvalidArgument".to_owned(), "b's message".to_owned());
    put.error_messages.insert("Unavailable".to_owned(), "connection refused".to_owned());
    let b = one(b);
    let merged = round_trip(&merge::merge(&[a, b]).expect("the shards correspond"));
    let messages = &merged.runs[0].op(OpKind::Put).error_messages;
    let messages: Vec<(&str, &str)> =
        messages.iter().map(|(c, m)| (c.as_str(), m.as_str())).collect();
    assert_eq!(
        messages,
        [
            ("InvalidArgument", "etcdserver: request is too large"),
            ("Unavailable", "connection refused")
        ]
    );
}

#[test]
fn merging_merges_is_merging_everything() {
    let parts: Vec<ReportSet> = [(900, 600, 89), (1_100, 700, 53), (1_300, 500, 71)]
        .into_iter()
        .map(|(n, base, tail)| one(put_run(&[&shard_samples(n, base, tail)], &[], 4)))
        .collect();
    let all_at_once = merge::merge(&parts).unwrap();
    let first_two = round_trip(&merge::merge(&parts[..2]).unwrap());
    let in_two_steps = merge::merge(&[first_two, parts[2].clone()]).unwrap();
    let (x, y) = (&all_at_once.runs[0], &in_two_steps.runs[0]);
    assert_eq!(x.op(OpKind::Put).latency, y.op(OpKind::Put).latency);
    assert_eq!(x.op(OpKind::Put).ok, 3_300);
    let shards = |r: &Report| -> Vec<(String, u64)> {
        r.shards.iter().map(|s| (s.name.clone(), s.ok)).collect()
    };
    let owned = |v: [(&str, u64); 3]| v.map(|(n, ok)| (n.to_owned(), ok)).to_vec();
    assert_eq!(shards(x), owned([("shard 1", 900), ("shard 2", 1_100), ("shard 3", 1_300)]));
    // A merged shard contributes its own shards, under the labels of its merge.
    assert_eq!(shards(y), owned([("shard 1", 900), ("shard 2", 1_100), ("shard 2", 1_300)]));
}

#[test]
fn merged_watch_accounting_is_the_sum_of_every_count() {
    let shard = |n: u64| WatchAccounting {
        streams: n,
        watchers: 10 * n,
        puts: 100 * n,
        expected: 1_000 * n,
        received: 1_100 * n,
        missing: 2 * n,
        duplicate: 3 * n,
        out_of_order: 4 * n,
        before_ack: 5 * n,
        uncertain_puts: 6 * n,
        uncertain_events: 60 * n,
        unexplained: 7 * n,
    };
    let mut a = put_report();
    a.watch = Some(shard(1));
    let mut b = put_report();
    b.watch = Some(shard(2));
    let merged = round_trip(&merge::merge(&[one(a), one(b)]).expect("the shards correspond"));
    assert_eq!(merged.runs[0].watch, Some(shard(3)));
}

#[test]
fn runs_that_do_not_correspond_are_refused_by_name() {
    let a = one(put_report());
    let mut renamed = a.clone();
    renamed.runs[0].name = "other".to_owned();
    let err = merge::merge_labeled(&[("a.json", &a), ("b.json", &renamed)]).unwrap_err();
    assert!(matches!(err, MergeError::RunName { run: 1, .. }), "{err:?}");
    assert_eq!(err.to_string(), "b.json: run 1 is \"other\", but in a.json it is \"put-256b\"");

    let mut mixed = one(mixed_interrupted_report());
    mixed.runs[0].name = "put-256b".to_owned();
    let err = merge::merge_labeled(&[("a.json", &a), ("m.json", &mixed)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "m.json: run \"put-256b\" measured put, range, but in a.json it measured put"
    );

    let two = round_trip(&ReportSet::new(vec![put_report(), put_report()]));
    let err = merge::merge_labeled(&[("a.json", &a), ("two.json", &two)]).unwrap_err();
    assert_eq!(err.to_string(), "two.json: 2 runs, but a.json has 1");

    let mut old = a.clone();
    old.schema_version = 0;
    let err = merge::merge_labeled(&[("a.json", &a), ("old.json", &old)]).unwrap_err();
    assert!(err.to_string().starts_with("old.json: schema_version 0"), "{err}");

    let mut slow = a.clone();
    slow.runs[0].interval_s = 1.5;
    let err = merge::merge_labeled(&[("a.json", &a), ("slow.json", &slow)]).unwrap_err();
    assert!(matches!(err, MergeError::Interval { .. }), "{err:?}");

    assert_eq!(merge::merge(&[]).unwrap_err(), MergeError::Empty);
}

/// A 10 s put run of 200 requests a second, whose latencies drift from second to second
/// (by `seed`) around `base_us`.
fn steady_run(base_us: u64, seed: u64, seconds: u64) -> Report {
    steady_run_every(base_us, seed, seconds, Duration::from_secs(1))
}

/// [`steady_run`] with intervals `interval` long.
fn steady_run_every(base_us: u64, seed: u64, seconds: u64, interval: Duration) -> Report {
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Put], t0, interval);
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = move |n: u64| {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    for s in 0..seconds {
        let drift = next(base_us / 10);
        for i in 0..200u64 {
            let done = t0 + Duration::from_micros(s * 1_000_000 + 2_000 + i * 4_900);
            let tail = if i % 50 == 0 { base_us * 2 } else { 0 };
            let latency = base_us + drift + next(base_us / 5) + tail;
            let intended = done - Duration::from_micros(latency);
            rec.record_ok(OpKind::Put, intended, intended, done);
        }
    }
    let (_, record) = rec.finish().remove(0);
    let duration = Duration::from_secs(seconds);
    let mut report = put_report();
    report.duration_s = duration.as_secs_f64();
    report.ops = [(OpKind::Put, OpReport::from_record(&record, duration, interval))].into();
    report.interval_s = interval.as_secs_f64();
    report
}

#[test]
fn shards_whose_intervals_doubled_apart_merge_at_the_longest() {
    // Shards of a run whose length was not known in advance may end with intervals doubled
    // a different number of times.
    let long = one(steady_run_every(1_000, 1, 4, Duration::from_secs(1)));
    let short = one(steady_run_every(1_000, 2, 4, Duration::from_millis(250)));
    assert_eq!(short.runs[0].ops[&OpKind::Put].intervals.len(), 16);
    for pair in [[&short, &long], [&long, &short]] {
        let merged = merge::merge(&pair.map(|s| s.clone())).unwrap();
        let run = &merged.runs[0];
        assert_eq!(run.interval_s, 1.0);
        let intervals = &run.ops[&OpKind::Put].intervals;
        let counts: Vec<u64> = intervals.iter().map(|i| i.count).collect();
        assert_eq!(counts, [400, 400, 400, 400], "200 a second from each shard");
        let starts: Vec<f64> = intervals.iter().map(|i| i.t_s).collect();
        assert_eq!(starts, [0.0, 1.0, 2.0, 3.0]);
    }
}

#[test]
fn compare_flags_a_doubled_latency_and_not_noise() {
    let base = one(steady_run(1_000, 1, 10));
    let slower = one(steady_run(2_000, 2, 10));
    let again = one(steady_run(1_000, 3, 10));

    let c = comparison::compare(&base.runs[0], &slower.runs[0]);
    let put = &c.ops[0];
    assert_eq!(put.kind, OpKind::Put);
    assert_eq!((put.base_intervals, put.new_intervals), (10, 10));
    for figure in [Figure::P50, Figure::P99] {
        let row = put.row(figure);
        assert_eq!(row.significant, Some(true), "{figure:?}: {row:?}");
        assert!(row.change_pct.unwrap() > 80.0, "{figure:?}: {row:?}");
    }
    assert_eq!(put.row(Figure::Throughput).significant, Some(false));
    assert_eq!(put.row(Figure::Errors).change_pct, Some(0.0));

    for other in [&base, &again] {
        let c = comparison::compare(&base.runs[0], &other.runs[0]);
        for row in &c.ops[0].rows {
            assert_eq!(row.significant, Some(false), "{row:?}");
        }
    }

    let table = render::comparison::markdown(&[c]);
    assert!(table.starts_with("## put-256b\n\n### put\n\n| Metric | Base | New |"), "{table}");
    let doubled = render::comparison::markdown(&comparison::compare_sets(&base, &slower).unwrap());
    assert!(doubled.contains("| p99 |") && doubled.contains("**yes**"), "{doubled}");
    assert!(doubled.contains("spread over 10 base and 10 new intervals"), "{doubled}");
}

#[test]
fn compare_says_when_noise_cannot_be_estimated() {
    let short = one(steady_run(1_000, 1, 2));
    let long = one(steady_run(1_000, 1, 10));
    let c = comparison::compare(&short.runs[0], &long.runs[0]);
    assert!(c.ops[0].rows.iter().all(|r| r.significant.is_none()));
    let table = render::comparison::markdown(&[c]);
    assert!(table.contains("Not enough intervals to estimate noise (2 base, 10 new"), "{table}");

    let mixed = one(mixed_interrupted_report());
    let c = comparison::compare(&long.runs[0], &mixed.runs[0]);
    let kinds: Vec<OpKind> = c.ops.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, [OpKind::Put, OpKind::Range]);
    assert_eq!(c.ops[1].row(Figure::P99).base, None);
    assert!(render::comparison::markdown(&[c]).contains("Only the new run sent range requests."));

    let two = ReportSet::new(vec![put_report(), put_report()]);
    assert!(comparison::compare_sets(&long, &two).is_err());
}

#[test]
fn thresholds_parse_and_check() {
    let report = put_report();
    let p99 = report.op(OpKind::Put).latency.quantile_us(0.99);
    let check = |text: &str| -> Vec<String> {
        let t: Threshold = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        t.check(&report).iter().map(ToString::to_string).collect()
    };
    let violated = check(r#"p99 < "1us""#);
    assert_eq!(violated.len(), 1);
    assert!(violated[0].starts_with("put p99 < 1us (was "), "{violated:?}");
    let v = r#"p99 < "1us""#.parse::<Threshold>().unwrap().check(&report).remove(0);
    assert_eq!(v.actual, Some(p99 as f64));
    assert!(check(r#"p99 < "1h""#).is_empty());
    assert!(check("put.p99_99 <= 1h").is_empty());
    assert_eq!(check("errors == 0"), ["put errors == 0 (was 5)"]);
    assert!(check("error_rate < 0.01").is_empty(), "5 of 2005 failed");
    assert_eq!(check("error_rate < 0.001"), ["put error_rate < 0.001 (was 0.002494)"]);
    assert!(check("throughput > 600").is_empty());
    assert_eq!(check("ok >= 2001"), ["put ok >= 2001 (was 2000)"]);
    assert_eq!(check(r#"range.p99 < "1s""#), ["range p99 < 1s (no range requests in the run)"]);

    for bad in ["p99 < 20", "p99 20ms", "put.p42 < 1ms", "get.p99 < 1ms", "errors < 'x'"] {
        let err = bad.parse::<Threshold>().unwrap_err().to_string();
        assert!(err.starts_with(&format!("threshold {bad:?}: ")), "{err}");
    }

    // Unscoped: every kind of a run without an `all` row, the `all` row when there is one.
    let mut mixed = mixed_interrupted_report();
    let t: Threshold = r#"p99 < "1h""#.parse().unwrap();
    let v: Vec<String> = t.check(&mixed).iter().map(ToString::to_string).collect();
    assert_eq!(v, ["range p99 < 1h (no successful range requests)"]);
    mixed.all = Some(mixed.op(OpKind::Put).clone());
    assert!(t.check(&mixed).is_empty());
    let v = "errors == 0".parse::<Threshold>().unwrap().check(&mixed);
    assert_eq!(v[0].to_string(), "all errors == 0 (was 5)");
}

#[test]
fn scenario_thresholds_are_validated_and_checked() {
    let base = "[load]\ntotal = 10\n[op.put]\n";
    let err = Scenario::from_toml_str(&format!("thresholds = ['p99 < 20']\n{base}")).unwrap_err();
    assert_eq!(err.field(), Some("thresholds"));
    assert!(
        err.to_string().starts_with("line 1, column 14: thresholds: threshold \"p99 < 20\":"),
        "{err}"
    );

    let text = format!("thresholds = ['p99 < \"1us\"', \"errors == 0\", \"p50 < 1h\"]\n{base}");
    let scenario = Scenario::from_toml_str(&text).unwrap();
    assert_eq!(scenario.thresholds.len(), 3);
    let again = Scenario::from_toml_str(&toml::to_string(&scenario).unwrap()).unwrap();
    assert_eq!(again, scenario);

    let mut report = put_report();
    assert!(report.violations().is_empty(), "no thresholds, nothing violated");
    report.scenario = scenario;
    let v: Vec<String> = report.violations().iter().map(ToString::to_string).collect();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("put p99 < 1us (was ") && v[1] == "put errors == 0 (was 5)");
}

#[test]
fn client_steps_merge_by_position() {
    let mut a = steps_report();
    let mut b = steps_report();
    // The second shard's last step took longer.
    b.steps[2].duration_s *= 2.0;
    a.steps[1].start_s = 0.3;
    b.steps[1].start_s = 0.2;
    let whole = merge::merge(&[ReportSet::new(vec![a.clone()]), ReportSet::new(vec![b.clone()])])
        .expect("shards of one run merge");
    let steps = &whole.runs[0].steps;
    assert_eq!(steps.len(), 3);
    for (k, step) in steps.iter().enumerate() {
        assert_eq!(step.clients, a.steps[k].clients * 2, "step {k}");
        assert_eq!(step.active_clients, a.steps[k].active_clients * 2, "step {k}");
        assert_eq!(step.total, a.steps[k].total.map(|t| t * 2), "step {k}");
        assert_eq!((step.ok, step.errors_total), (a.steps[k].ok * 2, a.steps[k].errors_total * 2));
        assert_eq!(step.latency.count(), step.ok, "step {k}: every success's latency");
        assert_eq!(
            step.latency.quantile_us(0.99),
            a.steps[k].latency.quantile_us(0.99),
            "step {k}: twice the same samples"
        );
    }
    assert_eq!(steps[1].start_s, 0.2, "the earliest shard's start");
    assert_eq!(steps[2].duration_s, b.steps[2].duration_s, "the longest shard's time");
    assert!(
        (steps[2].throughput - a.steps[2].throughput).abs() < 1e-9,
        "twice the ok in twice the time"
    );
    assert!((steps[0].throughput - 2.0 * a.steps[0].throughput).abs() < 1e-9);
}
