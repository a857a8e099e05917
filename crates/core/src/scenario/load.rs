//! How much load, for how long (`[load]`): connections, logical clients, a total or a
//! duration, the rate, warm-up, the schedule and its stages, and client steps.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ScenarioError, is_default};
use crate::schedule::{Arrivals, Rate, Schedule, Stage};
use crate::step::{ClientStep, MAX_STEPS, StepPlan};
use crate::unit;

/// The most logical clients one run may have.
pub const MAX_CLIENTS: u32 = 10_000_000;

/// The most gRPC connections one run may open.
pub const MAX_CONNS: u32 = 100_000;

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
    /// Steps of the number of clients that send, each with its own total or duration,
    /// instead of one `total` or `duration` ([`crate::step`]): of the `clients` created,
    /// step `k` has the first `client_steps[k].clients` send.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_steps: Vec<ClientStep>,
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

    /// The client steps, when the run has any.
    #[must_use]
    pub fn step_plan(&self) -> Option<StepPlan> {
        (!self.client_steps.is_empty()).then(|| StepPlan::new(&self.client_steps))
    }

    /// The requests the run asks for: `total`, or its client steps' totals together when
    /// every step ends by count.
    #[must_use]
    pub fn total_asked(&self) -> Option<u64> {
        self.total.or_else(|| self.step_plan()?.total())
    }

    /// The time the run asks for: `duration`, or its client steps' durations together when
    /// every step ends by time.
    #[must_use]
    pub fn duration_asked(&self) -> Option<Duration> {
        self.duration.or_else(|| self.step_plan()?.length())
    }

    /// Checks the `[load]` section; a stream workload (`is_stream`) needs no stop condition.
    pub(super) fn validate(&self, is_stream: bool) -> Result<(), ScenarioError> {
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(ScenarioError::invalid(
                "load.clients",
                format!("must be 1 to {MAX_CLIENTS}, got {}", self.clients),
            ));
        }
        if let Some(c) = self.conns
            && (c == 0 || c > MAX_CONNS)
        {
            return Err(ScenarioError::invalid(
                "load.conns",
                format!("must be 1 to {MAX_CONNS}, got {c}"),
            ));
        }
        match (self.total, self.duration) {
            _ if !self.client_steps.is_empty() => self.validate_steps(is_stream)?,
            (None, None) if is_stream || !self.stages.is_empty() => {}
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
        if self.schedule == Schedule::Open && self.rate == 0 && self.stages.is_empty() {
            return Err(ScenarioError::invalid(
                "load.schedule",
                "an open loop needs a rate (requests per second) or stages",
            ));
        }
        if self.arrivals == Arrivals::Poisson && self.schedule != Schedule::Open {
            return Err(ScenarioError::invalid(
                "load.arrivals",
                "applies to an open loop (schedule = \"open\")",
            ));
        }
        if !self.stages.is_empty() && self.rate > 0 {
            return Err(ScenarioError::invalid(
                "load.stages",
                "replace rate; give one or the other",
            ));
        }
        for (i, st) in self.stages.iter().enumerate() {
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
        if self.rate > 100_000_000 {
            return Err(ScenarioError::invalid(
                "load.rate",
                format!("{} requests per second is beyond any etcd", self.rate),
            ));
        }
        Ok(())
    }

    /// Checks `client-steps` and what may go with them: each step's own end replaces
    /// `total` and `duration`, and a step measures the closed loop of its clients, which a
    /// rate would hide.
    fn validate_steps(&self, is_stream: bool) -> Result<(), ScenarioError> {
        let field = "load.client-steps";
        if is_stream {
            return Err(ScenarioError::invalid(
                field,
                "apply to request workloads; a watch run has its own streams",
            ));
        }
        if self.client_steps.len() > MAX_STEPS {
            return Err(ScenarioError::invalid(
                field,
                format!("{} steps; at most {MAX_STEPS}", self.client_steps.len()),
            ));
        }
        let replaced =
            [("load.total", self.total.is_some()), ("load.duration", self.duration.is_some())];
        if let Some((name, _)) = replaced.iter().find(|(_, set)| *set) {
            return Err(ScenarioError::invalid(
                name,
                "cannot go with client-steps: each step says how long it runs (its total or duration)",
            ));
        }
        if self.rate > 0 || !self.stages.is_empty() || self.schedule == Schedule::Open {
            return Err(ScenarioError::invalid(
                field,
                "measure each number of clients in a closed loop, as fast as they go: they cannot go with rate, stages or an open schedule",
            ));
        }
        for (i, step) in self.client_steps.iter().enumerate() {
            let at = format!("{field}.{i}");
            if step.clients == 0 {
                return Err(ScenarioError::invalid(
                    &format!("{at}.clients"),
                    "must be more than 0",
                ));
            }
            if step.clients > self.clients {
                return Err(ScenarioError::invalid(
                    &format!("{at}.clients"),
                    format!(
                        "{} is more than load.clients ({}): the run creates load.clients logical \
                         clients and each step has some of them send; set clients = {}",
                        step.clients,
                        self.clients,
                        self.client_steps.iter().map(|s| s.clients).max().unwrap_or(0)
                    ),
                ));
            }
            match (step.total, step.duration) {
                (Some(_), Some(_)) => {
                    return Err(ScenarioError::invalid(&at, "give total or duration, not both"));
                }
                (None, None) => {
                    return Err(ScenarioError::invalid(
                        &at,
                        "needs total (requests) or duration (time) to know when it ends",
                    ));
                }
                (Some(0), None) => {
                    return Err(ScenarioError::invalid(
                        &format!("{at}.total"),
                        "must be more than 0",
                    ));
                }
                (None, Some(d)) if d.is_zero() => {
                    return Err(ScenarioError::invalid(
                        &format!("{at}.duration"),
                        "must be more than 0",
                    ));
                }
                _ => {}
            }
        }
        Ok(())
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
            client_steps: Vec::new(),
        }
    }
}

fn one_u32() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::scenario::{Scenario, SeriesInterval};
    use crate::step::{ClientStep, StepEnd};
    use crate::workload::{Operation, PutOp};

    /// A put scenario with `load` as its `[load]` table's lines.
    fn with_load(load: &str) -> Result<Scenario, crate::ScenarioError> {
        Scenario::from_toml_str(&format!("[load]\n{load}\n[op.put]\n"))
    }

    #[test]
    fn client_steps_replace_total_and_duration() {
        let s = with_load(
            "clients = 16\nclient-steps = [{ clients = 1, total = 100 }, { clients = 4, duration = \"2s\" }, { clients = 16, total = 300 }]",
        )
        .unwrap();
        let steps = &s.load.client_steps;
        assert_eq!(steps.len(), 3);
        assert_eq!(
            steps[1],
            ClientStep { clients: 4, total: None, duration: Some(Duration::from_secs(2)) }
        );
        assert_eq!(steps[2].end(), StepEnd::Total(300));
        assert_eq!(s.load.step_plan().unwrap().clients(), 16);
        // Written back as read.
        assert_eq!(Scenario::from_toml_str(&toml::to_string(&s).unwrap()).unwrap(), s);
        // Scaled like every total and duration.
        let small = s.scaled(0.5);
        assert_eq!(small.load.client_steps[0].total, Some(50));
        assert_eq!(small.load.client_steps[1].duration, Some(Duration::from_secs(1)));
        // Timed steps give the run's length, and so its interval.
        let timed = with_load(
            "clients = 2\nclient-steps = [{ clients = 1, duration = \"1s\" }, { clients = 2, duration = \"2s\" }]",
        )
        .unwrap();
        let fixed = SeriesInterval { length: Duration::from_millis(20), adaptive: false };
        assert_eq!(timed.series_interval(), fixed);
        // What the run asks for, for the report and the progress bar: the steps' together.
        assert_eq!(
            (timed.load.total_asked(), timed.load.duration_asked()),
            (None, Some(Duration::from_secs(3)))
        );
        let counted = with_load(
            "clients = 2\nclient-steps = [{ clients = 1, total = 10 }, { clients = 2, total = 5 }]",
        )
        .unwrap();
        assert_eq!((counted.load.total_asked(), counted.load.duration_asked()), (Some(15), None));
        assert_eq!((s.load.total_asked(), s.load.duration_asked()), (None, None), "mixed: neither");
    }

    #[test]
    fn client_steps_are_checked() {
        let err = |load: &str| {
            let e = with_load(load).unwrap_err();
            (e.field().map(str::to_owned), e.to_string())
        };
        let steps = |s: &str| format!("clients = 10\nclient-steps = [{s}]");
        let (field, text) = err(&steps("{ clients = 1, total = 5 }, { clients = 11, total = 5 }"));
        assert_eq!(field.as_deref(), Some("load.client-steps.1.clients"));
        assert!(
            text.contains("11 is more than load.clients (10)") && text.contains("set clients = 11"),
            "{text}"
        );
        assert!(text.starts_with("line 3, column 57: "), "located at the value: {text}");
        let field = |load: &str| err(load).0;
        assert_eq!(
            field(&steps("{ clients = 0, total = 5 }")).as_deref(),
            Some("load.client-steps.0.clients")
        );
        assert_eq!(field(&steps("{ clients = 1 }")).as_deref(), Some("load.client-steps.0"));
        assert_eq!(
            field(&steps("{ clients = 1, total = 5, duration = \"1s\" }")).as_deref(),
            Some("load.client-steps.0")
        );
        assert_eq!(
            field(&steps("{ clients = 1, total = 0 }")).as_deref(),
            Some("load.client-steps.0.total")
        );
        assert_eq!(
            field(&steps("{ clients = 1, duration = \"0s\" }")).as_deref(),
            Some("load.client-steps.0.duration")
        );
        assert_eq!(
            field(&steps("{ clients = 1, duration = \"20y\" }")).as_deref(),
            Some("load.client-steps.0.duration")
        );
        let one = "{ clients = 1, total = 5 }";
        assert_eq!(field(&format!("total = 10\n{}", steps(one))).as_deref(), Some("load.total"));
        assert_eq!(
            field(&format!("duration = \"1s\"\n{}", steps(one))).as_deref(),
            Some("load.duration")
        );
        assert_eq!(
            field(&format!("rate = 10\n{}", steps(one))).as_deref(),
            Some("load.client-steps")
        );
        let many = vec![one; crate::step::MAX_STEPS + 1].join(", ");
        assert_eq!(field(&steps(&many)).as_deref(), Some("load.client-steps"));
        let (_, text) = err(&steps("{ clients = 1, totl = 5 }"));
        assert!(text.contains("unknown field `totl`"), "{text}");
        let watch = Scenario::from_toml_str(&format!(
            "[load]\n{}\n[op.watch]\nput-total = 10\n",
            steps(one)
        ));
        assert_eq!(watch.unwrap_err().field(), Some("load.client-steps"));
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
}
