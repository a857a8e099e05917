//! The JSON contract: the output parses into mirror types declared here, every one with
//! `deny_unknown_fields` and every field required, so adding, renaming or removing a field
//! fails this test. When it fails, decide whether the change is compatible; if not, bump
//! `SCHEMA_VERSION`.
//!
//! The output leaves some fields out when they hold nothing ([`LEFT_OUT_WHEN_EMPTY`]). The
//! mirror still requires them: [`parse`] puts back the listed ones before reading, and
//! [`removing_any_field_fails_the_parse`] reads a report that has every field without that
//! help, so a field removed from the output fails the test wherever it stood.

use std::collections::BTreeMap;

use etcdlat_core::report::find_max::{BoundBy, CountReport, FindMaxReport};
use etcdlat_core::{Distribution, OpKind, ReportSet, WatchAccounting};
use etcdlat_render as render;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fixture::{
    full_report, mixed_interrupted_report, put_report, range_report, steps_report,
};

/// A field that is always written, possibly as `null`. A plain `Option` field would read a
/// missing field as `None`, and so hide its removal.
#[derive(Debug, Deserialize)]
struct Nullable<T>(Option<T>);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Top {
    schema_version: u32,
    etcdlat_version: String,
    runs: Vec<Run>,
    /// A `--find-max` search's answer, in its report files only.
    find_max: Nullable<FindMax>,
    /// The runs' cells over their repeats, when some cell ran more than once.
    repeats: Nullable<Repeats>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Repeats {
    order: String,
    sequence: Vec<usize>,
    confidence: f64,
    interval: String,
    cells: Vec<RepeatCell>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct RepeatCell {
    name: String,
    runs: Vec<usize>,
    /// dbtester's figures by key, each `null` when no repeat knew it.
    figures: BTreeMap<String, Nullable<Estimate>>,
    /// Each operation kind's throughput, p50, p99, p99_9 and errors.
    ops: BTreeMap<String, BTreeMap<String, Nullable<Estimate>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Estimate {
    values: Vec<f64>,
    mean: f64,
    median: f64,
    sd: Nullable<f64>,
    half_width: Nullable<f64>,
    low: Nullable<f64>,
    high: Nullable<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct FindMax {
    repeats: u32,
    met: Nullable<FindMaxCount>,
    missed: Nullable<FindMaxCount>,
    bound_by: Nullable<String>,
    gap: Nullable<f64>,
    scope: Nullable<Scope>,
    counts: Vec<FindMaxCount>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct FindMaxCount {
    nodes: u64,
    runs: u32,
    met: u32,
    bound_by: Vec<FindMaxBoundBy>,
    /// The spread of its runs' worst p99 against their limits: `[min, max]`.
    worst_p99_of_limit: Nullable<[f64; 2]>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct FindMaxBoundBy {
    what: String,
    runs: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Run {
    name: String,
    started_at: String,
    interrupted: bool,
    /// `--scale`'s factor, when the run was scaled.
    scale: Nullable<f64>,
    /// The run's place in its scenario's matrix, in runs of one.
    matrix: Nullable<Matrix>,
    duration_s: f64,
    interval_s: f64,
    params: Params,
    target: Target,
    ops: BTreeMap<String, Op>,
    /// Every operation together, in runs of more than one kind.
    all: Nullable<Op>,
    /// Each client step on its own, in runs with steps.
    steps: Vec<Step>,
    /// Watch accounting, in watch runs.
    watch: Nullable<Watch>,
    /// The HashKV comparison, when asked for.
    hashkv: Nullable<HashKv>,
    /// The consistency audit, when asked for.
    audit: Nullable<Audit>,
    /// The invariants the apiserver's requests checked, in runs that sent them.
    invariants: Nullable<Invariants>,
    /// The apiserver's requests by resource and verb, in runs that sent them.
    kubernetes: Nullable<Kubernetes>,
    /// Successful requests by the member that answered them.
    members: Vec<ServedBy>,
    /// Leader changes seen during the run.
    leader_changes: Vec<LeaderChange>,
    /// etcd's alarms raised when the run ended.
    alarms: Vec<Alarm>,
    /// The scenario's fault steps and what they did to the service.
    faults: Vec<Fault>,
    /// Server metrics per member, when scraped.
    server: Vec<Member>,
    /// The etcdlat process's own use.
    client: Nullable<Client>,
    /// How requests kept to a paced schedule.
    pacing: Nullable<Pacing>,
    /// The shards a merged report was made from.
    shards: Vec<Shard>,
    /// The scenario as run; its own layout is the scenario file format.
    scenario: serde_json::Value,
    /// dbtester's figures of the run, every one written (`null` when unknown).
    study: Study,
    /// Where the run crossed etcd's guidance, each once (empty when nowhere).
    findings: Vec<Finding>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Finding {
    /// `wal-fsync`, `backend-commit`, `quota`, `leader-changes`, `slow-applies`,
    /// `client-saturated`, `emulator-late`.
    kind: String,
    /// The member (a link for the emulator), `null` for the run as a whole.
    member: Nullable<String>,
    value: f64,
    guidance: f64,
    unit: String,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Study {
    total_s: Nullable<f64>,
    total_requests: Nullable<u64>,
    throughput_max_per_s: Nullable<f64>,
    throughput_avg_per_s: Nullable<f64>,
    throughput_min_per_s: Nullable<f64>,
    throughput_window_s: Nullable<f64>,
    latency_min_us: Nullable<u64>,
    latency_mean_us: Nullable<f64>,
    latency_max_us: Nullable<u64>,
    latency_p10_us: Nullable<u64>,
    latency_p25_us: Nullable<u64>,
    latency_p50_us: Nullable<u64>,
    latency_p75_us: Nullable<u64>,
    latency_p90_us: Nullable<u64>,
    latency_p95_us: Nullable<u64>,
    latency_p99_us: Nullable<u64>,
    latency_p99_9_us: Nullable<u64>,
    server_network_received_bytes: Nullable<u64>,
    server_network_sent_bytes: Nullable<u64>,
    client_network_received_bytes: Nullable<u64>,
    client_network_sent_bytes: Nullable<u64>,
    server_cpu_max_percent: Nullable<f64>,
    server_memory_max_bytes: Nullable<u64>,
    client_cpu_max_percent: Nullable<f64>,
    client_memory_max_bytes: Nullable<u64>,
    client_errors: Nullable<u64>,
    server_disk_reads_completed: Nullable<u64>,
    server_disk_sectors_read: Nullable<u64>,
    server_disk_writes_completed: Nullable<u64>,
    server_disk_sectors_written: Nullable<u64>,
    server_disk_space_avg_bytes: Nullable<u64>,
    /// Why each unknown figure is unknown, by its field name.
    unknown: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Resources {
    period_s: f64,
    samples: Vec<ResourceSample>,
    /// The samples outside the measurement, when any.
    outside: Vec<ResourceSample>,
    /// The sources without figures, when any.
    not_available: Vec<NotAvailable>,
    /// The block device of the disk figures, when read.
    disk: Nullable<Disk>,
}

/// A sample writes only the figures its source gives (a member's no `sent_bytes`, the
/// client's no disk figures).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct ResourceSample {
    t_s: f64,
    span_s: f64,
    cpu_percent: Nullable<f64>,
    cpu_max_percent: Nullable<f64>,
    rss_bytes: Nullable<u64>,
    down_s: Nullable<f64>,
    db_size_bytes: Nullable<u64>,
    grpc_sent_bytes: Nullable<u64>,
    grpc_received_bytes: Nullable<u64>,
    peer_sent_bytes: Nullable<u64>,
    peer_received_bytes: Nullable<u64>,
    leader: Nullable<bool>,
    wal_fsync_p99_us: Nullable<u64>,
    backend_commit_p99_us: Nullable<u64>,
    apply_p99_us: Nullable<u64>,
    peer_rtt_p99_us: Nullable<u64>,
    proposals_committed: Nullable<u64>,
    leader_changes: Nullable<u64>,
    sent_bytes: Nullable<u64>,
    received_bytes: Nullable<u64>,
    read_bytes: Nullable<u64>,
    write_bytes: Nullable<u64>,
    read_syscalls: Nullable<u64>,
    write_syscalls: Nullable<u64>,
    read_chars: Nullable<u64>,
    write_chars: Nullable<u64>,
    voluntary_ctxt_switches: Nullable<u64>,
    nonvoluntary_ctxt_switches: Nullable<u64>,
    data_dir_bytes: Nullable<u64>,
    wal_bytes: Nullable<u64>,
    snap_bytes: Nullable<u64>,
    disk_reads_completed: Nullable<u64>,
    disk_sectors_read: Nullable<u64>,
    disk_writes_completed: Nullable<u64>,
    disk_sectors_written: Nullable<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct NotAvailable {
    source: String,
    why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Disk {
    name: String,
    device: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Matrix {
    /// The value of each axis, by its dotted path, in the matrix's order.
    axes: serde_json::Map<String, Value>,
    repetition: u32,
    repeat: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Step {
    clients: u32,
    active_clients: u64,
    /// Requests asked for, in a step that ends by count.
    total: Nullable<u64>,
    /// Seconds given, in a step that ends by time.
    planned_s: Nullable<f64>,
    start_s: f64,
    duration_s: f64,
    ok: u64,
    errors_total: u64,
    throughput: f64,
    latency_us: Dist,
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
    uncertain_puts: u64,
    uncertain_events: u64,
    /// Events no put accounts for, when there were any.
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
    verdict: Nullable<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Alarm {
    member: String,
    alarm: String,
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
    member: Nullable<String>,
    what: String,
    at_s: f64,
    started_s: f64,
    finished_s: f64,
    resumed_s: Nullable<f64>,
    error: Nullable<String>,
    last_success_before_s: Nullable<f64>,
    first_success_after_s: Nullable<f64>,
    unavailable_s: f64,
    first_write_after_s: Nullable<f64>,
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
struct Invariants {
    unexpected_conflicts: u64,
    duplicate_creates: u64,
    list_order_violations: u64,
    list_count_mismatches: u64,
    watch_order_violations: u64,
    progress_regressions: u64,
    missing_prev_kvs: u64,
    cache_divergences: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Kubernetes {
    /// `[kubernetes] nodes`, in runs that modelled a cluster.
    nodes: Nullable<u64>,
    sustained: bool,
    requests: Vec<K8sRequest>,
    compacted: u64,
    /// The node leases' renewals, in runs that renewed any.
    node_leases: Nullable<NodeLeases>,
    /// What the verdict judged: etcd's side, under which apiserver model.
    scope: Scope,
    /// The store in steady state, in runs of a `[kubernetes]` model.
    steady_state: Nullable<SteadyState>,
    /// Each apiserver's watch of each cached resource.
    watch_streams: Vec<WatchStream>,
    /// The sizes each resource's objects were written with.
    object_sizes: Vec<ObjectSize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct ObjectSize {
    resource: String,
    mean_bytes: u64,
    min_bytes: u64,
    max_bytes: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Scope {
    /// Always `etcd`.
    side: String,
    /// The apiserver model assumed, in words.
    apiserver: String,
    /// etcd's share of the 1 s calls' SLO.
    etcd_share: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct SteadyState {
    history_writes: u64,
    preloaded_events: u64,
    preloaded_event_leases: u64,
    compactions: u64,
    compacted_revision: i64,
    leases_expired: u64,
    keys_expired: u64,
    largest_expiry_keys: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct WatchStream {
    apiserver: u32,
    resource: String,
    namespace: Nullable<String>,
    events: u64,
    progress_notifications: u64,
    compacted: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct NodeLeases {
    nodes: u64,
    max_gap_us: u64,
    p99_gap_us: u64,
    not_ready_after_s: f64,
    not_ready: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct K8sRequest {
    resource: String,
    /// `create`, `update`, `delete`, `get`, `list`, `count`, `consistent-list` or
    /// `watch`.
    verb: String,
    ok: u64,
    errors: BTreeMap<String, u64>,
    errors_total: u64,
    compacted: u64,
    latency_us: Dist,
    /// Null in rows not judged: watches (Kubernetes has no official watch SLO), counts and
    /// consistent-read probes (the apiserver's own calls).
    slo: Nullable<Slo>,
    /// Whether the verdict holds the row to an SLO.
    judged: bool,
    /// Keys etcd sent a list, on average; null in other rows.
    keys_per_list: Nullable<f64>,
    /// A list's pages as calls; null in other rows.
    page_calls: Nullable<PageCalls>,
    conflicts: u64,
    retries: u64,
    /// A list's successes by pages taken (empty for other verbs).
    pages: Vec<PageBucket>,
    /// A watch row's progress notifications and consistent reads' waits; null in others.
    progress: Nullable<Progress>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Progress {
    notifications: u64,
    waits: u64,
    wait_max_us: u64,
    wait_p99_us: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct PageCalls {
    pages: u64,
    over_limit: u64,
    slowest_p99_us: u64,
    slowest_max_us: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct PageBucket {
    pages_min: u64,
    pages_max: u64,
    count: u64,
    p99_us: u64,
    max_us: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Slo {
    /// `mutating`, `single-object read` or `list`.
    class: String,
    /// `request`, or `page` for a list (each page a call).
    per: String,
    limit_s: f64,
    /// What etcd's side is held to.
    etcd_limit_s: f64,
    /// `met`, `missed` or `no-successes`: etcd's side against `etcd_limit_s`.
    verdict: String,
    /// The same against the whole `limit_s`.
    whole_verdict: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Audit {
    issued: u64,
    audited: u64,
    limit: u64,
    writes: u64,
    failed_writes: u64,
    unknown_outcome: u64,
    first_revision: i64,
    last_revision: i64,
    keys_read_back: u64,
    puts_read_at_revision: u64,
    puts_compacted: u64,
    /// Why nothing could be read back, when so.
    read_back_error: Nullable<String>,
    lost: u64,
    order_violations: u64,
    duplicate_revisions: u64,
    stale_reads: u64,
    linearizable_reads: u64,
    serializable_reads: u64,
    /// When serializable reads were audited.
    serializable_staleness: Nullable<Staleness>,
    members: Vec<AuditMember>,
    violations: Vec<AuditViolation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Staleness {
    reads: u64,
    behind: u64,
    p50_revisions: u64,
    p99_revisions: u64,
    max_revisions: u64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct AuditMember {
    name: String,
    id: String,
    staleness: Staleness,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct AuditViolation {
    check: String,
    op: String,
    /// Absent for a request on a range of keys.
    key: Nullable<u64>,
    revision: i64,
    other_revision: i64,
    sent_s: f64,
    done_s: f64,
    member: String,
    detail: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Member {
    name: String,
    url: String,
    samples: u32,
    failed_samples: u32,
    last_error: Nullable<String>,
    rss_avg_bytes: Nullable<u64>,
    rss_max_bytes: Nullable<u64>,
    cpu_s: Nullable<f64>,
    db_size_bytes: Nullable<u64>,
    quota_backend_bytes: Nullable<u64>,
    wal_fsync_p50_us: Nullable<u64>,
    wal_fsync_p99_us: Nullable<u64>,
    backend_commit_p50_us: Nullable<u64>,
    backend_commit_p99_us: Nullable<u64>,
    proposals_committed: Nullable<u64>,
    proposals_failed: Nullable<u64>,
    proposals_pending_max: Nullable<u64>,
    leader_changes: Nullable<u64>,
    slow_applies: Nullable<u64>,
    peer_sent_bytes: Nullable<u64>,
    peer_received_bytes: Nullable<u64>,
    grpc_sent_bytes: Nullable<u64>,
    grpc_received_bytes: Nullable<u64>,
    not_exported: Vec<String>,
    /// The resource series, when sampled.
    resources: Nullable<Resources>,
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
    worker_cpu_s: Nullable<f64>,
    busy: Nullable<Busy>,
    sent_bytes: Nullable<u64>,
    received_bytes: Nullable<u64>,
    cpu_max_percent: Nullable<f64>,
    voluntary_ctxt_switches: Nullable<u64>,
    nonvoluntary_ctxt_switches: Nullable<u64>,
    /// The resource series, when sampled.
    resources: Nullable<Resources>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Busy {
    process: f64,
    worker_max: Nullable<f64>,
    worker_peak: Nullable<f64>,
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
    total: Nullable<u64>,
    duration_s: Nullable<f64>,
    warmup_s: f64,
    key_size: Nullable<u64>,
    val_size: Nullable<u64>,
    key_space_size: Nullable<u64>,
    sequential_keys: Nullable<bool>,
    consistency: Nullable<String>,
    seed: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Target {
    endpoints: Vec<String>,
    local: bool,
    etcd_version: String,
    /// The Go the members' etcd was built with; left out when not known.
    go_version: Nullable<String>,
    members: u32,
    leader: String,
    cluster_id: String,
    /// How the load's members were chosen, when by role or name.
    targeting: Nullable<String>,
    /// Those members' names.
    targeted: Vec<String>,
    network: Nullable<NetworkMirror>,
    source_addresses: Vec<String>,
    machine: Nullable<MachineMirror>,
}

/// The machine the run ran on.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct MachineMirror {
    cpus: u32,
    memory_bytes: Nullable<u64>,
    memory_available_bytes: Nullable<u64>,
    load_average: Nullable<[f64; 3]>,
    kernel: String,
    client_cpus: Vec<usize>,
    emulator_cpus: Vec<usize>,
    member_cpus: Vec<usize>,
    shared_cpus: Nullable<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct NetworkMirror {
    /// The `[network]` table as run; its own layout is the scenario file format.
    config: Value,
    summary: String,
    links: Vec<Link>,
    /// The emulator's own CPU, left out of the client's; written when the network was
    /// emulated by etcdlat.
    emulator: Nullable<Emulator>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Emulator {
    user_cpu_s: f64,
    system_cpu_s: f64,
    voluntary_ctxt_switches: u64,
    nonvoluntary_ctxt_switches: u64,
    /// Its threads were scheduled real-time.
    realtime: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Link {
    from: String,
    to: String,
    latency_us: u64,
    jitter_us: u64,
    bandwidth_bytes_per_s: Nullable<u64>,
    bytes: u64,
    late_p50_us: Nullable<u64>,
    late_p99_us: Nullable<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "fields exist to lock the layout")]
struct Op {
    ok: u64,
    errors: BTreeMap<String, u64>,
    /// A message per error code, for codes whose failures carried one.
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
    /// Failed compares of the apiserver's updates and deletes.
    conflicts: u64,
    /// Pages of the apiserver's lists.
    pages: u64,
    /// How long the requests abandoned at the end had been out, when any were.
    abandoned_us: Nullable<Dist>,
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

#[test]
fn client_steps_are_written_each_on_its_own_and_read_back() {
    let set = ReportSet::new(vec![steps_report()]);
    let top = parse(&set);
    let steps = &top.runs[0].steps;
    let figures: Vec<(u32, u64, Option<u64>, u64, u64)> = steps
        .iter()
        .map(|s| (s.clients, s.active_clients, s.total.0, s.ok, s.errors_total))
        .collect();
    assert_eq!(
        figures,
        [(1, 1, Some(200), 200, 0), (4, 4, Some(800), 800, 0), (16, 16, Some(1_601), 1_600, 1)]
    );
    assert!(steps.iter().all(|s| s.planned_s.0.is_none() && s.latency_us.count == s.ok));
    // Each step's figures are its own: throughput over its own time, from its own start.
    assert!(
        steps.windows(2).all(|w| w[1].throughput > w[0].throughput && w[1].start_s > w[0].start_s)
    );
    assert!((steps[0].throughput - 1_000.0).abs() < 1.0, "{}", steps[0].throughput);
    assert_eq!(steps[0].start_s, 0.0);
    assert!(steps.windows(2).all(|w| w[1].latency_us.p99 > w[0].latency_us.p99));
    let back: ReportSet = serde_json::from_str(&render::json(&set)).expect("the output reads back");
    assert_eq!(back, set);
    // A run without steps writes none, so its layout is unchanged.
    assert!(!render::json(&sample_set()).contains("\"steps\""));
}

/// The fields the output leaves out when they hold nothing (`None`, empty, a count of 0), by
/// the object they belong to; [`empty`] is what each stands for then.
const LEFT_OUT_WHEN_EMPTY: [(&str, &[&str]); 17] = [
    ("top", &["find_max", "repeats"]),
    (
        "run",
        &[
            "scale",
            "matrix",
            "all",
            "steps",
            "watch",
            "hashkv",
            "audit",
            "invariants",
            "kubernetes",
            "members",
            "leader_changes",
            "alarms",
            "faults",
            "pacing",
            "server",
            "client",
            "shards",
        ],
    ),
    ("op", &["error_messages", "abandoned_us"]),
    ("watch", &["uncertain_puts", "uncertain_events", "unexplained"]),
    ("pacing", &["verdict"]),
    ("fault", &["member", "resumed_s", "error"]),
    ("server", &["last_error", "not_exported", "resources"]),
    (
        "client",
        &[
            "worker_cpu_s",
            "busy",
            "sent_bytes",
            "received_bytes",
            "cpu_max_percent",
            "voluntary_ctxt_switches",
            "nonvoluntary_ctxt_switches",
            "resources",
        ],
    ),
    ("resources", &["outside", "not_available", "disk"]),
    (
        "sample",
        &[
            "cpu_percent",
            "cpu_max_percent",
            "rss_bytes",
            "down_s",
            "db_size_bytes",
            "grpc_sent_bytes",
            "grpc_received_bytes",
            "peer_sent_bytes",
            "peer_received_bytes",
            "sent_bytes",
            "received_bytes",
            "read_bytes",
            "write_bytes",
            "read_syscalls",
            "write_syscalls",
            "read_chars",
            "write_chars",
            "voluntary_ctxt_switches",
            "nonvoluntary_ctxt_switches",
            "data_dir_bytes",
            "wal_bytes",
            "snap_bytes",
            "disk_reads_completed",
            "disk_sectors_read",
            "disk_writes_completed",
            "disk_sectors_written",
            "leader",
            "wal_fsync_p99_us",
            "backend_commit_p99_us",
            "apply_p99_us",
            "peer_rtt_p99_us",
            "proposals_committed",
            "leader_changes",
        ],
    ),
    ("busy", &["worker_max", "worker_peak"]),
    ("target", &["go_version", "targeting", "targeted", "network", "source_addresses", "machine"]),
    (
        "machine",
        &[
            "memory_bytes",
            "memory_available_bytes",
            "load_average",
            "client_cpus",
            "emulator_cpus",
            "member_cpus",
            "shared_cpus",
        ],
    ),
    ("network", &["emulator"]),
    ("audit", &["read_back_error", "serializable_staleness", "members", "violations"]),
    ("violation", &["key"]),
    ("kubernetes", &["nodes", "node_leases", "steady_state"]),
];

/// What a field left out stands for.
fn empty(field: &str) -> Value {
    match field {
        "members" | "leader_changes" | "alarms" | "faults" | "server" | "shards" | "targeted"
        | "violations" | "source_addresses" | "not_exported" | "not_available" | "outside"
        | "client_cpus" | "emulator_cpus" | "member_cpus" | "steps" => {
            json!([])
        }
        "error_messages" => json!({}),
        "uncertain_puts" | "uncertain_events" | "unexplained" => json!(0),
        _ => Value::Null,
    }
}

/// Puts back the fields of `object` (of the kind `kind`) that the output left out.
fn put_back(kind: &str, object: Option<&mut Value>) {
    let Some(object) = object.and_then(Value::as_object_mut) else { return };
    let (_, fields) = LEFT_OUT_WHEN_EMPTY.iter().find(|(k, _)| *k == kind).expect("a listed kind");
    for field in *fields {
        // A sample's figures are all numbers or flags (its `leader_changes` a count, not
        // the run's list of them).
        object
            .entry(*field)
            .or_insert_with(|| if kind == "sample" { Value::Null } else { empty(field) });
    }
}

/// The JSON output with every field [`LEFT_OUT_WHEN_EMPTY`] put back where it was left out.
fn with_left_out_fields(mut json: Value) -> Value {
    put_back("top", Some(&mut json));
    for run in json["runs"].as_array_mut().into_iter().flatten() {
        put_back("run", Some(run));
        for op in run["ops"].as_object_mut().into_iter().flat_map(|ops| ops.values_mut()) {
            put_back("op", Some(op));
        }
        put_back("op", run.get_mut("all"));
        put_back("watch", run.get_mut("watch"));
        put_back("kubernetes", run.get_mut("kubernetes"));
        put_back("pacing", run.get_mut("pacing"));
        put_back("client", run.get_mut("client"));
        put_back("busy", run.get_mut("client").and_then(|c| c.get_mut("busy")));
        put_back_resources(run.get_mut("client").and_then(|c| c.get_mut("resources")));
        put_back("target", run.get_mut("target"));
        if let Some(machine) = run["target"].get_mut("machine").filter(|m| m.is_object()) {
            put_back("machine", Some(machine));
        }
        if let Some(network) = run["target"].get_mut("network").filter(|n| n.is_object()) {
            put_back("network", Some(network));
        }
        if let Some(audit) = run.get_mut("audit").filter(|a| a.is_object()) {
            for violation in audit["violations"].as_array_mut().into_iter().flatten() {
                put_back("violation", Some(violation));
            }
            put_back("audit", Some(audit));
        }
        for fault in run["faults"].as_array_mut().into_iter().flatten() {
            put_back("fault", Some(fault));
        }
        for member in run["server"].as_array_mut().into_iter().flatten() {
            put_back("server", Some(member));
            put_back_resources(member.get_mut("resources"));
        }
    }
    json
}

/// Puts back the fields a resource series and its samples left out.
fn put_back_resources(resources: Option<&mut Value>) {
    let Some(resources) = resources.filter(|r| r.is_object()) else { return };
    for part in ["samples", "outside"] {
        // Not `resources[part]`, which would put a null where a part was left out.
        let samples = resources.get_mut(part).and_then(Value::as_array_mut);
        for sample in samples.into_iter().flatten() {
            put_back("sample", Some(sample));
        }
    }
    put_back("resources", Some(resources));
}

fn parse(set: &ReportSet) -> Top {
    let json = render::json(set);
    let value = serde_json::from_str(&json).expect("the output is JSON");
    serde_json::from_value(with_left_out_fields(value))
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
    assert_eq!(top.runs[0].params.key_space_size.0, Some(10_000));
    assert_eq!(top.runs[1].params.consistency.0.as_deref(), Some("s"));
    assert!(top.runs[1].target.local);
    assert_eq!(top.runs[1].target.targeting.0.as_deref(), Some("all"));
    assert_eq!(top.runs[1].target.targeted, ["m0", "m1", "m2"]);
    assert_eq!(top.runs[1].scale.0, Some(0.1));
    assert_eq!((top.runs[0].scale.0, top.runs[0].target.targeting.0.as_deref()), (None, None));
    assert!(top.runs[0].scenario.is_object());
    // Server metrics and client usage are left out when not measured.
    assert!(top.runs[0].server.is_empty() && top.runs[0].client.0.is_none());
    let members: Vec<&str> = top.runs[1].server.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(members, ["m0", "m1", "m2"]);
    assert_eq!(top.runs[1].server[2].db_size_bytes.0, None);
    assert_eq!(top.runs[1].client.0.as_ref().map(|c| c.max_rss_bytes), Some(48 << 20));
    assert_eq!(top.runs[1].faults.len(), 1);
    assert_eq!(top.runs[1].faults[0].action, "pause");
    assert!(top.runs[0].faults.is_empty());
}

#[test]
fn a_run_of_a_matrix_records_its_cell_in_order() {
    let set = ReportSet::new(vec![full_report(), put_report()]);
    let json = render::json(&set);
    let top = parse(&set);
    let cell = top.runs[0].matrix.0.as_ref().expect("the matrix run's cell is written");
    assert_eq!(cell.axes.get("op.put.val-size"), Some(&json!(256)));
    assert_eq!(cell.axes.get("load.clients"), Some(&json!(10)));
    assert_eq!(cell.axes.len(), 2);
    // Written in the matrix's order, not sorted: the first axis is a heatmap's rows.
    let at = |axis: &str| json.find(&format!("\"{axis}\": ")).expect("the axis is written");
    assert!(at("op.put.val-size") < at("load.clients"), "{json}");
    assert_eq!((cell.repetition, cell.repeat), (2, 3));
    assert!(top.runs[1].matrix.0.is_none());
    assert_eq!(json.matches("\"matrix\"").count(), 1, "left out of a run of no matrix");
    let back: ReportSet = serde_json::from_str(&json).expect("the output reads back");
    assert_eq!(back.runs[0].matrix, set.runs[0].matrix);
    let order: Vec<&str> =
        back.runs[0].matrix.as_ref().unwrap().axes.keys().map(String::as_str).collect();
    assert_eq!(order, ["op.put.val-size", "load.clients"], "read back in order");
}

/// The apiserver's requests are written by resource and verb, each with its SLO verdict, and
/// read back as they were.
#[test]
fn kubernetes_requests_are_written_by_resource_and_verb() {
    let set = ReportSet::new(vec![full_report(), put_report()]);
    let top = parse(&set);
    let k = top.runs[0].kubernetes.0.as_ref().expect("written for a run that sent them");
    let rows: Vec<(&str, &str, u64, u64, &str)> = k
        .requests
        .iter()
        .map(|r| {
            let verdict = r.slo.0.as_ref().map_or("none", |slo| &*slo.verdict);
            (&*r.resource, &*r.verb, r.ok, r.errors_total, verdict)
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("events", "create", 0, 3, "no-successes"),
            ("leases", "update", 100, 0, "met"),
            ("pods", "update", 50, 0, "met"),
            ("pods", "list", 6, 1, "missed"),
            ("pods", "count", 4, 0, "none"),
            ("pods", "watch", 40, 1, "none"),
        ]
    );
    // Counts and watches are reported, not judged; the rest judged.
    let judged: Vec<bool> = k.requests.iter().map(|r| r.judged).collect();
    assert_eq!(judged, [true, true, true, true, false, false]);
    // etcd held to its share (0.25) of the 1 s calls', beside the whole second.
    let renewals = k.requests[1].slo.0.as_ref().expect("updates have an SLO");
    assert_eq!((renewals.limit_s, renewals.etcd_limit_s, &*renewals.per), (1.0, 0.25, "request"));
    assert_eq!((&*renewals.verdict, &*renewals.whole_verdict), ("met", "met"));
    assert_eq!((k.scope.side.as_str(), k.scope.etcd_share), ("etcd", 0.25));
    assert!(k.scope.apiserver.contains("3 apiservers"), "{}", k.scope.apiserver);
    // Each page a call: 2 of the 24 pages over 30 s miss the list SLO per page, though
    // no list's p99 is judged whole.
    let pages = k.requests[3].page_calls.0.as_ref().expect("a list's pages");
    assert_eq!((pages.pages, pages.over_limit, pages.slowest_max_us / 1_000_000), (24, 2, 31));
    assert!(k.requests.iter().filter(|r| r.verb != "list").all(|r| r.page_calls.0.is_none()));
    // 12,000 keys over its 6 lists.
    assert_eq!(k.requests[3].keys_per_list.0, Some(2000.0));
    let others = k.requests.iter().filter(|r| r.verb != "list");
    assert!(others.map(|r| &r.keys_per_list.0).all(Option::is_none), "only lists have them");
    let update = &k.requests[2];
    assert_eq!((update.conflicts, update.retries, update.latency_us.count), (5, 5, 50));
    let list_slo = k.requests[3].slo.0.as_ref().expect("lists have an SLO");
    assert_eq!((list_slo.class.as_str(), list_slo.limit_s), ("list", 30.0));
    assert_eq!((list_slo.per.as_str(), list_slo.etcd_limit_s), ("page", 30.0));
    assert_eq!(k.requests[0].errors.get("DeadlineExceeded"), Some(&3));
    // Lists of 1, 2, 3, 4 and twice 7 pages: buckets 1, 2, 3-4 and 5-8.
    let buckets: Vec<(u64, u64, u64)> =
        k.requests[3].pages.iter().map(|b| (b.pages_min, b.pages_max, b.count)).collect();
    assert_eq!(buckets, [(1, 1, 1), (2, 2, 1), (3, 4, 2), (5, 8, 2)]);
    assert!(k.requests[3].pages.iter().all(|b| b.p99_us <= b.max_us && b.max_us > 20_000_000));
    assert!(k.requests[2].pages.is_empty(), "updates have no pages");
    // The list that failed on a compacted revision is counted apart, and among its errors.
    assert_eq!((k.requests[3].compacted, k.requests[3].errors.get("OutOfRange")), (1, Some(&1)));
    assert_eq!((k.compacted, k.requests[0].compacted), (2, 0));
    // The watch: its own writes' lag, a cache cancelled by a compaction, its progress.
    let watch = &k.requests[5];
    assert_eq!((watch.compacted, watch.errors.get("OutOfRange")), (1, Some(&1)));
    assert_eq!((watch.latency_us.count, watch.latency_us.max / 1_000), (40, 9));
    let progress = watch.progress.0.as_ref().expect("the watch's progress");
    assert_eq!((progress.notifications, progress.waits), (12, 5));
    assert_eq!(progress.wait_max_us / 100_000, 25);
    assert!(k.requests[..5].iter().all(|r| r.progress.0.is_none()), "only watches have it");
    // Each apiserver's watch of pods (the third's of one namespace), with the events etcd
    // sent it.
    let streams: Vec<_> = k
        .watch_streams
        .iter()
        .map(|w| {
            let stream = (w.apiserver, w.resource.as_str(), w.namespace.0.as_deref());
            (stream, (w.events, w.progress_notifications, w.compacted))
        })
        .collect();
    assert_eq!(
        streams,
        [
            ((0, "pods", None), (55, 12, 1)),
            ((1, "pods", None), (55, 0, 0)),
            ((2, "pods", Some("ns-0")), (20, 0, 0))
        ]
    );
    let leases = k.node_leases.0.as_ref().expect("renewals were recorded");
    assert_eq!((leases.nodes, leases.not_ready, leases.not_ready_after_s), (4, 2, 40.0));
    assert_eq!(leases.max_gap_us / 1_000_000, 60, "the lease never renewed: the whole run");
    assert_eq!((k.nodes.0, k.sustained), (Some(4), false), "lists missed their SLO");
    // The steady state: two compactions, three leases expired, 30 keys, 12 at once.
    let steady = k.steady_state.0.as_ref().expect("a model's run has its steady state");
    assert_eq!((steady.history_writes, steady.preloaded_events), (300, 1200));
    assert_eq!((steady.compactions, steady.compacted_revision), (2, 4321));
    assert_eq!(
        (steady.leases_expired, steady.keys_expired, steady.largest_expiry_keys),
        (3, 30, 12)
    );
    // The sizes the verdict assumed: pods drawn from 4 to 100 KB, a mean of 13.2 KB; nodes
    // fixed.
    let sizes: Vec<(&str, u64, u64, u64)> = k
        .object_sizes
        .iter()
        .map(|s| (s.resource.as_str(), s.mean_bytes, s.min_bytes, s.max_bytes))
        .collect();
    assert_eq!(sizes[0], ("minions", 15_360, 15_360, 15_360));
    assert!(sizes.contains(&("pods", 13_225, 4_000, 100_000)), "{sizes:?}");
    assert!(top.runs[1].kubernetes.0.is_none(), "left out of a run that sent none");
    let back: ReportSet = serde_json::from_str(&render::json(&set)).expect("the output reads back");
    assert_eq!(back.runs[0].kubernetes, set.runs[0].kubernetes);
}

/// A search's answer: 150 nodes met 3 of 3, 162 missed 2 of 3, bound by the pods' list
/// pages.
fn find_max() -> FindMaxReport {
    let count = |nodes, runs, met, bound: &[(&str, u32)], spread| CountReport {
        nodes,
        runs,
        met,
        bound_by: bound
            .iter()
            .map(|&(what, runs)| BoundBy { what: what.to_owned(), runs })
            .collect(),
        worst_p99_of_limit: spread,
    };
    let met = count(150, 3, 3, &[], Some([0.41, 0.63]));
    let missed = count(162, 3, 1, &[("pods list page p99", 2)], Some([0.9, 1.2]));
    let too_large = count(300, 1, 0, &[("cannot run", 1)], None);
    FindMaxReport {
        repeats: 3,
        bound_by: Some("pods list page p99".to_owned()),
        gap: Some(12.0 / 150.0),
        scope: full_report().kubernetes.map(|k| k.scope),
        counts: vec![met.clone(), missed.clone(), too_large],
        met: Some(met),
        missed: Some(missed),
    }
}

/// A `--find-max` search's answer is written beside its runs and read back; other report
/// files have none.
#[test]
fn a_search_writes_its_bracket_beside_its_runs() {
    let mut set = ReportSet::new(vec![full_report()]);
    set.find_max = Some(find_max());
    let top = parse(&set);
    let fm = top.find_max.0.as_ref().expect("written");
    assert_eq!((fm.repeats, fm.bound_by.0.as_deref()), (3, Some("pods list page p99")));
    let met = fm.met.0.as_ref().expect("a count met");
    let missed = fm.missed.0.as_ref().expect("a count missed");
    assert_eq!((met.nodes, met.runs, met.met), (150, 3, 3));
    assert_eq!((missed.nodes, missed.runs, missed.met), (162, 3, 1));
    assert_eq!((&*missed.bound_by[0].what, missed.bound_by[0].runs), ("pods list page p99", 2));
    assert_eq!(met.worst_p99_of_limit.0, Some([0.41, 0.63]));
    assert_eq!(fm.counts.len(), 3);
    assert_eq!(fm.counts[2].worst_p99_of_limit.0, None, "a count never run has no spread");
    assert_eq!(fm.scope.0.as_ref().map(|s| s.side.as_str()), Some("etcd"));
    let back: ReportSet = serde_json::from_str(&render::json(&set)).expect("the output reads back");
    assert_eq!(back.find_max, set.find_max);
    let plain = render::json(&ReportSet::new(vec![full_report()]));
    assert!(!plain.contains("\"find_max\""), "left out of other report files");
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
    let watch = parse(&set).runs.remove(0).watch.0.expect("the watch accounting is written");
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

/// The objects of a report's JSON whose keys are data (operation kinds, error codes, member
/// names), not fields.
const MAPS: [&str; 6] =
    ["/ops", "/errors", "/error_messages", "/hashkv/members", "/unknown", "/matrix/axes"];

/// Every field of the contract in `value`, as (JSON pointer of its object, field): the
/// fields of every object and of the first element of every array, except inside the
/// scenario, whose layout is the scenario file format.
fn fields(value: &Value, pointer: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(object) => {
            let is_map = MAPS.iter().any(|map| pointer.ends_with(map));
            for (key, child) in object {
                if !is_map {
                    out.push((pointer.to_owned(), key.clone()));
                }
                // The scenario and a network's config keep the scenario file's own layout.
                if key != "scenario" && key != "config" {
                    fields(child, &format!("{pointer}/{key}"), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                fields(first, &format!("{pointer}/0"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn removing_any_field_fails_the_parse() {
    let mut set = ReportSet::new(vec![full_report()]);
    set.find_max = Some(find_max());
    let mut json: Value = serde_json::from_str(&render::json(&set)).expect("the output is JSON");
    // One run has no repeats; their fields are held by
    // `repeats_are_written_with_each_figure_over_the_repeats`.
    json.as_object_mut().expect("an object").insert("repeats".to_owned(), Value::Null);
    let full: Top = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("a report with every part has every field: {e}"));
    let run = &full.runs[0];
    assert!(run.all.0.is_some() && run.watch.0.is_some() && !run.shards.is_empty());
    assert!(!run.steps.is_empty());

    let mut every = Vec::new();
    fields(&json, "", &mut every);
    for (pointer, field) in &every {
        let mut cut = json.clone();
        let object = cut.pointer_mut(pointer).and_then(Value::as_object_mut).expect("an object");
        object.remove(field);
        let err = serde_json::from_value::<Top>(cut)
            .expect_err(&format!("{pointer}/{field} removed, and the report still reads"));
        assert!(
            err.to_string().contains(&format!("missing field `{field}`")),
            "{pointer}/{field} removed: {err}"
        );
    }
    // Each mirror type's fields, once: the run, its params, target, ops, distributions,
    // intervals, watch, HashKV, members, leader changes, faults and their windows, pacing,
    // server metrics, client and shards.
    assert!(every.len() > 150, "only {} fields found", every.len());
    for field in [
        "verdict",
        "nonvoluntary_ctxt_switches",
        "system_cpu_s",
        "worker_cpu_s",
        "worker_peak",
        "last_error",
        "uncertain_puts",
        "p99_9",
        "hdr",
        "read_back_error",
        "p99_ms",
        "other_revision",
        "active_clients",
        "planned_s",
        "disk_sectors_written",
        "sent_bytes",
        "not_available",
        "server_disk_space_avg_bytes",
        "guidance",
        "quota_backend_bytes",
        "slow_applies",
    ] {
        assert!(every.iter().any(|(_, f)| f == field), "{field} is not among {every:?}");
    }
}

/// Two cells of a matrix, two repeats each, run in rotation: the set says the order and
/// each cell's figures over its repeats (each repeat's value, mean, median, interval), every
/// one of dbtester's figures and each operation's; a run of no repeats writes none.
#[test]
fn repeats_are_written_with_each_figure_over_the_repeats() {
    let run = |clients: i64, repetition: u32, throughput: f64| {
        let mut r = put_report();
        let axes: toml::Table = toml::from_str(&format!("\"load.clients\" = {clients}\n")).unwrap();
        r.name = format!("m [clients={clients}] #{repetition}");
        r.matrix = Some(etcdlat_core::MatrixCell { axes, repetition, repeat: 2 });
        r.ops.get_mut(&OpKind::Put).unwrap().throughput = throughput;
        r
    };
    let set = ReportSet::new(vec![
        run(1, 1, 1_000.0),
        run(10, 1, 5_000.0),
        run(1, 2, 1_100.0),
        run(10, 2, 5_400.0),
    ]);
    let top = parse(&set);
    let repeats = top.repeats.0.as_ref().expect("repeats are written");
    assert_eq!(repeats.order, "interleaved");
    assert_eq!(repeats.sequence, [0, 1, 0, 1]);
    assert_eq!(repeats.confidence, 0.95);
    assert!(repeats.interval.contains("Student's t"), "{}", repeats.interval);
    let names: Vec<&str> = repeats.cells.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["m [clients=1]", "m [clients=10]"]);
    assert_eq!(repeats.cells[1].runs, [1, 3]);
    let cell = &repeats.cells[1];
    assert_eq!(cell.figures.len(), etcdlat_core::Row::ALL.len());
    let avg = cell.figures["throughput_avg_per_s"].0.as_ref().expect("known");
    assert_eq!(avg.values, [5_000.0, 5_400.0]);
    assert_eq!((avg.mean, avg.median), (5_200.0, 5_200.0));
    // sd = 282.84; t(0.975, 1) = 12.706: the half width is 12.706 · 282.84 / √2 = 2541.2.
    let half = avg.half_width.0.expect("two repeats have an interval");
    assert!((half - 2_541.24).abs() < 0.1, "{half}");
    assert_eq!(avg.low.0, Some(5_200.0 - half));
    assert_eq!(avg.high.0, Some(5_200.0 + half));
    let put = &cell.ops["put"];
    let keys: Vec<&str> = put.keys().map(String::as_str).collect();
    assert_eq!(keys, ["errors", "p50", "p99", "p99_9", "throughput"]);
    assert_eq!(put["throughput"].0.as_ref().unwrap().values, [5_000.0, 5_400.0]);
    assert!(put["p99"].0.as_ref().unwrap().values.len() == 2);

    // Every field of the repeats, its cells and estimates is required.
    let json: Value = serde_json::from_str(&render::json(&set)).unwrap();
    let estimate = "/repeats/cells/0/figures/throughput_avg_per_s";
    for pointer in ["/repeats", "/repeats/cells/0", estimate] {
        let keys: Vec<String> =
            json.pointer(pointer).unwrap().as_object().unwrap().keys().cloned().collect();
        for field in keys {
            let mut cut = json.clone();
            cut.pointer_mut(pointer).unwrap().as_object_mut().unwrap().remove(&field);
            let err = serde_json::from_value::<Top>(cut)
                .expect_err(&format!("{pointer}/{field} removed, and the report still reads"));
            assert!(err.to_string().contains(&format!("missing field `{field}`")), "{err}");
        }
    }
    // One run a cell: no repeats.
    assert!(!render::json(&sample_set()).contains("\"repeats\""));
}
