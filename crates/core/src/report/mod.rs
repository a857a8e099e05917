//! Reports: plain data built from merged recorders, serialized as the JSON contract.
//!
//! A [`ReportSet`] is what a command writes (`schema_version`, `etcdlat_version`, `runs`);
//! each [`Report`] is one run of one scenario.

mod distribution;
pub mod find_max;
pub mod finding;
pub mod kubernetes;
mod machine;
mod network;
mod op;
mod step;
pub mod study;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::audit::AuditReport;
use crate::fault::FaultReport;
use crate::invariant::InvariantReport;
use crate::metrics::{ClientUsage, MemberMetrics};
use crate::op::OpKind;
use crate::scenario::{MatrixCell, Scenario, Targeting};
pub use distribution::round3;

pub use distribution::{Distribution, QUANTILES};
pub use finding::{Finding, FindingKind};
pub use machine::Machine;
pub use network::{EmulatorUsage, LATE_FLOOR_US, LinkReport, NetworkReport};
pub use op::{Interval, OpReport};
pub use step::StepReport;
pub use study::{Row, Study, Unit};

/// Version of the JSON layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The version of etcdlat that made a report.
pub const ETCDLAT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Every run of one command: the top level of the JSON output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReportSet {
    /// Layout version, [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// etcdlat version that wrote the file.
    pub etcdlat_version: String,
    /// One report per run, in the order run.
    pub runs: Vec<Report>,
    /// A `--find-max` search's answer, when the runs were its probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find_max: Option<find_max::FindMaxReport>,
}

impl ReportSet {
    /// A set holding `runs`, stamped with this version.
    #[must_use]
    pub fn new(runs: Vec<Report>) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            etcdlat_version: ETCDLAT_VERSION.to_owned(),
            runs,
            find_max: None,
        }
    }
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// Scenario name.
    pub name: String,
    /// When measurement started, RFC 3339, UTC.
    pub started_at: String,
    /// The run was stopped early (Ctrl-C or the caller's shutdown); figures cover what ran.
    pub interrupted: bool,
    /// The factor the scenario's totals and durations were multiplied by to make this run
    /// (`etcdlat run --scale`, [`Scenario::scaled`]); absent when it ran as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Where the run stands in its scenario's `[matrix]`: the value each axis took and which
    /// repetition of that combination it is ([`Scenario::matrix_cell`]); absent for a run
    /// of no matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<MatrixCell>,
    /// Measured wall time, seconds (after connecting and warm-up).
    pub duration_s: f64,
    /// Length of one interval of the time series (`ops.*.intervals`), seconds: the
    /// scenario's `[report] interval`, or chosen from the run's length. Absent (0) in reports
    /// that predate it, whose scenario gives it; see [`Report::interval`].
    #[serde(default)]
    pub interval_s: f64,
    /// The load and workload parameters the run used.
    pub params: Params,
    /// What the run measured against.
    pub target: TargetInfo,
    /// Results per operation kind, keyed by name (`put`, `range`).
    pub ops: BTreeMap<OpKind, OpReport>,
    /// Every operation together, when the run has more than one kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<OpReport>,
    /// Each client step on its own, in order, when the run had steps
    /// (`load.client-steps`, [`crate::step`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepReport>,
    /// Watch accounting (watch workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchAccounting>,
    /// The HashKV comparison across members, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashkv: Option<HashKvCheck>,
    /// The consistency audit, when asked for ([`crate::audit`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditReport>,
    /// The invariants the apiserver's requests (`k8s-*`) checked while the run went
    /// ([`crate::invariant`]); absent when it sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariants: Option<InvariantReport>,
    /// The apiserver's requests (`k8s-*`) by resource and verb, against Kubernetes' SLOs
    /// ([`kubernetes`]); absent when the run sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<kubernetes::KubernetesReport>,
    /// Successful requests per member that answered them (from response headers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberReport>,
    /// Leader changes seen during the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leader_changes: Vec<LeaderChange>,
    /// etcd's alarms raised when the run ended (read from the cluster after it): NOSPACE
    /// when a member's database reached its quota, CORRUPT.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<AlarmReport>,
    /// The scenario's fault steps, each with what it did to the service
    /// ([`crate::fault`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultReport>,
    /// How requests kept to the schedule, when a rate paced them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<PacingReport>,
    /// Every member's server metrics over the run, in member-list order (empty when none
    /// were scraped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<MemberMetrics>,
    /// What the etcdlat process itself used during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientUsage>,
    /// The shards this report was merged from ([`mod@crate::merge`]), each with its own figures;
    /// empty for a run measured by one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardInfo>,
    /// The scenario as run.
    pub scenario: Scenario,
}

/// An alarm raised in the cluster (etcd's `Maintenance.Alarm` list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlarmReport {
    /// The member that raised it (its name; its id in hex when unnamed or unknown).
    pub member: String,
    /// The alarm: `NOSPACE` (the database reached its quota: writes are refused until it
    /// is compacted, defragmented and the alarm disarmed) or `CORRUPT`.
    pub alarm: String,
}

/// One shard of a merged report: what one machine (or process) measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// The shard's label: the report file it was read from.
    pub name: String,
    /// When its measurement started, RFC 3339, UTC.
    pub started_at: String,
    /// Its measured wall time, seconds.
    pub duration_s: f64,
    /// Its logical clients.
    pub clients: u32,
    /// Its gRPC connections.
    pub conns: u32,
    /// Its successful requests, all kinds.
    pub ok: u64,
    /// Its failed requests, all kinds.
    pub errors_total: u64,
}

impl Report {
    /// A report of `scenario` run with `params` against `target`, with nothing measured yet:
    /// no operations, no time, every optional section absent. The driver fills it in; a
    /// report read back from etcdlat's JSON needs no constructor (it is `Deserialize`).
    #[must_use]
    pub fn new(scenario: Scenario, params: Params, target: TargetInfo) -> Self {
        Self {
            name: scenario.name.clone(),
            started_at: String::new(),
            interrupted: false,
            scale: None,
            matrix: scenario.matrix_cell.clone(),
            duration_s: 0.0,
            interval_s: 0.0,
            params,
            target,
            ops: BTreeMap::new(),
            all: None,
            steps: Vec::new(),
            watch: None,
            hashkv: None,
            audit: None,
            invariants: None,
            kubernetes: None,
            members: Vec::new(),
            leader_changes: Vec::new(),
            alarms: Vec::new(),
            faults: Vec::new(),
            pacing: None,
            server: Vec::new(),
            client: None,
            shards: Vec::new(),
            scenario,
        }
    }

    /// Length of one interval of the time series: `interval_s`, or for a report that
    /// predates it its scenario's `[report] interval` (then always set), else 1 s.
    #[must_use]
    pub fn interval(&self) -> Duration {
        if self.interval_s > 0.0 {
            Duration::from_secs_f64(self.interval_s)
        } else {
            self.scenario.report.interval.unwrap_or(Duration::from_secs(1))
        }
    }

    /// How the load's members were chosen: the driver's targeting as recorded, else (for
    /// reports that predate the record, or the endpoints as given) the scenario's.
    #[must_use]
    pub fn targeting(&self) -> &Targeting {
        match &self.target.targeting {
            Targeting::Endpoints => &self.scenario.target,
            t => t,
        }
    }

    /// The results of one operation kind.
    ///
    /// # Panics
    /// When the run sent no request of that kind; use [`Report::try_op`] to check.
    #[must_use]
    pub fn op(&self, kind: OpKind) -> &OpReport {
        self.try_op(kind).unwrap_or_else(|| panic!("the run has no {kind} requests"))
    }

    /// The results of one operation kind, if the run sent any.
    #[must_use]
    pub fn try_op(&self, kind: OpKind) -> Option<&OpReport> {
        self.ops.get(&kind)
    }

    /// Why the figures may be the client's rather than the server's, with what to change,
    /// when a worker thread was saturated ([`crate::ClientUsage::saturated`]) or a paced
    /// schedule fell behind (started under 99% of the requests it asked for; its verdict
    /// says who held it back).
    #[must_use]
    pub fn client_limit(&self) -> Option<String> {
        let busy = self.client.as_ref().filter(|c| c.saturated()).and_then(|c| {
            let peak = c.busy.as_ref()?.worker_peak?;
            Some(format!("a worker thread was {:.0}% busy in its busiest second", peak * 100.0))
        });
        let behind = self
            .pacing
            .as_ref()
            .and_then(|p| p.verdict.as_ref())
            .map(|verdict| format!("the schedule fell behind ({verdict})"));
        let why = match (busy, behind) {
            (Some(a), Some(b)) => format!("{a} and {b}"),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return None,
        };
        Some(format!(
            "the figures may be the client's, not etcd's: {why}; add worker threads (--workers, \
             --pin-cpus), put fewer clients on each connection, or split the load over machines \
             (--shard, then `etcdlat merge`)"
        ))
    }

    /// Why the figures may be the emulated network's rather than etcd's, when a link
    /// delivered later than it should at p99 ([`NetworkReport::late_links`]), naming the
    /// links.
    #[must_use]
    pub fn network_limit(&self) -> Option<String> {
        let network = self.target.network.as_ref()?;
        let late = network.late_links();
        if late.is_empty() {
            return None;
        }
        let links: Vec<String> = late
            .iter()
            .map(|l| {
                format!(
                    "{} -> {} {} µs late at p99 (bound {} µs)",
                    l.from,
                    l.to,
                    l.late_p99_us.unwrap_or_default(),
                    l.late_bound_us()
                )
            })
            .collect();
        let ordinary = if network.emulator.is_some_and(|e| !e.realtime) {
            "; its threads ran at ordinary priority, waiting for cores the members and the \
             client kept busy (run etcdlat as root or with CAP_SYS_NICE, and they run ahead of \
             them)"
        } else {
            ""
        };
        Some(format!(
            "the latency may be the emulated network's, not etcd's: it delivered later than its \
             links' latency allows on {}{ordinary}; run fewer clients or connections through \
             it, or shape a real network (toxiproxy with --endpoints)",
            links.join(", ")
        ))
    }

    /// Requests issued, all kinds: ok plus errors.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.ops.values().map(|o| o.ok + o.errors_total).sum()
    }

    /// Successful requests, all kinds.
    #[must_use]
    pub fn ok(&self) -> u64 {
        self.ops.values().map(|o| o.ok).sum()
    }

    /// Failed requests, all kinds.
    #[must_use]
    pub fn errors_total(&self) -> u64 {
        self.ops.values().map(|o| o.errors_total).sum()
    }

    /// Checks the run failed, in words (empty when all passed): a HashKV mismatch, watch
    /// events missing, duplicated or out of order, audit violations (each of the first
    /// offending requests on a line of its own).
    #[must_use]
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(h) = &self.hashkv
            && !h.consistent
        {
            let hashes: Vec<String> = h.members.iter().map(|(m, v)| format!("{m}={v}")).collect();
            out.push(format!(
                "HashKV differs across members at revision {}: {}",
                h.revision,
                hashes.join(", ")
            ));
        }
        if let Some(w) = &self.watch
            && (w.missing > 0 || w.duplicate > 0 || w.out_of_order > 0 || w.unexplained > 0)
        {
            out.push(format!(
                    "watch events: {} expected, {} received, {} missing, {} duplicate, {} out of order, {} unexplained",
                    w.expected, w.received, w.missing, w.duplicate, w.out_of_order, w.unexplained
                ));
        }
        if let Some(a) = &self.audit {
            out.extend(a.failures());
        }
        if let Some(i) = &self.invariants {
            out.extend(i.failures());
        }
        out
    }
}

/// The requests one member answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberReport {
    /// Member name (its id in hex when unnamed or unknown).
    pub name: String,
    /// Member id, hex, as in response headers.
    pub id: String,
    /// Successful requests it answered.
    pub ok: u64,
    /// Those per second of measured wall time.
    pub throughput: f64,
    /// Their latency, microseconds.
    #[serde(rename = "latency_us")]
    pub latency: Distribution,
}

/// How requests kept to a paced schedule, and whether the client kept up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacingReport {
    /// `closed` (a capped closed loop) or `open`.
    pub schedule: String,
    /// `constant` or `poisson` (open loop).
    pub arrivals: String,
    /// The rate asked for, requests per second (the mean over stages).
    pub target_rate: f64,
    /// Requests started per second: the starts after the first over the time from the first
    /// start to the last (the rate itself when on schedule).
    pub achieved_rate: f64,
    /// Requests the schedule started.
    pub paced: u64,
    /// Of those, started more than 1 ms after their intended start.
    pub late: u64,
    /// Actual send minus intended start, microseconds.
    #[serde(rename = "lateness_us")]
    pub lateness: Distribution,
    /// How late etcdlat woke for the slots it slept until (its own timer and scheduler
    /// lateness), microseconds.
    #[serde(rename = "timer_lateness_us")]
    pub timer_lateness: Distribution,
    /// Who held the rate back, in words, when the target was not reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// A change of leader seen during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderChange {
    /// When it was seen, seconds since measurement started.
    pub t_s: f64,
    /// The leader before.
    pub from: String,
    /// The leader after.
    pub to: String,
}

/// Every event a watch run expected, and what arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WatchAccounting {
    /// Watch streams.
    pub streams: u64,
    /// Watchers created.
    pub watchers: u64,
    /// Puts made on watched keys (acknowledged).
    pub puts: u64,
    /// Events expected: for every put, one per watcher of its key.
    pub expected: u64,
    /// Events received.
    pub received: u64,
    /// Expected events that never arrived.
    pub missing: u64,
    /// Events that arrived more than once on the same watcher.
    pub duplicate: u64,
    /// Events that arrived on a watcher after an event of a later revision.
    pub out_of_order: u64,
    /// Events that arrived before the put's response did (watch-latency).
    pub before_ack: u64,
    /// Puts whose outcome is unknown: they failed with an error that does not say whether
    /// etcd applied them (a timeout, a lost connection, a cancellation), or were still in
    /// flight when the run stopped. Not in `puts` or `expected`; their events, when they
    /// were applied, are in `received`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncertain_puts: u64,
    /// The most events the `uncertain_puts` could have made: the watchers of their keys,
    /// summed. An upper bound: only those etcd applied made any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncertain_events: u64,
    /// Events seen (`received` less `duplicate`) beyond `expected + uncertain_events`: events
    /// that no put of the run accounts for. Always 0 unless something is wrong (another
    /// writer with values like this run's on its keys, or a bug).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unexplained: u64,
}

impl WatchAccounting {
    /// Adds `other`'s counts to these (the accounting of two sets of watchers and puts that
    /// do not see each other's events, as shards' do).
    pub fn add(&mut self, other: &Self) {
        // Destructured so that a new field cannot be forgotten here.
        let Self {
            streams,
            watchers,
            puts,
            expected,
            received,
            missing,
            duplicate,
            out_of_order,
            before_ack,
            uncertain_puts,
            uncertain_events,
            unexplained,
        } = other;
        self.streams += streams;
        self.watchers += watchers;
        self.puts += puts;
        self.expected += expected;
        self.received += received;
        self.missing += missing;
        self.duplicate += duplicate;
        self.out_of_order += out_of_order;
        self.before_ack += before_ack;
        self.uncertain_puts += uncertain_puts;
        self.uncertain_events += uncertain_events;
        self.unexplained += unexplained;
    }
}

/// Whether a count is zero: counts that are usually zero are left out of the JSON then.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// HashKV of every member at one revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HashKvCheck {
    /// The revision hashed.
    pub revision: i64,
    /// The compact revision each member reported.
    pub compact_revision: i64,
    /// Hash per member name.
    pub members: BTreeMap<String, u32>,
    /// All members agree.
    pub consistent: bool,
}

/// The parameters of a run, flattened for tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[non_exhaustive]
pub struct Params {
    /// Operation name (`put`, `range`).
    pub op: String,
    /// gRPC connections.
    pub conns: u32,
    /// Logical clients.
    pub clients: u32,
    /// Worker threads the clients ran on.
    pub workers: u32,
    /// Target rate in requests per second; 0 = unlimited.
    pub rate: u64,
    /// Requests asked for, if bounded by count (client steps: theirs together).
    pub total: Option<u64>,
    /// Time asked for in seconds, if bounded by time (client steps: theirs together).
    pub duration_s: Option<f64>,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// Key size, bytes (put).
    pub key_size: Option<u64>,
    /// Value size, bytes (put; the apiserver's objects' mean when drawn from a
    /// distribution, which `kubernetes.object_sizes` states).
    pub val_size: Option<u64>,
    /// Distinct keys (put).
    pub key_space_size: Option<u64>,
    /// Sequential keys (put).
    pub sequential_keys: Option<bool>,
    /// `l` or `s` (range).
    pub consistency: Option<String>,
    /// Seed of values and random keys.
    pub seed: u64,
}

/// What a run measured against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[non_exhaustive]
pub struct TargetInfo {
    /// Endpoints the connections were opened to.
    pub endpoints: Vec<String>,
    /// A throwaway local cluster started for the run.
    pub local: bool,
    /// etcd server version, from Status.
    pub etcd_version: String,
    /// The Go toolchain the members' etcd was built with (`go1.26.8`), from their
    /// `/metrics` (`go_info`); several, comma-separated, when members differ; empty when
    /// not known (no member's `/metrics` answered, or a report that predates it). Two
    /// builds of one etcd version by different compilers are different servers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub go_version: String,
    /// Members in the cluster.
    pub members: u32,
    /// Name of the leader member (its id in hex if unnamed).
    pub leader: String,
    /// How the load's members were chosen, when by role or name (`leader`, `followers`,
    /// `follower:N`, `member:NAME`, `all`); absent for the endpoints as given.
    #[serde(default, skip_serializing_if = "crate::scenario::is_default")]
    pub targeting: Targeting,
    /// The names of the members the load went to when chosen by role or name, in the order
    /// of `endpoints` (each member's client URL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targeted: Vec<String>,
    /// Cluster id, hex.
    pub cluster_id: String,
    /// The network the run had, when one was set (emulated for a local cluster, or driven
    /// through toxiproxy); `None`: loopback, or whatever lies between client and cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkReport>,
    /// The loopback addresses connections came from, when one address had too few ephemeral
    /// ports for the connections to one member; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_addresses: Vec<String>,
    /// The machine the client ran on, read when the run started; `None` in reports that
    /// predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
}

impl TargetInfo {
    /// The server, for headers that tell runs apart: `etcd 3.7.3 (go1.26.8)`, `etcd 3.7.3`
    /// when the Go version is not known, `etcd unknown` when neither is.
    #[must_use]
    pub fn server_summary(&self) -> String {
        match (self.etcd_version.as_str(), self.go_version.as_str()) {
            ("", "") => "etcd unknown".to_owned(),
            ("", go) => format!("etcd unknown ({go})"),
            (v, "") => format!("etcd {v}"),
            (v, go) => format!("etcd {v} ({go})"),
        }
    }

    /// Whether `self` and `other` ran different servers: another etcd version, or the same
    /// built by another Go.
    #[must_use]
    pub fn other_server(&self, other: &Self) -> bool {
        self.etcd_version != other.etcd_version || self.go_version != other.go_version
    }

    /// Where the load went when its members were chosen by role or name, for people:
    /// `leader (member m0 at http://127.0.0.1:2379)`, or `followers (members m1 at ..., m2
    /// at ...; leader m0)`; `None` for the endpoints as given.
    #[must_use]
    pub fn role_summary(&self) -> Option<String> {
        if self.targeting == Targeting::Endpoints || self.targeted.is_empty() {
            return None;
        }
        let members: Vec<String> = self
            .targeted
            .iter()
            .zip(&self.endpoints)
            .map(|(name, url)| format!("{name} at {url}"))
            .collect();
        let s = if members.len() == 1 { "" } else { "s" };
        let leader = if self.targeting == Targeting::Leader || self.leader.is_empty() {
            String::new()
        } else {
            format!("; leader {}", self.leader)
        };
        Some(format!("{} (member{s} {}{leader})", self.targeting, members.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::ErrorCode;
    use crate::recorder::Recorder;
    use std::time::Instant;

    #[test]
    fn failed_checks_are_named() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        r.record_ok(OpKind::Put, t0, t0, t0 + Duration::from_millis(1));
        let (_, rec) = r.finish().remove(0);
        let mut report = Report {
            name: "r".into(),
            started_at: String::new(),
            interrupted: false,
            scale: None,
            matrix: None,
            duration_s: 1.0,
            interval_s: 1.0,
            params: Params::default(),
            target: TargetInfo::default(),
            ops: [(
                OpKind::Put,
                OpReport::from_record(&rec, Duration::from_secs(1), Duration::from_secs(1)),
            )]
            .into(),
            all: None,
            steps: Vec::new(),
            watch: Some(WatchAccounting { expected: 10, received: 10, ..Default::default() }),
            audit: None,
            invariants: None,
            kubernetes: None,
            hashkv: Some(HashKvCheck {
                revision: 7,
                members: [("m0".to_owned(), 1), ("m1".to_owned(), 1)].into(),
                consistent: true,
                ..Default::default()
            }),
            server: Vec::new(),
            client: None,
            members: Vec::new(),
            leader_changes: Vec::new(),
            alarms: Vec::new(),
            faults: Vec::new(),
            pacing: None,
            shards: Vec::new(),
            scenario: Scenario::new(crate::Operation::Put(crate::PutOp::default())),
        };
        assert!(report.failures().is_empty());
        report.hashkv.as_mut().unwrap().consistent = false;
        report.watch.as_mut().unwrap().missing = 2;
        let failures = report.failures();
        assert_eq!(failures.len(), 2);
        assert!(
            failures[0].starts_with("HashKV differs across members at revision 7"),
            "{failures:?}"
        );
        assert!(failures[1].contains("2 missing"), "{failures:?}");
    }

    #[test]
    fn op_report_accounts_for_every_request() {
        let t0 = Instant::now();
        let mut r = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
        for i in 0..10u64 {
            let done = t0 + Duration::from_millis(300 * i + 1);
            r.record_ok(
                OpKind::Put,
                done - Duration::from_micros(500),
                done - Duration::from_micros(500),
                done,
            );
        }
        r.record_error(OpKind::Put, ErrorCode::InvalidArgument, t0 + Duration::from_millis(10));
        let (_, rec) = r.finish().remove(0);
        let op = OpReport::from_record(&rec, Duration::from_secs(3), Duration::from_secs(1));
        assert_eq!(op.ok, 10);
        assert_eq!(op.errors_total, 1);
        assert_eq!(op.errors_of(ErrorCode::InvalidArgument), 1);
        assert!((op.throughput - 10.0 / 3.0).abs() < 1e-9);
        assert_eq!(op.intervals.len(), 3);
        assert_eq!(op.intervals.iter().map(|i| i.count + i.errors).sum::<u64>(), 11);
        assert_eq!(op.intervals[1].t_s, 1.0);
        assert!(op.intervals.iter().all(|i| (495..=505).contains(&i.p50_us)));
    }

    /// A server is its etcd version and the Go that built it: the same version by another
    /// compiler is another server, and the header says both.
    #[test]
    fn servers_are_told_apart_by_version_and_go() {
        let target = |etcd: &str, go: &str| TargetInfo {
            etcd_version: etcd.to_owned(),
            go_version: go.to_owned(),
            ..TargetInfo::default()
        };
        let debian = target("3.4.23", "go1.19.8");
        assert_eq!(debian.server_summary(), "etcd 3.4.23 (go1.19.8)");
        assert_eq!(target("3.7.3", "").server_summary(), "etcd 3.7.3");
        assert_eq!(target("", "").server_summary(), "etcd unknown");
        assert_eq!(target("", "go1.26.8").server_summary(), "etcd unknown (go1.26.8)");
        assert!(!debian.other_server(&target("3.4.23", "go1.19.8")));
        assert!(debian.other_server(&target("3.4.23", "go1.26.8")));
        assert!(debian.other_server(&target("3.7.3", "go1.19.8")));
    }
}
