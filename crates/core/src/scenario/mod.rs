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
//! # etcd = "v3.5.21"               # which etcd a throwaway one runs (default "system")
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

mod checks;
mod cluster;
mod compaction;
mod error;
mod etcd;
pub mod fault;
pub mod kubernetes;
mod load;
mod matrix;
pub mod network;
mod report;
mod setup;
pub mod threshold;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::op::OpKind;
#[cfg(test)]
use crate::workload::Consistency;
use crate::workload::{Operation, Weighted};

use error::{field_offset, line_col};

pub use checks::{Checks, MAX_AUDIT_LIMIT};
pub use cluster::{Cluster, Targeting, check_endpoint};
pub use compaction::{Compaction, CompactionStyle};
pub use error::ScenarioError;
pub use etcd::{Etcd, EtcdVersion};
pub use fault::{FaultAction, FaultStep, MemberRef};
pub use kubernetes::{EventPreload, Kubernetes};
pub use load::{Load, MAX_CLIENTS, MAX_CONNS};
pub use matrix::{CASE_AXIS, MAX_REPEAT, MatrixCell, ORDER_KEY, REPEAT_KEY};
pub use network::{LinkSettings, MemberNetwork, Network, Site, ZonePair};
use report::interval_for;
pub use report::{MIN_INTERVAL, ReportOptions, SeriesInterval};
pub use setup::Setup;

/// The longest duration any field may hold (ten years of 365 days): longer ones are typos,
/// and past a point no clock can add them to "now".
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// A validated description of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
#[non_exhaustive]
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
    /// ([`threshold`]); one that is not met fails the run (exit 1), see
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
    /// A Kubernetes cluster's traffic, from its node count ([`kubernetes`]): it makes the
    /// open-loop `mix` and `load.rate`, and its objects are written before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<Kubernetes>,
    /// Checks after the run.
    #[serde(default, skip_serializing_if = "is_default")]
    pub checks: Checks,
    /// The network between the client and the members and among the members: emulated for
    /// a throwaway local cluster, driven through toxiproxy for others ([`network`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub network: Network,
    /// Scripted faults during the run (`[[faults]]`): kill, pause, resume or restart a
    /// member, move the leader, compact, defragment; see [`fault`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultStep>,
    /// Axes over any parameter, by dotted path (`"load.clients" = [1, 1000]`); every
    /// combination is one run, or `repeat` runs ([`Scenario::expand`]).
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub matrix: toml::Table,
    /// Where this run stands in the matrix it was expanded from, set by
    /// [`Scenario::expand`]; `None` for a scenario as written. Not part of the scenario's
    /// TOML or JSON: a run's report records it as its own `matrix`.
    #[serde(skip)]
    pub matrix_cell: Option<MatrixCell>,
    /// How results are reported.
    #[serde(default)]
    pub report: ReportOptions,
}

pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
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
            kubernetes: None,
            compaction: None,
            checks: Checks::default(),
            network: Network::default(),
            faults: Vec::new(),
            matrix: toml::Table::new(),
            matrix_cell: None,
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
        let checked = if let Err(e) = scenario.derive_kubernetes() {
            Err(e)
        } else if scenario.matrix.is_empty() {
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

    /// The scenario's `[kubernetes]` model at `nodes` nodes, its flows, rates and preload
    /// derived again (`run --find-max` probes node counts with it).
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] when the scenario has no `[kubernetes]` table, or the model
    /// cannot run at that size (a preload over the quota, `nodes` 0).
    pub fn with_nodes(&self, nodes: u64) -> Result<Scenario, ScenarioError> {
        let mut s = self.clone();
        if s.kubernetes.is_none() {
            return Err(ScenarioError::invalid("kubernetes.nodes", "needs a [kubernetes] table"));
        }
        s.set_nodes(nodes)?;
        s.validate()?;
        Ok(s)
    }

    /// Sets the `[kubernetes]` model's node count, if there is one, and derives its mix and
    /// rate again from it.
    fn set_nodes(&mut self, nodes: u64) -> Result<(), ScenarioError> {
        let Some(k) = &mut self.kubernetes else { return Ok(()) };
        k.nodes = nodes;
        self.mix.clear();
        self.load.rate = 0;
        self.derive_kubernetes()
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
        for step in &mut s.load.client_steps {
            step.total = step.total.map(scale_n);
            step.duration = step.duration.map(|d| scale_d(d).max(Duration::from_millis(1)));
        }
        if let Some(setup) = &mut s.setup {
            setup.total = scale_n(setup.total);
        }
        if let Some(nodes) = s.kubernetes.as_ref().map(|k| scale_n(k.nodes)) {
            // A scaled model that cannot run is left without a mix, which validation refuses.
            let _ = s.set_nodes(nodes);
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

    /// How the time series is cut: `[report] interval` when set; 1 s with `sample` (etcd's
    /// per-second samples); otherwise, when the run's
    /// length is known in advance (a duration, stages, timed client steps, or a total at a
    /// rate), the 1-2-5 length
    /// that gives 80 to 200 intervals (at least [`MIN_INTERVAL`]); otherwise
    /// [`MIN_INTERVAL`], doubled as the run goes (1 s for the watch family).
    #[must_use]
    pub fn series_interval(&self) -> SeriesInterval {
        if let Some(length) = self.report.interval {
            return SeriesInterval { length, adaptive: false };
        }
        if self.report.sample {
            // etcd's `--sample` prints one row per second.
            return SeriesInterval { length: Duration::from_secs(1), adaptive: false };
        }
        let load = &self.load;
        let at_rate = match (load.total, load.rate_shape()) {
            (Some(total), crate::Rate::Constant(rate)) => {
                Some(Duration::from_secs_f64((total as f64 / rate).min(MAX_DURATION.as_secs_f64())))
            }
            _ => None,
        };
        let known = [load.duration_asked(), load.rate_shape().length(), at_rate]
            .into_iter()
            .flatten()
            .min();
        match known {
            Some(run) => SeriesInterval { length: interval_for(run), adaptive: false },
            // The watch family's recorders are not the workers'; they keep 1 s.
            None if self.is_stream() => {
                SeriesInterval { length: Duration::from_secs(1), adaptive: false }
            }
            None => SeriesInterval { length: MIN_INTERVAL, adaptive: true },
        }
    }

    /// Checks every value; called by [`Scenario::from_toml_str`] and by the driver before a
    /// run, so a scenario built in code is held to the same rules.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] naming the first field that cannot be run.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.cluster.validate()?;
        if self.kubernetes.is_some() {
            // A model whose mix or rate was changed since (or never derived) is refused.
            self.clone().derive_kubernetes()?;
        }
        self.load.validate(self.is_stream())?;
        self.validate_workload()?;
        if let Some(c) = &self.compaction {
            c.validate()?;
        }
        if let Some(setup) = &self.setup {
            setup.validate(self.is_stream())?;
        }

        let (t, l) = (&self.cluster, &self.load);
        let durations = [
            ("cluster.dial-timeout", t.dial_timeout),
            ("load.duration", l.duration),
            ("load.warmup", Some(l.warmup)),
            ("compaction.interval", self.compaction.as_ref().map(|c| c.interval)),
            ("report.interval", self.report.interval),
        ];
        let stages = l.stages.iter().enumerate().map(|(i, st)| (i, st.duration));
        let steps = l.client_steps.iter().enumerate().map(|(i, st)| (i, st.duration));
        let faults = self.faults.iter().enumerate();
        for (field, d) in durations
            .into_iter()
            .map(|(f, d)| (f.to_owned(), d))
            .chain(stages.map(|(i, d)| (format!("load.stages.{i}.duration"), Some(d))))
            .chain(steps.map(|(i, d)| (format!("load.client-steps.{i}.duration"), d)))
            .chain(faults.clone().map(|(i, f)| (format!("faults.{i}.at"), Some(f.at))))
            .chain(faults.clone().map(|(i, f)| (format!("faults.{i}.for"), f.pause_for)))
            .chain(faults.map(|(i, f)| (format!("faults.{i}.latency"), f.latency)))
        {
            if d.is_some_and(|d| d > MAX_DURATION) {
                return Err(ScenarioError::invalid(&field, "must be at most 10 years"));
            }
        }
        // Without endpoints of its own, the command line may still give some.
        let site = if self.cluster.endpoints.is_empty() { Site::Unknown } else { Site::Endpoints };
        self.network.validate(site)?;
        fault::validate(&self.faults, &self.cluster, &self.network, &self.load)?;
        let thresholds = match threshold::Threshold::parse_all(&self.thresholds) {
            Ok(t) => t,
            Err(e) => return Err(ScenarioError::invalid("thresholds", e.to_string())),
        };
        self.check_threshold_kinds(&thresholds, &self.thresholds)?;
        self.checks.validate(&self.workload())?;
        self.report.validate()
    }

    /// Makes the mix and rate of a `[kubernetes]` model (open loop), once its numbers are
    /// checked; a mix or rate already given must be the model's (a scenario written out
    /// and read again), and an `op` cannot go with it.
    pub(crate) fn derive_kubernetes(&mut self) -> Result<(), ScenarioError> {
        let Some(k) = &self.kubernetes else { return Ok(()) };
        k.validate(self.cluster.quota_backend_bytes)?;
        let (mix, rate) = k.mix();
        let conflict =
            |field| ScenarioError::invalid(field, "is made by [kubernetes]: give one or the other");
        if self.op.is_some() {
            return Err(conflict("op"));
        }
        if !self.mix.is_empty() && self.mix != mix {
            return Err(conflict("mix"));
        }
        if self.load.rate != 0 && self.load.rate != rate {
            return Err(conflict("load.rate"));
        }
        // The model's compactor is the apiserver's; a `[compaction]` of its own only when
        // the model has none (`compaction-interval = "0s"`).
        if let Some(compactor) = k.compaction() {
            if self.compaction.as_ref().is_some_and(|c| *c != compactor) {
                return Err(ScenarioError::invalid(
                    "compaction",
                    "is made by [kubernetes] (compaction-interval): give one or the other",
                ));
            }
            self.compaction = Some(compactor);
        }
        self.mix = mix;
        self.load.rate = rate;
        self.load.schedule = crate::Schedule::Open;
        Ok(())
    }

    /// A threshold on an operation the run does not have (`range.p99` on a put run) could
    /// never be checked: refused before the run.
    fn check_threshold_kinds(
        &self,
        thresholds: &[threshold::Threshold],
        texts: &[String],
    ) -> Result<(), ScenarioError> {
        let workload = self.workload();
        if workload.is_empty() {
            return Ok(()); // a matrix base, completed by its cases (each checked)
        }
        let mut kinds: Vec<OpKind> =
            workload.iter().flat_map(|(_, op)| op.kinds().iter().copied()).collect();
        if let Some(c) = &self.compaction {
            kinds.push(OpKind::Compact);
            if c.style == CompactionStyle::Apiserver {
                kinds.push(OpKind::K8sCompactor);
            }
        }
        for (t, text) in thresholds.iter().zip(texts) {
            if let Some(kind) = t.op.filter(|k| !kinds.contains(k)) {
                let has: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                return Err(ScenarioError::invalid(
                    "thresholds",
                    format!(
                        "{text:?} is about {kind}, which this run does not measure (it has {})",
                        has.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks `op` or `mix`, whichever the scenario has.
    fn validate_workload(&self) -> Result<(), ScenarioError> {
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
        Ok(())
    }
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
    fn thresholds_name_only_operations_the_run_measures() {
        let with = |t: &str| {
            Scenario::from_toml_str(&format!(
                "thresholds = [{t:?}]\n[load]\ntotal = 10\n[op.txn-mixed]\n"
            ))
        };
        with("txn-read.p99 < \"20ms\"").unwrap();
        with("p99 < \"20ms\"").unwrap();
        let err = with("put.p99 < \"20ms\"").unwrap_err().to_string();
        assert!(
            err.contains("put, which this run does not measure (it has txn-read, txn-write)"),
            "{err}"
        );
    }

    #[test]
    fn the_audit_covers_key_value_operations_within_its_limit() {
        let with = |checks: &str, op: &str| {
            Scenario::from_toml_str(&format!("[checks]\n{checks}\n[load]\ntotal = 10\n[op.{op}]\n"))
        };
        let s = with("audit = true", "txn-mixed").unwrap();
        assert!(s.checks.audit);
        assert_eq!(s.checks.audit_limit, 1_000_000);
        assert_eq!(with("audit = true\naudit-limit = 5", "put").unwrap().checks.audit_limit, 5);
        let field =
            |checks: &str, op: &str| with(checks, op).unwrap_err().field().map(str::to_owned);
        assert_eq!(field("audit-limit = 0", "put").as_deref(), Some("checks.audit-limit"));
        assert_eq!(field("audit = true", "stm").as_deref(), Some("checks.audit"));
        let err = with("audit-limt = 5", "put").unwrap_err().to_string();
        assert!(err.contains("unknown field `audit-limt`"), "{err}");
        // Off, the section is not written back: reports of unaudited runs are unchanged.
        let plain = Scenario::from_toml_str(PUT).unwrap();
        assert!(!toml::to_string(&plain).unwrap().contains("checks"));
    }

    #[test]
    fn reads_put() {
        let s = Scenario::from_toml_str(PUT).unwrap();
        let Some(Operation::Put(p)) = &s.op else { panic!("not a put") };
        assert_eq!(p.val_size, 1024);
        assert_eq!(p.key_size, 8);
        assert!(p.sequential_keys);
        assert_eq!(s.load.clients, 2);
        assert_eq!(s.load.total, Some(100));
        assert_eq!(s.report.interval, None);
        // 100 requests, no rate: the length is not known, so the interval adapts.
        let auto = SeriesInterval { length: MIN_INTERVAL, adaptive: true };
        assert_eq!(s.series_interval(), auto);
    }

    #[test]
    fn interval_is_chosen_from_the_run_length() {
        let length = |toml: &str| Scenario::from_toml_str(toml).unwrap().series_interval();
        let fixed = |ms| SeriesInterval { length: Duration::from_millis(ms), adaptive: false };
        let put = "[op.put]\n";
        assert_eq!(length(&format!("[load]\nduration = \"800ms\"\n{put}")), fixed(10));
        assert_eq!(length(&format!("[load]\nduration = \"3s\"\n{put}")), fixed(20));
        assert_eq!(length(&format!("[load]\nduration = \"1m\"\n{put}")), fixed(500));
        assert_eq!(length(&format!("[load]\nduration = \"1h\"\n{put}")), fixed(20_000));
        // 10,000 requests at 100 a second: 100 s.
        assert_eq!(length(&format!("[load]\ntotal = 10000\nrate = 100\n{put}")), fixed(500));
        // The shorter of the two bounds.
        let both = format!("[load]\ntotal = 10000\nrate = 100\nduration = \"2s\"\n{put}");
        assert_eq!(length(&both), fixed(10));
        let set = format!("[load]\nduration = \"1h\"\n{put}[report]\ninterval = \"250ms\"\n");
        assert_eq!(length(&set), fixed(250));
        let sample = format!("[load]\nduration = \"3s\"\n{put}[report]\nsample = true\n");
        assert_eq!(length(&sample), fixed(1000));
        for toml in [PUT, "[load]\ntotal = 10\nclients = 3\n[op.put]\n"] {
            let chosen = length(toml);
            assert_eq!(chosen, SeriesInterval { length: MIN_INTERVAL, adaptive: true });
        }
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
    fn scaling() {
        let s = Scenario::from_toml_str("[load]\ntotal = 100000\nduration = \"60s\"\n[op.put]\n")
            .unwrap();
        let small = s.scaled(0.01);
        assert_eq!(small.load.total, Some(1000));
        assert_eq!(small.load.duration, Some(Duration::from_millis(600)));
        assert_eq!(s.scaled(0.0).load.total, Some(1));
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
