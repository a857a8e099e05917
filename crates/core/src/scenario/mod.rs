//! The scenario model: what to run, against what, with how much load.
//!
//! A scenario is read from TOML (kebab-case keys, unknown keys rejected) or built in code,
//! and validated once; [`Scenario::from_toml_str`] never returns an invalid scenario.
//!
//! ```toml
//! name = "put-256b"
//! description = "256 B puts, one client"
//!
//! target = "leader"               # where the load goes (default: the endpoints as given)
//! thresholds = ['p99 < "20ms"', "errors == 0"]   # exit 1 when not met
//!
//! [cluster]
//! endpoints = ["127.0.0.1:2379"]   # absent: a throwaway local etcd
//!
//! [load]
//! conns = 1
//! clients = 1
//! total = 10000                    # and/or duration = "30s"
//! rate = 0                         # requests per second, 0 = no limit
//!
//! [op.put]
//! key-size = 8
//! val-size = 256
//! key-space-size = 10000
//! sequential-keys = true
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fault::FaultStep;
use crate::schedule::{Arrivals, Rate, Schedule, Stage};
use crate::unit;
#[cfg(test)]
use crate::workload::Consistency;
use crate::workload::{InvalidParam, Operation, PutOp, Weighted};

/// The most logical clients one run may have.
pub const MAX_CLIENTS: u32 = 10_000_000;

/// The most gRPC connections one run may open.
pub const MAX_CONNS: u32 = 100_000;

/// The longest duration any field may hold (ten years of 365 days): longer ones are typos,
/// and past a point no clock can add them to "now".
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// A validated description of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Scenario {
    /// Short name, used in reports and tables. Defaults to the operation's name.
    #[serde(default)]
    pub name: String,
    /// What the scenario measures and which published figure it mirrors, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Which members the load goes to.
    #[serde(default, skip_serializing_if = "is_default")]
    pub target: Targeting,
    /// Conditions the run must meet, like `p99 < "20ms"` or `put.error_rate < 0.001`
    /// ([`crate::threshold`]); one that is not met fails the run (exit 1), see
    /// [`crate::Report::violations`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<String>,
    /// The etcd cluster to run against.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cluster: Cluster,
    /// How much load, for how long.
    #[serde(default)]
    pub load: Load,
    /// The operation every request performs (or use `mix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<Operation>,
    /// A weighted mix of request operations (instead of `op`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mix: Vec<Weighted>,
    /// Data written before the run, not measured (for example the keys a range reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Setup>,
    /// Background compaction during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// Checks after the run.
    #[serde(default, skip_serializing_if = "is_default")]
    pub checks: Checks,
    /// Scripted faults during the run (`[[faults]]`): kill, pause, resume or restart a
    /// member, move the leader, compact, defragment; see [`crate::fault`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultStep>,
    /// Axes over any parameter, by dotted path (`"load.clients" = [1, 1000]`); every
    /// combination is one run ([`Scenario::expand`]).
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub matrix: toml::Table,
    /// How results are reported.
    #[serde(default)]
    pub report: ReportOptions,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// The etcd cluster a scenario runs against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Cluster {
    /// gRPC endpoints, `host:port` or `http://host:port`. Empty: start a throwaway local
    /// cluster from the `etcd` binary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// Members of the throwaway local cluster (only when no endpoints are given). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<u32>,
    /// How long to wait for each connection to be established. Default 5 s.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,
    /// TLS: PEM file with the authorities that sign the members' certificates (as
    /// `--cacert`). Relative paths are read from the scenario file's directory. Any TLS
    /// flag on the command line replaces all four TLS settings here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
    /// TLS: PEM file with the client's certificate, for members that ask for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// TLS: PEM file with the client's private key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// TLS: accept any server certificate (encrypted, not authenticated).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls_verify: bool,
    /// The etcd user to authenticate as. Its password never goes in a scenario: it comes
    /// from `ETCDLAT_PASSWORD` or the terminal. `--user` replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl Cluster {
    /// Makes the relative TLS file paths relative to `dir` (the scenario file's directory).
    pub fn resolve_paths(&mut self, dir: &Path) {
        for path in [&mut self.cacert, &mut self.cert, &mut self.key].into_iter().flatten() {
            if path.is_relative() {
                *path = dir.join(&*path);
            }
        }
    }
}

/// Which members get the load. Written as a string: `endpoints` (default: the endpoints as
/// given, connections spread over them), `leader`, `followers`, `follower:N` (the N-th
/// follower, 1-based, by member name order), `member:NAME`, or `all` (every member).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Targeting {
    /// The endpoints as given.
    #[default]
    Endpoints,
    /// The leader only (etcd benchmark's `--target-leader`).
    Leader,
    /// Every follower, connections spread over them.
    Followers,
    /// One follower, 1-based in member name order.
    Follower(u32),
    /// One member, by name.
    Member(String),
    /// Every member, connections spread over them.
    All,
}

impl std::str::FromStr for Targeting {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "endpoints" | "" => Self::Endpoints,
            "leader" => Self::Leader,
            "followers" => Self::Followers,
            "all" => Self::All,
            other => {
                if let Some(n) =
                    other.strip_prefix("follower:").or_else(|| other.strip_prefix("follower-"))
                {
                    match n.parse::<u32>() {
                        Ok(n) if n >= 1 => Self::Follower(n),
                        _ => {
                            return Err(format!(
                                "target {other:?}: the follower number counts from 1"
                            ));
                        }
                    }
                } else if let Some(name) = other.strip_prefix("member:") {
                    if name.is_empty() {
                        return Err("target \"member:\" needs a member name".to_owned());
                    }
                    Self::Member(name.to_owned())
                } else {
                    return Err(format!(
                        "unknown target {other:?} (endpoints, leader, followers, follower:N, member:NAME or all)"
                    ));
                }
            }
        })
    }
}

impl std::fmt::Display for Targeting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Endpoints => f.write_str("endpoints"),
            Self::Leader => f.write_str("leader"),
            Self::Followers => f.write_str("followers"),
            Self::Follower(n) => write!(f, "follower:{n}"),
            Self::Member(name) => write!(f, "member:{name}"),
            Self::All => f.write_str("all"),
        }
    }
}

impl TryFrom<String> for Targeting {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Targeting> for String {
    fn from(t: Targeting) -> String {
        t.to_string()
    }
}

/// How much load, for how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Load {
    /// gRPC connections (each its own HTTP/2 connection). Absent: the driver's own setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns: Option<u32>,
    /// Logical clients; client `i` sends on connection `i % conns`. Default 1.
    #[serde(default = "one_u32")]
    pub clients: u32,
    /// Stop after this many measured requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Stop after this much measured time.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub duration: Option<Duration>,
    /// Requests per second for the whole run; 0 means as fast as the clients go (closed loop).
    /// A non-zero rate caps a closed loop like etcd's `--rate`.
    #[serde(default)]
    pub rate: u64,
    /// Time run before measuring; its requests are not in any figure.
    #[serde(default, with = "unit::duration", skip_serializing_if = "Duration::is_zero")]
    pub warmup: Duration,
    /// `closed` (default: each client sends when its previous request completes, the rate
    /// a cap) or `open` (requests arrive at the rate whatever the server does).
    #[serde(default, skip_serializing_if = "is_default")]
    pub schedule: Schedule,
    /// Open-loop arrivals: `constant` (default) or `poisson`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub arrivals: Arrivals,
    /// A shaped rate instead of `rate`: stages of rate and duration, stepped or ramped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
}

impl Load {
    /// The rate over time: the stages, the constant rate, or unlimited.
    #[must_use]
    pub fn rate_shape(&self) -> Rate {
        if !self.stages.is_empty() {
            Rate::Stages(self.stages.clone())
        } else if self.rate > 0 {
            Rate::Constant(self.rate as f64)
        } else {
            Rate::Unlimited
        }
    }
}

impl Default for Load {
    fn default() -> Self {
        Self {
            conns: None,
            clients: 1,
            total: None,
            duration: None,
            rate: 0,
            warmup: Duration::ZERO,
            schedule: Schedule::default(),
            arrivals: Arrivals::default(),
            stages: Vec::new(),
        }
    }
}

/// Data written before a run and not measured: `total` puts made like [`PutOp`] says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Setup {
    /// Puts to send.
    pub total: u64,
    /// Logical clients sending them. Default 16.
    #[serde(default = "sixteen")]
    pub clients: u32,
    /// How keys and values are made.
    pub put: PutOp,
}

/// Background compaction during a run, as etcd benchmark's `put --compact-interval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Compaction {
    /// Compact this often.
    #[serde(with = "unit::duration")]
    pub interval: Duration,
    /// Keep this many revisions: compact at the current revision minus this. Default 1000.
    #[serde(default = "thousand")]
    pub index_delta: u64,
}

/// Checks run after the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Checks {
    /// Compare HashKV of every member at one revision; a mismatch fails the run (exit 1).
    #[serde(default)]
    pub hashkv: bool,
}

/// How results are reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ReportOptions {
    /// Full floating-point precision in the text report (etcd's `--precise`).
    #[serde(default)]
    pub precise: bool,
    /// Print the per-second samples in the text report (etcd's `--sample`).
    #[serde(default)]
    pub sample: bool,
    /// Length of one interval of the time series. Default 1 s.
    #[serde(default = "one_second", with = "unit::duration")]
    pub interval: Duration,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self { precise: false, sample: false, interval: one_second() }
    }
}

fn one_u32() -> u32 {
    1
}
fn thousand() -> u64 {
    1000
}
fn sixteen() -> u32 {
    16
}
fn one_second() -> Duration {
    Duration::from_secs(1)
}

/// Why a scenario could not be read or is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The text is not TOML, or does not have the shape of a scenario (unknown key, wrong type).
    #[error("{}{message}", Location(*.location))]
    Parse {
        /// What is wrong, as the parser says it.
        message: String,
        /// 1-based line and column, when known.
        location: Option<(usize, usize)>,
    },
    /// A field has a value that cannot be run.
    #[error("{}{field}: {message}", Location(*.location))]
    Invalid {
        /// Dotted path of the field, as written in TOML (`load.clients`).
        field: String,
        /// What is wrong with it.
        message: String,
        /// 1-based line and column of the value in the file, when read from one.
        location: Option<(usize, usize)>,
    },
}

struct Location(Option<(usize, usize)>);

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some((line, col)) => write!(f, "line {line}, column {col}: "),
            None => Ok(()),
        }
    }
}

impl From<InvalidParam> for ScenarioError {
    fn from(e: InvalidParam) -> Self {
        Self::Invalid { field: e.field, message: e.message, location: None }
    }
}

impl ScenarioError {
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::Invalid { field: field.to_owned(), message: message.into(), location: None }
    }

    /// The field this error is about, for validation errors.
    #[must_use]
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            Self::Parse { .. } => None,
        }
    }
}

impl Scenario {
    /// A scenario running `op` with etcd benchmark's default load: 1 client, 10,000 requests.
    #[must_use]
    pub fn new(op: Operation) -> Self {
        Self {
            name: op.name().to_owned(),
            description: String::new(),
            target: Targeting::default(),
            cluster: Cluster::default(),
            load: Load { total: Some(10_000), ..Load::default() },
            op: Some(op),
            mix: Vec::new(),
            setup: None,
            compaction: None,
            checks: Checks::default(),
            faults: Vec::new(),
            matrix: toml::Table::new(),
            report: ReportOptions::default(),
            thresholds: Vec::new(),
        }
    }

    /// Reads and validates a scenario from TOML text.
    ///
    /// # Errors
    /// [`ScenarioError::Parse`] for malformed TOML, unknown keys and wrong types;
    /// [`ScenarioError::Invalid`] for values that cannot be run. Both carry the line and
    /// column in `text`.
    pub fn from_toml_str(text: &str) -> Result<Self, ScenarioError> {
        let mut scenario: Self = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            message: e.message().trim().to_owned(),
            location: e.span().map(|span| line_col(text, span.start)),
        })?;
        if scenario.name.is_empty() {
            scenario.name = scenario.op.as_ref().map_or("mix", Operation::name).to_owned();
        }
        let checked = if scenario.matrix.is_empty() {
            scenario.validate()
        } else {
            // The base may be completed by the matrix (an `op` per case): check every run.
            scenario.expand().map(drop)
        };
        match checked {
            Ok(()) => Ok(scenario),
            Err(ScenarioError::Invalid { field, message, .. }) => {
                let location = field_offset(text, &field).map(|offset| line_col(text, offset));
                Err(ScenarioError::Invalid { field, message, location })
            }
            Err(e) => Err(e),
        }
    }

    /// Every run of the scenario: one per combination of its `[matrix]` axes, in order (the
    /// first axis varies slowest), each validated and named after the values it takes
    /// (`put [clients=1000, val-size=256]`); the scenario itself when it has no matrix.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] naming the matrix axis when a combination cannot be run.
    pub fn expand(&self) -> Result<Vec<Scenario>, ScenarioError> {
        if self.matrix.is_empty() {
            return Ok(vec![self.clone()]);
        }
        let mut axes = Vec::new();
        flatten_axes(&self.matrix, String::new(), &mut axes)?;
        let mut base = self.clone();
        base.matrix.clear();
        let base_value = toml::Value::try_from(&base)
            .map_err(|e| ScenarioError::invalid("matrix", format!("cannot apply: {e}")))?;
        let combinations: usize = axes.iter().map(|(_, values)| values.len()).product();
        if combinations > 10_000 {
            return Err(ScenarioError::invalid(
                "matrix",
                format!("{combinations} combinations is too many"),
            ));
        }
        let mut runs = Vec::with_capacity(combinations);
        for n in 0..combinations {
            let mut value = base_value.clone();
            let mut labels = Vec::with_capacity(axes.len());
            let mut rest = n;
            let mut picks = vec![0; axes.len()];
            for (i, (_, values)) in axes.iter().enumerate().rev() {
                picks[i] = rest % values.len();
                rest /= values.len();
            }
            for ((path, values), pick) in axes.iter().zip(&picks) {
                let chosen = &values[*pick];
                if path == CASE_AXIS {
                    labels.push(apply_case(&mut value, chosen, *pick)?);
                } else {
                    set_path(&mut value, path, chosen.clone());
                    labels.push(format!(
                        "{}={}",
                        path.rsplit('.').next().unwrap_or(path),
                        label(chosen)
                    ));
                }
            }
            let field = format!("matrix.{}", axes.first().map_or("", |(p, _)| p.as_str()));
            let mut run: Scenario = value.try_into().map_err(|e: toml::de::Error| {
                ScenarioError::invalid(
                    &field,
                    format!("[{}]: {}", labels.join(", "), e.message().trim()),
                )
            })?;
            run.name = format!("{} [{}]", base.name, labels.join(", "));
            run.validate().map_err(|e| match e {
                ScenarioError::Invalid { field: f, message, .. } => ScenarioError::invalid(
                    &field,
                    format!("[{}]: {f}: {message}", labels.join(", ")),
                ),
                other => other,
            })?;
            runs.push(run);
        }
        Ok(runs)
    }

    /// The scenario with every total and duration multiplied by `factor` (at least 1
    /// request, 1 ms), so that a large published test runs in minutes on a small machine.
    #[must_use]
    pub fn scaled(&self, factor: f64) -> Scenario {
        let scale_n = |n: u64| ((n as f64 * factor).round() as u64).max(1);
        // Saturating at MAX_DURATION (so that validation names the field) rather than
        // panicking as `Duration::mul_f64` does past its range.
        let scale_d = |d: Duration| {
            Duration::try_from_secs_f64(d.as_secs_f64() * factor)
                .map_or(MAX_DURATION + Duration::from_secs(1), |d| {
                    d.min(MAX_DURATION + Duration::from_secs(1))
                })
        };
        let mut s = self.clone();
        s.load.total = s.load.total.map(scale_n);
        s.load.duration = s.load.duration.map(|d| scale_d(d).max(Duration::from_millis(1)));
        s.load.warmup = scale_d(s.load.warmup);
        if let Some(setup) = &mut s.setup {
            setup.total = scale_n(setup.total);
        }
        for step in &mut s.faults {
            step.at = scale_d(step.at);
            step.pause_for = step.pause_for.map(|d| scale_d(d).max(Duration::from_millis(1)));
        }
        let scale_op = |op: &mut Operation| match op {
            Operation::Watch(w) => w.put_total = scale_n(w.put_total),
            Operation::WatchLatency(w) => w.put_total = scale_n(w.put_total),
            _ => {}
        };
        if let Some(op) = &mut s.op {
            scale_op(op);
        }
        for w in &mut s.mix {
            scale_op(&mut w.op);
        }
        s
    }

    /// Whether the scenario runs a stream workload (watch family).
    #[must_use]
    pub fn is_stream(&self) -> bool {
        self.op.as_ref().is_some_and(Operation::is_stream)
    }

    /// The operations and their weights: the mix, or `op` with weight 1.
    #[must_use]
    pub fn workload(&self) -> Vec<(u32, &Operation)> {
        match &self.op {
            Some(op) => vec![(1, op)],
            None => self.mix.iter().map(|w| (w.weight, &w.op)).collect(),
        }
    }

    /// Checks every value; called by [`Scenario::from_toml_str`] and by the driver before a
    /// run, so a scenario built in code is held to the same rules.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] naming the first field that cannot be run.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let t = &self.cluster;
        if let Some(m) = t.members {
            if !t.endpoints.is_empty() {
                return Err(ScenarioError::invalid(
                    "cluster.members",
                    "applies only to a throwaway local cluster; remove it or remove cluster.endpoints",
                ));
            }
            if !(1..=9).contains(&m) {
                return Err(ScenarioError::invalid(
                    "cluster.members",
                    format!("must be 1 to 9, got {m}"),
                ));
            }
        }
        for ep in &t.endpoints {
            check_endpoint(ep).map_err(|m| ScenarioError::invalid("cluster.endpoints", m))?;
        }
        if t.dial_timeout.is_some_and(|d| d.is_zero()) {
            return Err(ScenarioError::invalid("cluster.dial-timeout", "must be more than 0"));
        }
        if t.cert.is_some() != t.key.is_some() {
            return Err(ScenarioError::invalid("cluster.cert", "give cert and key, or neither"));
        }
        if let Some(user) = &t.user {
            if user.is_empty() || user.contains(':') {
                return Err(ScenarioError::invalid(
                    "cluster.user",
                    "the user name only: the password comes from ETCDLAT_PASSWORD or the \
                     terminal, never from a scenario file",
                ));
            }
        }

        let l = &self.load;
        if l.clients == 0 || l.clients > MAX_CLIENTS {
            return Err(ScenarioError::invalid(
                "load.clients",
                format!("must be 1 to {MAX_CLIENTS}, got {}", l.clients),
            ));
        }
        if let Some(c) = l.conns {
            if c == 0 || c > MAX_CONNS {
                return Err(ScenarioError::invalid(
                    "load.conns",
                    format!("must be 1 to {MAX_CONNS}, got {c}"),
                ));
            }
        }
        match (l.total, l.duration) {
            (None, None) if self.is_stream() || !l.stages.is_empty() => {}
            (None, None) => {
                return Err(ScenarioError::invalid(
                    "load",
                    "needs total (requests) or duration (time) to know when to stop",
                ));
            }
            (Some(0), _) => {
                return Err(ScenarioError::invalid("load.total", "must be more than 0"));
            }
            (_, Some(d)) if d.is_zero() => {
                return Err(ScenarioError::invalid("load.duration", "must be more than 0"));
            }
            _ => {}
        }
        if l.schedule == Schedule::Open && l.rate == 0 && l.stages.is_empty() {
            return Err(ScenarioError::invalid(
                "load.schedule",
                "an open loop needs a rate (requests per second) or stages",
            ));
        }
        if l.arrivals == Arrivals::Poisson && l.schedule != Schedule::Open {
            return Err(ScenarioError::invalid(
                "load.arrivals",
                "applies to an open loop (schedule = \"open\")",
            ));
        }
        if !l.stages.is_empty() && l.rate > 0 {
            return Err(ScenarioError::invalid(
                "load.stages",
                "replace rate; give one or the other",
            ));
        }
        for (i, st) in l.stages.iter().enumerate() {
            if st.duration.is_zero() {
                return Err(ScenarioError::invalid(
                    &format!("load.stages.{i}.duration"),
                    "must be more than 0",
                ));
            }
            if st.rate > 100_000_000 {
                return Err(ScenarioError::invalid(
                    &format!("load.stages.{i}.rate"),
                    "is beyond any etcd",
                ));
            }
        }
        if l.rate > 100_000_000 {
            return Err(ScenarioError::invalid(
                "load.rate",
                format!("{} requests per second is beyond any etcd", l.rate),
            ));
        }

        match (&self.op, self.mix.is_empty()) {
            (Some(_), false) => {
                return Err(ScenarioError::invalid(
                    "mix",
                    "a scenario has either op or mix, not both",
                ));
            }
            (None, true) => {
                return Err(ScenarioError::invalid(
                    "op",
                    "missing: say what to run with [op.NAME] or [[mix]]",
                ));
            }
            (Some(op), true) => op.validate_at("op")?,
            (None, false) => {
                for (i, w) in self.mix.iter().enumerate() {
                    let at = format!("mix.{i}");
                    if w.weight == 0 {
                        return Err(ScenarioError::invalid(
                            &format!("{at}.weight"),
                            "must be more than 0",
                        ));
                    }
                    if w.op.is_stream() {
                        return Err(ScenarioError::invalid(
                            &format!("{at}.op"),
                            format!("{} is a workload of its own and cannot be mixed", w.op.name()),
                        ));
                    }
                    w.op.validate_at(&format!("{at}.op"))?;
                }
            }
        }
        if let Some(c) = &self.compaction {
            if c.interval < Duration::from_millis(100) {
                return Err(ScenarioError::invalid(
                    "compaction.interval",
                    "must be at least 100ms",
                ));
            }
        }

        if let Some(setup) = &self.setup {
            if setup.total == 0 {
                return Err(ScenarioError::invalid("setup.total", "must be more than 0"));
            }
            if setup.clients == 0 || setup.clients > MAX_CLIENTS {
                return Err(ScenarioError::invalid(
                    "setup.clients",
                    format!("must be 1 to {MAX_CLIENTS}"),
                ));
            }
            setup.put.validate_at("setup.put")?;
            if self.is_stream() {
                return Err(ScenarioError::invalid("setup", "is not used by watch workloads"));
            }
        }

        let durations = [
            ("cluster.dial-timeout", t.dial_timeout),
            ("load.duration", l.duration),
            ("load.warmup", Some(l.warmup)),
            ("compaction.interval", self.compaction.as_ref().map(|c| c.interval)),
            ("report.interval", Some(self.report.interval)),
        ];
        let stages = l.stages.iter().enumerate().map(|(i, st)| (i, st.duration));
        let faults = self.faults.iter().enumerate();
        for (field, d) in durations
            .into_iter()
            .map(|(f, d)| (f.to_owned(), d))
            .chain(stages.map(|(i, d)| (format!("load.stages.{i}.duration"), Some(d))))
            .chain(faults.clone().map(|(i, f)| (format!("faults.{i}.at"), Some(f.at))))
            .chain(faults.map(|(i, f)| (format!("faults.{i}.for"), f.pause_for)))
        {
            if d.is_some_and(|d| d > MAX_DURATION) {
                return Err(ScenarioError::invalid(&field, "must be at most 10 years"));
            }
        }
        crate::fault::validate(&self.faults, &self.cluster, &self.load)?;
        if let Err(e) = crate::threshold::Threshold::parse_all(&self.thresholds) {
            return Err(ScenarioError::invalid("thresholds", e.to_string()));
        }
        if self.report.interval < Duration::from_millis(10) {
            return Err(ScenarioError::invalid("report.interval", "must be at least 10ms"));
        }
        Ok(())
    }
}

/// The matrix axis whose values are whole cases: tables whose keys each replace that part of
/// the scenario (`load = { conns = 1, clients = 1, total = 10000 }` replaces `[load]`), so
/// that rows which differ in several parameters at once (like a published table's) are one
/// axis. A case's `label` names it in the run's name.
pub const CASE_AXIS: &str = "case";

fn apply_case(
    root: &mut toml::Value,
    case: &toml::Value,
    index: usize,
) -> Result<String, ScenarioError> {
    let toml::Value::Table(case) = case else {
        return Err(ScenarioError::invalid(
            "matrix.case",
            "every case is a table of scenario parts",
        ));
    };
    let mut name = format!("case {}", index + 1);
    for (key, value) in case {
        match (key.as_str(), value) {
            ("label", toml::Value::String(l)) => name.clone_from(l),
            ("label", _) => {
                return Err(ScenarioError::invalid("matrix.case.label", "must be a string"));
            }
            _ => set_path(root, key, value.clone()),
        }
    }
    Ok(name)
}

/// The axes of a matrix table: every array is an axis; tables nest (so both
/// `"load.clients" = [..]` and `load.clients = [..]` name the same axis).
fn flatten_axes(
    table: &toml::Table,
    prefix: String,
    out: &mut Vec<(String, Vec<toml::Value>)>,
) -> Result<(), ScenarioError> {
    for (key, value) in table {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            toml::Value::Array(values) if values.is_empty() => {
                return Err(ScenarioError::invalid(
                    &format!("matrix.{path}"),
                    "an axis needs at least one value",
                ));
            }
            toml::Value::Array(values) => out.push((path, values.clone())),
            toml::Value::Table(t) => flatten_axes(t, path, out)?,
            _ => {
                return Err(ScenarioError::invalid(
                    &format!("matrix.{path}"),
                    "an axis is a list of values, like [1, 1000]",
                ));
            }
        }
    }
    Ok(())
}

/// Sets a dotted path in a TOML value, creating tables on the way.
fn set_path(root: &mut toml::Value, path: &str, value: toml::Value) {
    let mut cur = root;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !cur.is_table() {
            *cur = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(t) = cur else { return };
        if parts.peek().is_none() {
            t.insert(part.to_owned(), value);
            return;
        }
        cur = t.entry(part.to_owned()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
    }
}

/// How a matrix value appears in a run's name.
fn label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Table(t) => t.keys().next().cloned().unwrap_or_default(),
        other => other.to_string(),
    }
}

/// Checks that an endpoint is `host:port`, `http://host:port` or `https://host:port`.
///
/// # Errors
/// A message naming the endpoint and what is missing.
pub fn check_endpoint(ep: &str) -> Result<(), String> {
    let rest = ep.strip_prefix("http://").or_else(|| ep.strip_prefix("https://")).unwrap_or(ep);
    let rest = rest.trim_end_matches('/');
    if rest.contains("://") {
        return Err(format!("endpoint {ep:?}: only http:// and https:// are supported"));
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => (h, p),
        _ => {
            return Err(format!(
                "endpoint {ep:?} has no port (expected host:port, like 127.0.0.1:2379)"
            ));
        }
    };
    if host.contains('/') || host.contains(' ') {
        return Err(format!("endpoint {ep:?}: invalid host {host:?}"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!("endpoint {ep:?}: invalid port {port:?}")),
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, col)
}

/// The byte offset of a dotted field's value in the TOML text, found by walking the
/// spanned document: where the deepest part of the path that is written in the file starts
/// (a missing `faults.0.member` points at its step); `None` when none of it is (a default).
fn field_offset(text: &str, field: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut value: Option<&DeValue<'_>> = None;
    let mut table = doc.get_ref();
    let mut best = None;
    let mut parts = field.split('.').peekable();
    while let Some(part) = parts.next() {
        // An array of tables (`[[mix]]`) is indexed by the next part.
        let found = match (value, part.parse::<usize>()) {
            (Some(DeValue::Array(items)), Ok(i)) => items.get(i).map(|v| (v.span().start, v)),
            _ => table.iter().find(|(k, _)| k.get_ref().as_ref() == part).map(|(k, v)| {
                (if parts.peek().is_none() { v.span().start } else { k.span().start }, v)
            }),
        };
        let Some((offset, v)) = found else { break };
        best = Some(offset);
        value = Some(v.get_ref());
        if let DeValue::Table(t) = v.get_ref() {
            table = t;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUT: &str = r#"
name = "p"

[load]
clients = 2
total = 100

[op.put]
val-size = "1KiB"
sequential-keys = true
key-space-size = 10
"#;

    #[test]
    fn reads_put() {
        let s = Scenario::from_toml_str(PUT).unwrap();
        let Some(Operation::Put(p)) = &s.op else { panic!("not a put") };
        assert_eq!(p.val_size, 1024);
        assert_eq!(p.key_size, 8);
        assert!(p.sequential_keys);
        assert_eq!(s.load.clients, 2);
        assert_eq!(s.load.total, Some(100));
        assert_eq!(s.report.interval, Duration::from_secs(1));
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let err = Scenario::from_toml_str("[load]\nclients = 1\nconn = 3\n[op.put]\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("line 3, column 1: "), "{msg}");
        assert!(msg.contains("unknown field `conn`"), "{msg}");
    }

    #[test]
    fn invalid_value_names_field_and_line() {
        let err =
            Scenario::from_toml_str("[load]\nclients = 0\ntotal = 5\n[op.put]\n").unwrap_err();
        assert_eq!(err.field(), Some("load.clients"));
        assert!(err.to_string().starts_with("line 2, column 11: load.clients: must be 1"), "{err}");
    }

    #[test]
    fn key_size_must_hold_the_key_space() {
        let err = Scenario::from_toml_str(
            "[load]\ntotal = 1\n[op.put]\nkey-size = 1\nkey-space-size = 1000\n",
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("op.put.key-size"));
    }

    #[test]
    fn cluster_tls_and_user_are_checked_and_paths_resolved() {
        let base = "[load]\ntotal = 1\n[op.put]\n[cluster]\n";
        let err = Scenario::from_toml_str(&format!("{base}cert = \"c.pem\"\n")).unwrap_err();
        assert_eq!(err.field(), Some("cluster.cert"));
        let err = Scenario::from_toml_str(&format!("{base}user = \"root:pw\"\n")).unwrap_err();
        assert_eq!(err.field(), Some("cluster.user"));
        assert!(!err.to_string().contains("pw\""), "the password is not echoed: {err}");
        let mut s = Scenario::from_toml_str(&format!(
            "{base}cacert = \"ca.pem\"\ncert = \"/abs/c.pem\"\nkey = \"k.pem\"\nuser = \"root\"\n"
        ))
        .unwrap();
        s.cluster.resolve_paths(Path::new("/scenarios"));
        assert_eq!(s.cluster.cacert.as_deref(), Some(Path::new("/scenarios/ca.pem")));
        assert_eq!(s.cluster.cert.as_deref(), Some(Path::new("/abs/c.pem")));
        assert_eq!(s.cluster.key.as_deref(), Some(Path::new("/scenarios/k.pem")));
        assert_eq!(s.cluster.user.as_deref(), Some("root"));
    }

    #[test]
    fn needs_a_stop_condition() {
        let err = Scenario::from_toml_str("[load]\nrate = 10\n[op.put]\n").unwrap_err();
        assert_eq!(err.field(), Some("load"));
        assert!(err.to_string().starts_with("line 1, column 1: load: needs total"), "{err}");
        let mut s = Scenario::new(Operation::Put(PutOp::default()));
        s.load.total = None;
        assert_eq!(s.validate().unwrap_err().field(), Some("load"));
    }

    #[test]
    fn mixes() {
        let text = "[load]\ntotal = 10\n\n[[mix]]\nweight = 80\n[mix.op.range]\nkey = \"k/\"\nkey-space-size = 100\n\n[[mix]]\nweight = 20\n[mix.op.put]\nkey-size = 1\nkey-space-size = 1000\n";
        let err = Scenario::from_toml_str(text).unwrap_err();
        assert_eq!(err.field(), Some("mix.1.op.put.key-size"));
        assert!(err.to_string().starts_with("line 13, column 12: "), "{err}");
        let ok = Scenario::from_toml_str(&text.replace("key-size = 1\n", "")).unwrap();
        assert_eq!(ok.name, "mix");
        assert_eq!(
            ok.workload().iter().map(|(w, op)| (*w, op.name())).collect::<Vec<_>>(),
            vec![(80, "range"), (20, "put")]
        );
        let both = format!("{text}[op.put]\n");
        assert!(Scenario::from_toml_str(&both).is_err());
        let watch_in_mix = "[load]\ntotal = 1\n[[mix]]\nweight = 1\n[mix.op.watch]\n";
        assert_eq!(Scenario::from_toml_str(watch_in_mix).unwrap_err().field(), Some("mix.0.op"));
    }

    #[test]
    fn stream_workloads_need_no_total() {
        let s = Scenario::from_toml_str(
            "[op.watch]\nstreams = 2\nwatch-per-stream = 5\nput-total = 10\n",
        )
        .unwrap();
        assert!(s.is_stream());
        assert!(
            Scenario::from_toml_str("[op.put]\n").is_err(),
            "request workloads still need a stop"
        );
    }

    #[test]
    fn matrix_expands_in_order() {
        let text = "name = \"m\"\n[load]\ntotal = 10\n[op.put]\nval-size = 8\n\n[matrix]\n\"load.clients\" = [1, 10]\nop.put.val-size = [256, \"1MB\"]\ntarget = [\"leader\"]\n";
        let s = Scenario::from_toml_str(text).unwrap();
        let runs = s.expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "m [clients=1, val-size=256, target=leader]",
                "m [clients=1, val-size=1MB, target=leader]",
                "m [clients=10, val-size=256, target=leader]",
                "m [clients=10, val-size=1MB, target=leader]",
            ]
        );
        assert_eq!(runs[3].load.clients, 10);
        assert!(matches!(&runs[3].op, Some(Operation::Put(p)) if p.val_size == 1_000_000));
        assert_eq!(runs[0].target, Targeting::Leader);
        assert!(runs.iter().all(|r| r.matrix.is_empty()));
    }

    #[test]
    fn matrix_values_are_validated() {
        let text = "[load]\ntotal = 10\n[op.put]\n[matrix]\n\"load.clients\" = [1, 0]\n";
        let err = Scenario::from_toml_str(text).unwrap_err();
        assert_eq!(err.field(), Some("matrix.load.clients"));
        assert!(err.to_string().contains("[clients=0]: load.clients: must be 1"), "{err}");
        let bad = "[load]\ntotal = 10\n[op.put]\n[matrix]\ntarget = [\"nowhere\"]\n";
        assert!(Scenario::from_toml_str(bad).unwrap_err().to_string().contains("unknown target"));
    }

    #[test]
    fn cases_replace_parts_of_the_scenario() {
        let text = r#"
name = "guide"
[load]
total = 10
[matrix]
target = ["leader", "all"]
[[matrix.case]]
label = "write"
load = { conns = 1, clients = 1, total = 100 }
op = { put = { val-size = 256 } }
[[matrix.case]]
label = "read"
load = { conns = 2, clients = 20, total = 200 }
op = { range = { key = "foo", consistency = "s" } }
"#;
        let runs = Scenario::from_toml_str(text).unwrap().expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "guide [target=leader, write]",
                "guide [target=leader, read]",
                "guide [target=all, write]",
                "guide [target=all, read]"
            ]
        );
        assert_eq!(runs[1].load.clients, 20);
        assert!(matches!(runs[1].op, Some(Operation::Range(_))));
        assert!(matches!(runs[2].op, Some(Operation::Put(_))));
    }

    #[test]
    fn scaling() {
        let s = Scenario::from_toml_str("[load]\ntotal = 100000\nduration = \"60s\"\n[op.put]\n")
            .unwrap();
        let small = s.scaled(0.01);
        assert_eq!(small.load.total, Some(1000));
        assert_eq!(small.load.duration, Some(Duration::from_millis(600)));
        assert_eq!(s.scaled(0.0).load.total, Some(1));
    }

    #[test]
    fn targets_parse() {
        for (text, t) in [
            ("leader", Targeting::Leader),
            ("followers", Targeting::Followers),
            ("follower:2", Targeting::Follower(2)),
            ("follower-1", Targeting::Follower(1)),
            ("member:m1", Targeting::Member("m1".into())),
            ("all", Targeting::All),
            ("endpoints", Targeting::Endpoints),
        ] {
            assert_eq!(text.parse::<Targeting>().unwrap(), t);
        }
        assert!("follower:0".parse::<Targeting>().is_err());
        assert!("moon".parse::<Targeting>().is_err());
    }

    #[test]
    fn endpoints() {
        assert!(check_endpoint("127.0.0.1:2379").is_ok());
        assert!(check_endpoint("http://localhost:2379").is_ok());
        assert!(check_endpoint("https://[::1]:2379").is_ok());
        assert!(check_endpoint("localhost").unwrap_err().contains("no port"));
        assert!(check_endpoint("localhost:http").unwrap_err().contains("invalid port"));
        assert!(check_endpoint("unix://x:1").is_err());
    }

    #[test]
    fn range_consistency() {
        let s = Scenario::from_toml_str(
            "[load]\ntotal = 1\n[op.range]\nkey = \"foo\"\nconsistency = \"s\"\n",
        )
        .unwrap();
        let Some(Operation::Range(r)) = &s.op else { panic!() };
        assert_eq!(r.consistency, Consistency::Serializable);
        assert!(
            Scenario::from_toml_str(
                "[load]\ntotal = 1\n[op.range]\nkey = \"foo\"\nconsistency = \"x\"\n"
            )
            .is_err()
        );
    }

    #[test]
    fn round_trips_through_toml() {
        let s = Scenario::from_toml_str(PUT).unwrap();
        let text = toml::to_string(&s).unwrap();
        assert_eq!(Scenario::from_toml_str(&text).unwrap(), s);
    }
}
