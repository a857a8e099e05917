//! The recorder's unit tests: recording, merging, intervals, steps and resets.

use super::*;

fn at(start: Instant, ms: u64) -> Instant {
    start + Duration::from_millis(ms)
}

#[test]
fn latency_from_intended_service_from_sent() {
    let t0 = Instant::now();
    let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    r.record_ok(OpKind::Put, t0, at(t0, 40), at(t0, 50));
    let ops = r.finish();
    let (_, put) = &ops[0];
    assert!((49_900..=50_100).contains(&put.latency.max()));
    assert!((9_990..=10_010).contains(&put.service.max()));
}

#[test]
fn member_ids_a_server_makes_up_are_bounded() {
    let t0 = Instant::now();
    let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    for id in 1..=(MAX_MEMBERS as u64 + 100) {
        r.record_member(id, t0, at(t0, 1));
    }
    r.record_member(1, t0, at(t0, 1));
    assert_eq!(r.members().len(), MAX_MEMBERS);
    assert_eq!(r.members()[0].ok, 2, "known members are still counted");
}

#[test]
fn errors_are_counted_not_timed() {
    let t0 = Instant::now();
    let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    r.record_ok(OpKind::Put, t0, t0, at(t0, 1));
    r.record_error(OpKind::Put, ErrorCode::InvalidArgument, at(t0, 2));
    r.record_errors(OpKind::Put, ErrorCode::Cancelled, 3, at(t0, 3));
    assert_eq!(r.requests(), 5);
    let (_, put) = r.finish().remove(0);
    assert_eq!(put.ok, 1);
    assert_eq!(put.latency.len(), 1);
    assert_eq!(put.errors[ErrorCode::InvalidArgument.index()], 1);
    assert_eq!(put.errors_total(), 4);
}

#[test]
fn first_error_message_is_kept_cut_and_merged() {
    let t0 = Instant::now();
    let unknown = ErrorCode::Unknown.index();
    let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    a.record_error(OpKind::Put, ErrorCode::Unknown, at(t0, 1));
    a.record_error_message(OpKind::Put, ErrorCode::Unknown, "");
    a.record_error_message(OpKind::Put, ErrorCode::Unknown, " etcdserver: too many requests\n");
    a.record_error_message(OpKind::Put, ErrorCode::Unknown, "etcdserver: request timed out");
    // Cut after 200 characters, each of them two bytes here.
    let long = "é".repeat(ERROR_MESSAGE_MAX_CHARS + 50);
    a.record_error_message(OpKind::Put, ErrorCode::Unavailable, &long);
    a.record_error_message(OpKind::Put, ErrorCode::Unavailable, "connection refused");

    let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    b.record_error_message(OpKind::Put, ErrorCode::Unknown, "from b");
    b.record_error_message(OpKind::Put, ErrorCode::ResourceExhausted, "from b only");
    b.record_error_message(OpKind::Range, ErrorCode::Unknown, "a range");
    a.merge(b);

    let ops = a.finish();
    let put = &ops[0].1;
    assert_eq!(put.error_messages[unknown].as_deref(), Some("etcdserver: too many requests"));
    let cut = put.error_messages[ErrorCode::Unavailable.index()].as_deref().unwrap();
    assert_eq!(cut.chars().count(), ERROR_MESSAGE_MAX_CHARS);
    assert_eq!(cut, &long[..2 * ERROR_MESSAGE_MAX_CHARS]);
    assert_eq!(
        put.error_messages[ErrorCode::ResourceExhausted.index()].as_deref(),
        Some("from b only")
    );
    assert_eq!(put.error_messages.iter().flatten().count(), 3);
    // A kind with messages and no request is not reported, as any kind without requests.
    assert_eq!(ops.len(), 1);
}

#[test]
fn intervals_split_by_completion_time_and_merge() {
    let t0 = Instant::now();
    let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    let mut b = Recorder::new(&[], t0, Duration::from_secs(1));
    for ms in [10, 20, 1500, 2500] {
        a.record_ok(OpKind::Put, at(t0, ms - 5), at(t0, ms - 5), at(t0, ms));
    }
    b.record_ok(OpKind::Put, t0, t0, at(t0, 1100));
    b.record_error(OpKind::Range, ErrorCode::Unavailable, at(t0, 100));
    a.merge(b);
    let ops = a.finish();
    assert_eq!(ops.len(), 2);
    let put = &ops[0].1;
    let mut by_index = std::collections::BTreeMap::new();
    for s in &put.intervals {
        *by_index.entry(s.index).or_insert(0) += s.ok;
    }
    assert_eq!(by_index.into_iter().collect::<Vec<_>>(), vec![(0, 2), (1, 2), (2, 1)]);
    assert_eq!(ops[1].1.errors_total(), 1);
}

/// (index, ok) of every finished interval of the first kind.
fn series(r: &Recorder) -> Vec<(u64, u64)> {
    r.finished_intervals().map(|(_, s)| (s.index, s.ok)).collect()
}

#[test]
fn adaptive_recorder_doubles_its_interval_on_a_pair_boundary() {
    let t0 = Instant::now();
    let ten = Duration::from_millis(10);
    let mut r = Recorder::new(&[OpKind::Put], t0, ten).adaptive();
    // One request in the middle of each of the first 201 intervals, two in the 202nd.
    for i in 0..202 {
        let done = t0 + ten * i + Duration::from_millis(5);
        r.record_ok(OpKind::Put, done, done, done);
    }
    let done = t0 + ten * 201 + Duration::from_millis(6);
    r.record_ok(OpKind::Put, done, done, done);
    let index = r.close_intervals(t0 + ten * 201 + Duration::from_millis(7));
    assert_eq!(index, 201);
    assert!(!r.double_if_due(index), "201 is the second of a pair: not yet");
    assert_eq!(r.interval(), ten);
    let index = r.close_intervals(t0 + ten * 202);
    assert!(r.double_if_due(index));
    assert_eq!((r.interval(), r.shift()), (ten * 2, 1));
    // Pairs merged: 101 intervals of 2 requests, the last one of 3.
    let merged = series(&r);
    assert_eq!(merged.len(), 101);
    assert!(merged.iter().enumerate().all(|(i, &(index, _))| index == i as u64));
    assert!(merged[..100].iter().all(|&(_, ok)| ok == 2), "{merged:?}");
    assert_eq!(merged[100], (100, 3));
    // A recorder that did not double merges into the longer intervals.
    let mut other = Recorder::new(&[OpKind::Put], t0, ten).adaptive();
    let done = t0 + ten * 3;
    other.record_ok(OpKind::Put, done, done, done);
    r.merge(other);
    assert_eq!(r.interval(), ten * 2);
    let (_, put) = r.finish().remove(0);
    let series = crate::Interval::series(&put.intervals, ten * 2);
    assert_eq!(series.len(), 101);
    assert_eq!(series[1].count, 3, "10 ms interval 3 is 20 ms interval 1");
    assert_eq!(series.iter().map(|i| i.count).sum::<u64>(), 204);
    assert!(series.iter().all(|i| i.max_us <= 1), "latency kept through the merges");
}

#[test]
fn fixed_recorder_never_doubles() {
    let t0 = Instant::now();
    let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_millis(10));
    let index = r.close_intervals(t0 + Duration::from_secs(10));
    assert_eq!(index, 1000);
    assert!(!r.double_if_due(index));
}

#[test]
fn out_of_range_is_clamped_and_counted() {
    let t0 = Instant::now();
    let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    r.record_ok(OpKind::Put, t0, t0, t0 + Duration::from_secs(7200));
    let (_, put) = r.finish().remove(0);
    assert_eq!(put.clamped, 2);
    assert!(put.latency.max() >= HIGHEST_US);
}

#[test]
fn timeline_marks_milliseconds_and_merges() {
    let t0 = Instant::now();
    let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    a.record_ok(OpKind::Put, t0, t0, at(t0, 5));
    a.record_ok(OpKind::Put, t0, t0, t0 + Duration::from_micros(5_900));
    b.record_ok(OpKind::Put, t0, t0, at(t0, 70_000));
    b.record_error(OpKind::Put, ErrorCode::Unavailable, at(t0, 100));
    a.merge(b);
    let (_, put) = a.finish().remove(0);
    let t = &put.successes;
    assert!(t.is_set(5) && t.is_set(70_000) && !t.is_set(6) && !t.is_set(100));
    assert_eq!(t.first_set_from(0, 100_000), Some(5));
    assert_eq!(t.first_set_from(6, 100_000), Some(70_000));
    assert_eq!(t.first_set_from(6, 70_000), None);
    assert_eq!(t.first_set_from(70_001, 200_000), None);
}

#[test]
fn start_rate_is_the_rate_of_starts_not_completions() {
    let t0 = Instant::now();
    let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    // 11 starts 10 ms apart, split over two workers, one of them 3 ms late.
    for i in 0..11u64 {
        let slot = at(t0, 10 * i);
        let r = if i % 2 == 0 { &mut a } else { &mut b };
        r.record_start(slot, if i == 4 { slot + Duration::from_millis(3) } else { slot }, None);
    }
    a.merge(b);
    let p = a.pacing().unwrap();
    assert_eq!(p.paced, 11);
    assert_eq!(p.late, 1);
    assert!((p.start_rate() - 100.0).abs() < 1e-6, "{}", p.start_rate());
}

#[test]
fn steps_are_recorded_on_their_own_and_merged() {
    let t0 = Instant::now();
    let mut a = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1)).with_steps(2);
    let mut b = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1)).with_steps(2);
    a.start_step(0, t0);
    b.start_step(0, t0);
    a.record_step_client(0);
    a.record_step_ok(0, t0, at(t0, 2));
    b.record_step_client(0);
    b.record_step_ok(0, at(t0, 1), at(t0, 5));
    b.record_step_errors(0, 2, at(t0, 6));
    a.start_step(1, at(t0, 10));
    b.start_step(1, at(t0, 10));
    a.record_step_ok(1, at(t0, 10), at(t0, 30));
    // A step past the last is no step: ignored.
    a.record_step_ok(7, t0, t0);
    a.merge(b);
    let [first, second] = a.steps() else { panic!("two steps") };
    assert_eq!((first.ok, first.errors, first.clients), (2, 2, 2));
    assert_eq!((first.started, first.last_done), (Some(t0), Some(at(t0, 6))));
    assert_eq!(first.latency.len(), 2);
    assert!((3_990..=4_010).contains(&first.latency.max()));
    assert_eq!((second.requests(), second.started), (1, Some(at(t0, 10))));
    a.reset(at(t0, 40));
    assert!(a.steps().iter().all(|s| s.requests() == 0 && s.started.is_none()));
    assert_eq!(a.steps().len(), 2, "the steps are kept, emptied");
    let plain = Recorder::new(&[], t0, Duration::from_secs(1));
    let mut merged = plain.clone();
    merged.merge(a);
    assert_eq!(merged.steps().len(), 2, "a recorder without steps takes the other's");
}

#[test]
fn reset_forgets_warmup() {
    let t0 = Instant::now();
    let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    r.record_ok(OpKind::Put, t0, t0, at(t0, 1));
    r.reset(at(t0, 5));
    assert_eq!(r.requests(), 0);
    assert!(r.finish().is_empty());
}
