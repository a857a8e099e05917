//! The scenario model: what to run, against what, with how much load.
//!
//! A scenario is read from TOML (kebab-case keys, unknown keys rejected) or built in code,
//! and validated once; [`Scenario::from_toml_str`] never returns an invalid scenario.
//!
//! ```toml
//! name = "put-256b"
//! description = "256 B puts, one client"
//!
//! [target]
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

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::keyspace::varint_len;
use crate::op::OpKind;
use crate::unit;

/// The largest value size a scenario may ask for. etcd rejects requests over its
/// `--max-request-bytes` (1.5 MiB by default); larger values are allowed so that the
/// rejection itself can be measured, but not without bound.
pub const MAX_VALUE_SIZE: u64 = 256 << 20;

/// The most logical clients one run may have.
pub const MAX_CLIENTS: u32 = 10_000_000;

/// The most gRPC connections one run may open.
pub const MAX_CONNS: u32 = 100_000;

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
    /// The etcd cluster to run against.
    #[serde(default)]
    pub target: Target,
    /// How much load, for how long.
    #[serde(default)]
    pub load: Load,
    /// The operation every request performs.
    pub op: Operation,
    /// Data written before the run, not measured (for example the keys a range reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Setup>,
    /// How results are reported.
    #[serde(default)]
    pub report: ReportOptions,
}

/// The etcd cluster a scenario runs against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Target {
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
        }
    }
}

/// The operation every request of a run performs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// Put a key, as etcd's `benchmark put`.
    Put(PutOp),
    /// Read a key or a range, as etcd's `benchmark range`.
    Range(RangeOp),
}

impl Operation {
    /// The kind of request this operation sends.
    #[must_use]
    pub fn kind(&self) -> OpKind {
        match self {
            Self::Put(_) => OpKind::Put,
            Self::Range(_) => OpKind::Range,
        }
    }
}

/// Parameters of a put workload. Keys and values are made as etcd's benchmark tool makes
/// them, so results are comparable: the key is the zig-zag varint of its index in a
/// `key-size` buffer, the value one random buffer reused for every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PutOp {
    /// Bytes of the key after the prefix. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub key_size: u64,
    /// Bytes of the value. Default 8.
    #[serde(default = "eight", deserialize_with = "unit::size::deserialize")]
    pub val_size: u64,
    /// Number of distinct keys. Default 1 (etcd's default: every put writes the same key).
    #[serde(default = "one_u64")]
    pub key_space_size: u64,
    /// Key index `i % key-space-size` for request `i`; otherwise uniformly random.
    #[serde(default)]
    pub sequential_keys: bool,
    /// First key index: keys are `key-starts .. key-starts + key-space-size`.
    #[serde(default)]
    pub key_starts: u64,
    /// Bytes put before every key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// Seed of the random value and of random key choice, for reproducible runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Default for PutOp {
    fn default() -> Self {
        Self {
            key_size: 8,
            val_size: 8,
            key_space_size: 1,
            sequential_keys: false,
            key_starts: 0,
            prefix: String::new(),
            seed: None,
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

/// Parameters of a range (read) workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RangeOp {
    /// The key, or the first key of the range.
    pub key: String,
    /// End of the range (exclusive). `"\u0000"` reads every key from `key` on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<String>,
    /// Read every key that starts with `key`.
    #[serde(default)]
    pub prefix: bool,
    /// Linearizable (`l`, default) or serializable (`s`).
    #[serde(default)]
    pub consistency: Consistency,
    /// At most this many keys per response; 0 = no limit.
    #[serde(default)]
    pub limit: u64,
    /// Return only the count of keys.
    #[serde(default)]
    pub count_only: bool,
    /// Return keys without values.
    #[serde(default)]
    pub keys_only: bool,
}

/// Read consistency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Consistency {
    /// Linearizable: goes through consensus (a ReadIndex round) before answering.
    #[default]
    #[serde(rename = "l", alias = "linearizable")]
    Linearizable,
    /// Serializable: answered from the member's local state.
    #[serde(rename = "s", alias = "serializable")]
    Serializable,
}

impl Consistency {
    /// `l` or `s`, as etcd's tool spells it.
    #[must_use]
    pub fn letter(self) -> &'static str {
        match self {
            Self::Linearizable => "l",
            Self::Serializable => "s",
        }
    }
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
fn one_u64() -> u64 {
    1
}
fn sixteen() -> u32 {
    16
}
fn eight() -> u64 {
    8
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

impl ScenarioError {
    fn invalid(field: &str, message: impl Into<String>) -> Self {
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
            name: op.kind().name().to_owned(),
            description: String::new(),
            target: Target::default(),
            load: Load { total: Some(10_000), ..Load::default() },
            op,
            setup: None,
            report: ReportOptions::default(),
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
            scenario.name = scenario.op.kind().name().to_owned();
        }
        match scenario.validate() {
            Ok(()) => Ok(scenario),
            Err(ScenarioError::Invalid { field, message, .. }) => {
                let location = field_offset(text, &field).map(|offset| line_col(text, offset));
                Err(ScenarioError::Invalid { field, message, location })
            }
            Err(e) => Err(e),
        }
    }

    /// Checks every value; called by [`Scenario::from_toml_str`] and by the driver before a
    /// run, so a scenario built in code is held to the same rules.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] naming the first field that cannot be run.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let t = &self.target;
        if let Some(m) = t.members {
            if !t.endpoints.is_empty() {
                return Err(ScenarioError::invalid(
                    "target.members",
                    "applies only to a throwaway local cluster; remove it or remove target.endpoints",
                ));
            }
            if !(1..=9).contains(&m) {
                return Err(ScenarioError::invalid(
                    "target.members",
                    format!("must be 1 to 9, got {m}"),
                ));
            }
        }
        for ep in &t.endpoints {
            check_endpoint(ep).map_err(|m| ScenarioError::invalid("target.endpoints", m))?;
        }
        if t.dial_timeout.is_some_and(|d| d.is_zero()) {
            return Err(ScenarioError::invalid("target.dial-timeout", "must be more than 0"));
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
        if l.rate > 100_000_000 {
            return Err(ScenarioError::invalid(
                "load.rate",
                format!("{} requests per second is beyond any etcd", l.rate),
            ));
        }

        match &self.op {
            Operation::Put(p) => p.validate_at("op.put")?,
            Operation::Range(r) => r.validate()?,
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
        }

        if self.report.interval < Duration::from_millis(10) {
            return Err(ScenarioError::invalid("report.interval", "must be at least 10ms"));
        }
        Ok(())
    }
}

impl PutOp {
    fn validate_at(&self, at: &str) -> Result<(), ScenarioError> {
        let field = |name: &str| format!("{at}.{name}");
        if self.key_space_size == 0 {
            return Err(ScenarioError::invalid(&field("key-space-size"), "must be more than 0"));
        }
        let Some(last) =
            self.key_starts.checked_add(self.key_space_size - 1).filter(|&k| k <= i64::MAX as u64)
        else {
            return Err(ScenarioError::invalid(
                &field("key-starts"),
                "key-starts + key-space-size is too large",
            ));
        };
        let need = varint_len(last) as u64;
        if self.key_size < need {
            return Err(ScenarioError::invalid(
                &field("key-size"),
                format!(
                    "{} bytes cannot hold {} distinct keys starting at {}; need at least {need}",
                    self.key_size, self.key_space_size, self.key_starts
                ),
            ));
        }
        if self.key_size + self.prefix.len() as u64 > 1 << 20 {
            return Err(ScenarioError::invalid(
                &field("key-size"),
                "keys over 1 MiB are not supported",
            ));
        }
        if self.val_size > MAX_VALUE_SIZE {
            return Err(ScenarioError::invalid(
                &field("val-size"),
                format!("{} bytes is more than the supported {MAX_VALUE_SIZE}", self.val_size),
            ));
        }
        Ok(())
    }
}

impl RangeOp {
    fn validate(&self) -> Result<(), ScenarioError> {
        if self.prefix && self.range_end.is_some() {
            return Err(ScenarioError::invalid(
                "op.range.prefix",
                "cannot be combined with range-end",
            ));
        }
        if self.key.is_empty() && !self.prefix && self.range_end.is_none() {
            return Err(ScenarioError::invalid(
                "op.range.key",
                "must not be empty (use prefix = true to read every key)",
            ));
        }
        if i64::try_from(self.limit).is_err() {
            return Err(ScenarioError::invalid("op.range.limit", "is too large"));
        }
        Ok(())
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
/// spanned document; `None` when the field is not written in the file (a default).
fn field_offset(text: &str, field: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut best = None;
    let mut parts = field.split('.').peekable();
    while let Some(part) = parts.next() {
        let (key, value) = table.iter().find(|(k, _)| k.get_ref().as_ref() == part)?;
        best = Some(if parts.peek().is_none() { value.span().start } else { key.span().start });
        match value.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
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
        let Operation::Put(p) = &s.op else { panic!("not a put") };
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
    fn needs_a_stop_condition() {
        let err = Scenario::from_toml_str("[load]\nrate = 10\n[op.put]\n").unwrap_err();
        assert_eq!(err.field(), Some("load"));
        assert!(err.to_string().starts_with("line 1, column 1: load: needs total"), "{err}");
        let mut s = Scenario::new(Operation::Put(PutOp::default()));
        s.load.total = None;
        assert_eq!(s.validate().unwrap_err().field(), Some("load"));
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
        let Operation::Range(r) = &s.op else { panic!() };
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
