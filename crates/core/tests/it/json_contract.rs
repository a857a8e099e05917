//! The JSON contract: the output parses into mirror types declared here, every one with
//! `deny_unknown_fields`, so adding, renaming or removing a field fails this test. When it
//! fails, decide whether the change is compatible; if not, bump `SCHEMA_VERSION`.

use std::collections::BTreeMap;

use etcdlat_core::render;
use etcdlat_core::{Distribution, OpKind, ReportSet, WatchAccounting};
use serde::Deserialize;

use crate::fixture::{mixed_interrupted_report, put_report, range_report};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Top {
    schema_version: u32,
    etcdlat_version: String,
    runs: Vec<Run>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Run {
    name: String,
    started_at: String,
    interrupted: bool,
    duration_s: f64,
    params: Params,
    target: Target,
    ops: BTreeMap<String, Op>,
    /// Every operation together, in runs of more than one kind.
    #[serde(default)]
    all: Option<Op>,
    /// Watch accounting, in watch runs.
    #[serde(default)]
    watch: Option<Watch>,
    /// The HashKV comparison, when asked for.
    #[serde(default)]
    hashkv: Option<HashKv>,
    /// Successful requests by the member that answered them.
    #[serde(default)]
    members: Vec<ServedBy>,
    /// Leader changes seen during the run.
    #[serde(default)]
    leader_changes: Vec<LeaderChange>,
    /// The scenario's fault steps and what they did to the service.
    #[serde(default)]
    faults: Vec<Fault>,
    /// Server metrics per member, when scraped.
    #[serde(default)]
    server: Vec<Member>,
    /// The etcdlat process's own use.
    #[serde(default)]
    client: Option<Client>,
    /// How requests kept to a paced schedule.
    #[serde(default)]
    pacing: Option<Pacing>,
    /// The shards a merged report was made from.
    #[serde(default)]
    shards: Vec<Shard>,
    /// The scenario as run; its own layout is the scenario file format.
    scenario: serde_json::Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Watch {
    streams: u64,
    watchers: u64,
    puts: u64,
    expected: u64,
    received: u64,
    missing: u64,
    duplicate: u64,
    out_of_order: u64,
    before_ack: u64,
    /// Puts of unknown outcome and the most events they made, when there were any.
    #[serde(default)]
    uncertain_puts: u64,
    #[serde(default)]
    uncertain_events: u64,
    /// Events no put accounts for, when there were any.
    #[serde(default)]
    unexplained: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct ServedBy {
    name: String,
    id: String,
    ok: u64,
    throughput: f64,
    latency_us: Dist,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Pacing {
    schedule: String,
    arrivals: String,
    target_rate: f64,
    achieved_rate: f64,
    paced: u64,
    late: u64,
    lateness_us: Dist,
    timer_lateness_us: Dist,
    #[serde(default)]
    verdict: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct LeaderChange {
    t_s: f64,
    from: String,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Fault {
    step: usize,
    action: String,
    #[serde(default)]
    member: Option<String>,
    what: String,
    at_s: f64,
    started_s: f64,
    finished_s: f64,
    #[serde(default)]
    resumed_s: Option<f64>,
    #[serde(default)]
    error: Option<String>,
    last_success_before_s: Option<f64>,
    first_success_after_s: Option<f64>,
    unavailable_s: f64,
    first_write_after_s: Option<f64>,
    before: FaultWindow,
    during: FaultWindow,
    after: FaultWindow,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct FaultWindow {
    from_s: f64,
    to_s: f64,
    ok: u64,
    errors: u64,
    throughput: f64,
    p50_us: u64,
    p99_us: u64,
    max_us: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct HashKv {
    revision: i64,
    compact_revision: i64,
    members: BTreeMap<String, u32>,
    consistent: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Member {
    name: String,
    url: String,
    samples: u32,
    failed_samples: u32,
    #[serde(default)]
    last_error: Option<String>,
    rss_avg_bytes: Option<u64>,
    rss_max_bytes: Option<u64>,
    cpu_s: Option<f64>,
    db_size_bytes: Option<u64>,
    wal_fsync_p50_us: Option<u64>,
    wal_fsync_p99_us: Option<u64>,
    backend_commit_p50_us: Option<u64>,
    backend_commit_p99_us: Option<u64>,
    proposals_committed: Option<u64>,
    proposals_failed: Option<u64>,
    proposals_pending_max: Option<u64>,
    leader_changes: Option<u64>,
    peer_sent_bytes: Option<u64>,
    peer_received_bytes: Option<u64>,
    grpc_sent_bytes: Option<u64>,
    grpc_received_bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Shard {
    name: String,
    started_at: String,
    duration_s: f64,
    clients: u32,
    conns: u32,
    ok: u64,
    errors_total: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Client {
    user_cpu_s: f64,
    system_cpu_s: f64,
    max_rss_bytes: u64,
    #[serde(default)]
    worker_cpu_s: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Params {
    op: String,
    conns: u32,
    clients: u32,
    workers: u32,
    rate: u64,
    total: Option<u64>,
    duration_s: Option<f64>,
    warmup_s: f64,
    key_size: Option<u64>,
    val_size: Option<u64>,
    key_space_size: Option<u64>,
    sequential_keys: Option<bool>,
    consistency: Option<String>,
    seed: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Target {
    endpoints: Vec<String>,
    local: bool,
    etcd_version: String,
    members: u32,
    leader: String,
    cluster_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Op {
    ok: u64,
    errors: BTreeMap<String, u64>,
    /// A message per error code, for codes whose failures carried one.
    #[serde(default)]
    error_messages: BTreeMap<String, String>,
    errors_total: u64,
    duration_s: f64,
    throughput: f64,
    latency_us: Dist,
    service_time_us: Dist,
    clamped: u64,
    keys: u64,
    value_bytes: u64,
    retries: u64,
    intervals: Vec<Interval>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Dist {
    count: u64,
    min: u64,
    mean: f64,
    stddev: f64,
    max: u64,
    p10: u64,
    p25: u64,
    p50: u64,
    p75: u64,
    p90: u64,
    p95: u64,
    p99: u64,
    p99_9: u64,
    p99_99: u64,
    p99_999: u64,
    p100: u64,
    hdr: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Interval {
    t_s: f64,
    count: u64,
    errors: u64,
    min_us: u64,
    mean_us: f64,
    p50_us: u64,
    p90_us: u64,
    p99_us: u64,
    max_us: u64,
}

fn sample_set() -> ReportSet {
    ReportSet::new(vec![put_report(), range_report(), mixed_interrupted_report()])
}

fn parse(set: &ReportSet) -> Top {
    let json = render::json(set);
    serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("the JSON output left the contract: {e}\n{json}"))
}

#[test]
fn output_has_exactly_the_contract_layout() {
    let set = sample_set();
    let top = parse(&set);
    assert_eq!(top.schema_version, 1);
    assert_eq!(top.etcdlat_version, set.etcdlat_version);
    assert_eq!(top.runs.len(), 3);
    let names: Vec<&str> = top.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["put-256b", "range-s", "mixed"]);
    assert_eq!(top.runs[2].ops.keys().collect::<Vec<_>>(), ["put", "range"]);
    assert_eq!(top.runs[0].params.key_space_size, Some(10_000));
    assert_eq!(top.runs[1].params.consistency.as_deref(), Some("s"));
    assert!(top.runs[1].target.local);
    assert!(top.runs[0].scenario.is_object());
    // Server metrics and client usage are left out when not measured.
    assert!(top.runs[0].server.is_empty() && top.runs[0].client.is_none());
    let members: Vec<&str> = top.runs[1].server.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(members, ["m0", "m1", "m2"]);
    assert_eq!(top.runs[1].server[2].db_size_bytes, None);
    assert_eq!(top.runs[1].client.as_ref().map(|c| c.max_rss_bytes), Some(48 << 20));
    assert_eq!(top.runs[1].faults.len(), 1);
    assert_eq!(top.runs[1].faults[0].action, "pause");
    assert!(top.runs[0].faults.is_empty());
}

#[test]
fn reports_without_server_metrics_still_read() {
    // A report written before `server` and `client` existed.
    let mut json: serde_json::Value =
        serde_json::from_str(&render::json(&ReportSet::new(vec![range_report()])))
            .expect("the output is JSON");
    let run = json["runs"][0].as_object_mut().expect("a run is an object");
    assert!(run.remove("server").is_some() && run.remove("client").is_some());
    let back: ReportSet = serde_json::from_value(json).expect("an older report reads");
    assert!(back.runs[0].server.is_empty());
    assert_eq!(back.runs[0].client, None);
}

#[test]
fn error_messages_are_written_per_code_and_read_back() {
    let set = sample_set();
    let json = render::json(&set);
    let top = parse(&set);
    let messages = &top.runs[0].ops["put"].error_messages;
    assert_eq!(
        messages.iter().map(|(c, m)| (c.as_str(), m.as_str())).collect::<Vec<_>>(),
        [("InvalidArgument", "etcdserver: request is too large")]
    );
    // A code without a message, and an op without any, write nothing.
    assert!(top.runs[0].ops["put"].errors.contains_key("Unavailable"));
    assert!(top.runs[1].ops["range"].error_messages.is_empty());
    assert_eq!(json.matches("\"error_messages\"").count(), 2, "put-256b and mixed's put");

    let back: ReportSet = serde_json::from_str(&json).expect("the output reads back");
    assert_eq!(
        back.runs[0].op(OpKind::Put).error_messages,
        set.runs[0].op(OpKind::Put).error_messages
    );
    assert_eq!(
        back.runs[0].op(OpKind::Put).error_messages["InvalidArgument"],
        "etcdserver: request is too large"
    );

    // A report written before messages existed reads, with none.
    let mut value: serde_json::Value = serde_json::from_str(&json).expect("the output is JSON");
    let put = value["runs"][0]["ops"]["put"].as_object_mut().expect("an op is an object");
    assert!(put.remove("error_messages").is_some());
    let older: ReportSet = serde_json::from_value(value).expect("an older report reads");
    assert!(older.runs[0].op(OpKind::Put).error_messages.is_empty());
}

#[test]
fn watch_accounting_is_written_and_read_back() {
    let mut report = range_report();
    report.watch = Some(WatchAccounting {
        streams: 4,
        watchers: 100,
        puts: 31,
        expected: 310,
        received: 391,
        uncertain_puts: 9,
        uncertain_events: 90,
        unexplained: 1,
        ..WatchAccounting::default()
    });
    let set = ReportSet::new(vec![report]);
    let watch = parse(&set).runs.remove(0).watch.expect("the watch accounting is written");
    assert_eq!(
        (watch.uncertain_puts, watch.uncertain_events, watch.unexplained),
        (9, 90, 1),
        "{watch:?}"
    );
    let json = render::json(&set);
    let back: ReportSet = serde_json::from_str(&json).expect("the output reads back");
    assert_eq!(back.runs[0].watch, set.runs[0].watch);

    // Counts that are usually 0 are left out then, so a normal run's layout is unchanged...
    let mut normal = set.clone();
    let w = normal.runs[0].watch.as_mut().unwrap();
    (w.uncertain_puts, w.uncertain_events, w.unexplained) = (0, 0, 0);
    let json = render::json(&normal);
    let value: serde_json::Value = serde_json::from_str(&json).expect("the output is JSON");
    let written = value["runs"][0]["watch"].as_object().expect("the accounting is an object");
    for field in ["uncertain_puts", "uncertain_events", "unexplained"] {
        assert!(!written.contains_key(field), "{field} written as 0: {written:?}");
    }
    assert!(written.contains_key("missing"), "the other counts are always written");
    // ... and a report written before they existed reads, with them 0.
    let older: ReportSet = serde_json::from_str(&json).expect("an older report reads");
    assert_eq!(older.runs[0].watch, normal.runs[0].watch);
}

#[test]
fn every_request_is_in_the_intervals() {
    for run in parse(&sample_set()).runs {
        for (name, op) in &run.ops {
            let in_intervals: u64 = op.intervals.iter().map(|i| i.count + i.errors).sum();
            assert_eq!(op.ok + op.errors_total, in_intervals, "{} {name}", run.name);
            assert_eq!(op.errors.values().sum::<u64>(), op.errors_total, "{} {name}", run.name);
            assert_eq!(op.latency_us.count, op.ok, "{} {name}", run.name);
        }
    }
}

#[test]
fn hdr_decodes_to_the_same_histogram() {
    let set = sample_set();
    let top = parse(&set);
    for (run, report) in top.runs.iter().zip(&set.runs) {
        for (kind, op) in &report.ops {
            let parsed = &run.ops[kind.name()];
            let latency =
                Distribution::decode(&parsed.latency_us.hdr).expect("latency hdr decodes");
            let service =
                Distribution::decode(&parsed.service_time_us.hdr).expect("service hdr decodes");
            assert_eq!(latency, op.latency, "{} {kind}", report.name);
            assert_eq!(service, op.service_time, "{} {kind}", report.name);
            assert_eq!(latency.quantile_us(0.99), parsed.latency_us.p99);
            assert_eq!(latency.max_us(), parsed.latency_us.max);
        }
    }
}

#[test]
fn report_set_reads_back_equal() {
    let set = sample_set();
    let back: ReportSet = serde_json::from_str(&render::json(&set)).expect("the output reads back");
    assert_eq!(back, set);
    assert_eq!(back.runs[2].op(OpKind::Range).ok, 0);
}

#[test]
fn merged_reports_keep_the_contract() {
    let set = sample_set();
    let merged = etcdlat_core::merge(&[set.clone(), set]).expect("a set merges with itself");
    let top = parse(&merged);
    let shards: Vec<(&str, u64)> =
        top.runs[1].shards.iter().map(|s| (s.name.as_str(), s.ok)).collect();
    assert_eq!(shards, [("shard 1", 1_500), ("shard 2", 1_500)]);
    assert_eq!(top.runs[1].ops["range"].ok, 3_000);
}
