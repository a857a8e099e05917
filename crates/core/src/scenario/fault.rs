//! Scripted faults during a run (`[[faults]]`), as a scenario asks for them; what each step
//! did to the service is in the report ([`crate::fault`]).
//!
//! ```toml
//! [[faults]]
//! at = "2s"              # from the start of measurement (after warm-up); steps in time order
//! action = "pause"       # kill | pause | resume | restart | move-leader | compact | defrag
//!                        # | partition | heal | delay | bandwidth
//! member = "leader"      # leader | follower | follower:N | NAME (or member:NAME)
//! for = "1s"             # pause, partition, delay, bandwidth: undo after this long
//!
//! [[faults]]
//! at = "5s"
//! action = "kill"
//! member = "follower"
//! ```
//!
//! - `kill` (SIGKILL), `pause` (SIGSTOP; resumed with SIGCONT after `for`, at a `resume` step,
//!   or when the run ends) and `restart` (kill if running, then start the same member again
//!   with its data dir and flags) act on a member's process, so they need a throwaway local
//!   cluster that etcdlat started. `resume` without a member resumes every member an earlier
//!   step paused; `restart` without a member restarts every member an earlier step killed.
//! - `move-leader` (etcd's MoveLeader, to `member` or the first follower), `compact` (at the
//!   current revision) and `defrag` (of `member`, or of every member in turn) are requests
//!   and work against any cluster.
//! - `partition` holds every byte between the member and its peers, both ways (connections
//!   stay open and the member keeps running, as in a real network partition); `heal` undoes
//!   it (of `member`, or of every member). `delay` adds `latency` (one way) to every link of
//!   the member (peers and client), or of every member without one; `bandwidth` caps the
//!   line rate of those links at `bandwidth`. With `for`, each is undone after that long. They
//!   act on the network, so they need a throwaway local cluster (whose links etcdlat then
//!   emulates, see [`super::network`]) or, against endpoints, `network.toxiproxy`.
//! - A member is named when the step runs: `leader` is the leader at that moment,
//!   `follower` the first follower (by name) that this run has not killed or paused,
//!   `follower:N` the N-th follower by name, 1-based, as in `target`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Cluster, Load, Network, ScenarioError};
use crate::unit;

/// One scripted fault: at a time, do something to the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FaultStep {
    /// When, from the start of measurement (after warm-up).
    #[serde(with = "unit::duration")]
    pub at: Duration,
    /// What to do.
    pub action: FaultAction,
    /// Which member: required for kill and pause; optional for resume, restart, move-leader
    /// (the new leader) and defrag; not for compact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<MemberRef>,
    /// Pause, partition, delay and bandwidth: undo the step after this long (written `for`).
    #[serde(
        rename = "for",
        default,
        with = "unit::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub pause_for: Option<Duration>,
    /// Delay only: the one-way latency added to each of the member's links.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub latency: Option<Duration>,
    /// Bandwidth only: the line rate the member's links are capped at, in bytes per second
    /// (written `"1MB/s"`).
    #[serde(default, with = "unit::opt_bandwidth", skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
}

/// What a fault step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultAction {
    /// SIGKILL the member's process (local clusters).
    Kill,
    /// SIGSTOP the member's process: it holds its connections and answers nothing (local
    /// clusters).
    Pause,
    /// SIGCONT a paused member (local clusters).
    Resume,
    /// Start a killed member again with the same data dir and flags; a running one is killed
    /// first (local clusters).
    Restart,
    /// Move the leadership to another member (etcd's MoveLeader).
    MoveLeader,
    /// Compact the key-value history at the current revision.
    Compact,
    /// Defragment a member's backend, or every member's in turn.
    Defrag,
    /// Hold every byte between the member and its peers, both ways.
    Partition,
    /// Undo partitions: of the member, or of every member.
    Heal,
    /// Add latency to the member's links (or every member's).
    Delay,
    /// Cap the line rate of the member's links (or every member's).
    Bandwidth,
}

impl FaultAction {
    /// The name as written in scenarios (`move-leader`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Kill => "kill",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Restart => "restart",
            Self::MoveLeader => "move-leader",
            Self::Compact => "compact",
            Self::Defrag => "defrag",
            Self::Partition => "partition",
            Self::Heal => "heal",
            Self::Delay => "delay",
            Self::Bandwidth => "bandwidth",
        }
    }

    /// Whether the step acts on the network between members: emulated links of a local
    /// cluster, or toxiproxy's toxics.
    #[must_use]
    pub fn is_network(self) -> bool {
        matches!(self, Self::Partition | Self::Heal | Self::Delay | Self::Bandwidth)
    }

    /// Whether `for` undoes the step after a while.
    #[must_use]
    pub fn takes_for(self) -> bool {
        matches!(self, Self::Pause | Self::Partition | Self::Delay | Self::Bandwidth)
    }

    /// Whether the step acts on a member's process, and so needs a local cluster.
    #[must_use]
    pub fn needs_local_cluster(self) -> bool {
        matches!(self, Self::Kill | Self::Pause | Self::Resume | Self::Restart)
    }
}

impl std::fmt::Display for FaultAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A member, named when the step runs. Written as a string: `leader`, `follower`,
/// `follower:N` (1-based, by name) or a member name (`m1`, or `member:m1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum MemberRef {
    /// The leader when the step runs.
    Leader,
    /// The first follower, by name, that this run has not killed or paused.
    Follower,
    /// The N-th follower by name, 1-based.
    FollowerN(u32),
    /// A member by name.
    Name(String),
}

impl std::str::FromStr for MemberRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "leader" => Self::Leader,
            "follower" => Self::Follower,
            "" => return Err("member is empty: leader, follower, follower:N or a name".into()),
            other => {
                if let Some(n) =
                    other.strip_prefix("follower:").or_else(|| other.strip_prefix("follower-"))
                {
                    match n.parse::<u32>() {
                        Ok(n) if n >= 1 => Self::FollowerN(n),
                        _ => {
                            return Err(format!(
                                "member {other:?}: the follower number counts from 1"
                            ));
                        }
                    }
                } else {
                    let name = other.strip_prefix("member:").unwrap_or(other);
                    if name.is_empty()
                        || name.contains(|c: char| c.is_whitespace() || c.is_control() || c == ':')
                    {
                        return Err(format!(
                            "unknown member {other:?} (leader, follower, follower:N or a member name)"
                        ));
                    }
                    Self::Name(name.to_owned())
                }
            }
        })
    }
}

impl std::fmt::Display for MemberRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Leader => f.write_str("leader"),
            Self::Follower => f.write_str("follower"),
            Self::FollowerN(n) => write!(f, "follower:{n}"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

impl TryFrom<String> for MemberRef {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<MemberRef> for String {
    fn from(m: MemberRef) -> String {
        m.to_string()
    }
}

/// Checks a scenario's fault steps against its cluster and load.
pub(super) fn validate(
    steps: &[FaultStep],
    cluster: &Cluster,
    network: &Network,
    load: &Load,
) -> Result<(), ScenarioError> {
    let mut previous = Duration::ZERO;
    for (i, step) in steps.iter().enumerate() {
        let field = |name: &str| format!("faults.{i}.{name}");
        let err = |name: &str, message: String| ScenarioError::invalid(&field(name), message);
        let action = step.action;
        if step.at < previous {
            return Err(err(
                "at",
                format!(
                    "steps must be in time order: {} is before the previous step's {}",
                    unit::format_duration(step.at),
                    unit::format_duration(previous)
                ),
            ));
        }
        previous = step.at;
        if let Some(d) = load.duration
            && step.at >= d
        {
            return Err(err(
                "at",
                format!(
                    "{} is not before the run ends (load.duration = {})",
                    unit::format_duration(step.at),
                    unit::format_duration(d)
                ),
            ));
        }
        if action.needs_local_cluster() && !cluster.endpoints.is_empty() {
            return Err(err(
                "action",
                format!(
                    "{action} acts on a member's process, so it needs a throwaway local cluster (remove cluster.endpoints); against given endpoints only move-leader, compact and defrag can run"
                ),
            ));
        }
        if action.is_network() && !cluster.endpoints.is_empty() && network.toxiproxy.is_none() {
            return Err(err(
                "action",
                format!(
                    "{action} acts on the network: against given endpoints it needs network.toxiproxy (a toxiproxy server in front of the members); a throwaway local cluster's network etcdlat emulates itself"
                ),
            ));
        }
        match (action, step.latency, step.bandwidth) {
            (FaultAction::Delay, None, _) => {
                return Err(err(
                    "latency",
                    "delay needs the latency it adds, like \"50ms\"".into(),
                ));
            }
            (FaultAction::Bandwidth, _, None) => {
                return Err(err("bandwidth", "bandwidth needs the rate, like \"1MB/s\"".into()));
            }
            (FaultAction::Delay, Some(l), _) if l.is_zero() => {
                return Err(err("latency", "must be more than 0".into()));
            }
            (FaultAction::Delay, _, Some(_)) | (FaultAction::Bandwidth, Some(_), _) => {
                return Err(err(
                    if action == FaultAction::Delay { "bandwidth" } else { "latency" },
                    format!("does not apply to {action}"),
                ));
            }
            (FaultAction::Delay | FaultAction::Bandwidth, _, _) | (_, None, None) => {}
            (other, l, _) => {
                return Err(err(
                    if l.is_some() { "latency" } else { "bandwidth" },
                    format!("applies to delay and bandwidth steps, not to {other}"),
                ));
            }
        }
        match (&step.member, action) {
            (None, FaultAction::Kill | FaultAction::Pause | FaultAction::Partition) => {
                return Err(err(
                    "member",
                    format!("{action} needs a member: leader, follower, follower:N or a name"),
                ));
            }
            (Some(_), FaultAction::Compact) => {
                return Err(err(
                    "member",
                    "compact acts on the whole cluster; remove member".into(),
                ));
            }
            (
                Some(m @ (MemberRef::Leader | MemberRef::Follower | MemberRef::FollowerN(_))),
                FaultAction::Resume,
            ) => {
                return Err(err(
                    "member",
                    format!(
                        "resume takes a member name, or none to resume every paused member (\"{m}\" may name another member once the cluster has moved on)"
                    ),
                ));
            }
            (Some(MemberRef::Leader), FaultAction::MoveLeader) => {
                return Err(err(
                    "member",
                    "move-leader moves the leadership to a follower: name one, or leave member out for the first".into(),
                ));
            }
            (None, FaultAction::Restart)
                if !steps[..i].iter().any(|s| s.action == FaultAction::Kill) =>
            {
                return Err(err(
                    "member",
                    "restart without a member restarts the members earlier steps killed, and no earlier step kills one".into(),
                ));
            }
            (None, FaultAction::Resume)
                if !steps[..i].iter().any(|s| s.action == FaultAction::Pause) =>
            {
                return Err(err(
                    "member",
                    "resume without a member resumes the members earlier steps paused, and no earlier step pauses one".into(),
                ));
            }
            _ => {}
        }
        match step.pause_for {
            Some(d) if action.takes_for() && d.is_zero() => {
                return Err(err("for", "must be more than 0".into()));
            }
            Some(_) if !action.takes_for() => {
                return Err(err(
                    "for",
                    format!("applies to pause, partition, delay and bandwidth, not to {action}"),
                ));
            }
            _ => {}
        }
        // The size of a local cluster is known only when the scenario says it (the command
        // line may change it); the driver checks again against the real cluster.
        if let (Some(members), true) = (cluster.members, cluster.endpoints.is_empty()) {
            check_member(step.member.as_ref(), members).map_err(|m| err("member", m))?;
        }
    }
    Ok(())
}

/// Checks that `member` can name a member of a local cluster of `members` (named `m0` ..).
fn check_member(member: Option<&MemberRef>, members: u32) -> Result<(), String> {
    let followers = members.saturating_sub(1);
    match member {
        Some(MemberRef::Follower) if followers == 0 => {
            Err("a cluster of 1 member has no followers".into())
        }
        Some(MemberRef::FollowerN(n)) if *n > followers => {
            Err(format!("follower {n} asked for, a cluster of {members} member(s) has {followers}"))
        }
        Some(MemberRef::Name(name))
            if !(0..members).any(|i| name.strip_prefix('m') == Some(&i.to_string())) =>
        {
            Err(format!(
                "no member named {name:?} in a local cluster of {members} (m0 .. m{})",
                members - 1
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn parse(faults: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_str(&format!(
            "[cluster]\nmembers = 3\n[load]\nduration = \"10s\"\n[op.put]\n{faults}"
        ))
    }

    #[test]
    fn reads_steps() {
        let s = parse(
            "[[faults]]\nat = \"2s\"\naction = \"pause\"\nmember = \"leader\"\nfor = \"1s\"\n\
             [[faults]]\nat = \"4s\"\naction = \"kill\"\nmember = \"follower:2\"\n\
             [[faults]]\nat = \"5s\"\naction = \"restart\"\n\
             [[faults]]\nat = \"6s\"\naction = \"move-leader\"\nmember = \"member:m1\"\n\
             [[faults]]\nat = \"7s\"\naction = \"compact\"\n\
             [[faults]]\nat = \"8s\"\naction = \"defrag\"\n",
        )
        .unwrap();
        assert_eq!(s.faults.len(), 6);
        assert_eq!(s.faults[0].action, FaultAction::Pause);
        assert_eq!(s.faults[0].member, Some(MemberRef::Leader));
        assert_eq!(s.faults[0].pause_for, Some(Duration::from_secs(1)));
        assert_eq!(s.faults[1].member, Some(MemberRef::FollowerN(2)));
        assert_eq!(s.faults[3].member, Some(MemberRef::Name("m1".into())));
        let text = toml::to_string(&s).unwrap();
        assert!(text.contains("for = \"1s\""), "{text}");
        assert_eq!(Scenario::from_toml_str(&text).unwrap(), s);
        assert_eq!(s.scaled(0.5).faults[1].at, Duration::from_secs(2));
    }

    #[test]
    fn reads_network_steps() {
        let s = parse(
            "[[faults]]\nat = \"1s\"\naction = \"partition\"\nmember = \"leader\"\nfor = \"2s\"\n\
             [[faults]]\nat = \"4s\"\naction = \"heal\"\n\
             [[faults]]\nat = \"5s\"\naction = \"delay\"\nmember = \"m1\"\nlatency = \"20ms\"\nfor = \"1s\"\n\
             [[faults]]\nat = \"7s\"\naction = \"bandwidth\"\nbandwidth = \"1Mbit/s\"\n",
        )
        .unwrap();
        let actions: Vec<FaultAction> = s.faults.iter().map(|f| f.action).collect();
        assert_eq!(
            actions,
            [FaultAction::Partition, FaultAction::Heal, FaultAction::Delay, FaultAction::Bandwidth]
        );
        assert_eq!(s.faults[2].latency, Some(Duration::from_millis(20)));
        assert_eq!(s.faults[3].bandwidth, Some(125_000));
        assert!(s.faults.iter().all(|f| f.action.is_network()));
        let text = toml::to_string(&s).unwrap();
        assert_eq!(Scenario::from_toml_str(&text).unwrap(), s);
        // Against endpoints they need toxiproxy in front of the members.
        let remote = "[cluster]\nendpoints = [\"127.0.0.1:2379\"]\n[load]\nduration = \"10s\"\n[op.put]\n\
                      [[faults]]\nat = \"1s\"\naction = \"delay\"\nlatency = \"5ms\"\n";
        let err = Scenario::from_toml_str(remote).unwrap_err();
        assert!(err.to_string().contains("network.toxiproxy"), "{err}");
        let proxied =
            remote.replace("[load]", "[network]\ntoxiproxy = \"http://127.0.0.1:8474\"\n[load]");
        Scenario::from_toml_str(&proxied).unwrap();
    }

    #[test]
    fn bad_steps_name_the_field_and_line() {
        let cases = [
            ("[[faults]]\nat = \"2s\"\naction = \"explode\"\n", None, "unknown variant `explode`"),
            (
                "[[faults]]\nat = \"2s\"\naction = \"kill\"\n",
                Some("faults.0.member"),
                "needs a member",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"kill\"\nmember = \"m7\"\n",
                Some("faults.0.member"),
                "no member named \"m7\"",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"kill\"\nmember = \"follower:3\"\n",
                Some("faults.0.member"),
                "has 2",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"kill\"\nmember = \"follower:0\"\n",
                None,
                "counts from 1",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"kill\"\nmember = \"leader\"\nfor = \"1s\"\n",
                Some("faults.0.for"),
                "not to kill",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"delay\"\nmember = \"leader\"\n",
                Some("faults.0.latency"),
                "needs the latency",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"bandwidth\"\nbandwidth = \"-1MB/s\"\n",
                None,
                "invalid bandwidth",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"partition\"\n",
                Some("faults.0.member"),
                "needs a member",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"kill\"\nmember = \"m1\"\nlatency = \"1ms\"\n",
                Some("faults.0.latency"),
                "not to kill",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"partition\"\nmember = \"m9\"\n",
                Some("faults.0.member"),
                "no member named",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"pause\"\nmember = \"leader\"\nfor = \"0s\"\n",
                Some("faults.0.for"),
                "more than 0",
            ),
            ("[[faults]]\nat = \"12s\"\naction = \"compact\"\n", Some("faults.0.at"), "run ends"),
            (
                "[[faults]]\nat = \"3s\"\naction = \"compact\"\n[[faults]]\nat = \"2s\"\naction = \"compact\"\n",
                Some("faults.1.at"),
                "time order",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"compact\"\nmember = \"m0\"\n",
                Some("faults.0.member"),
                "whole cluster",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"restart\"\n",
                Some("faults.0.member"),
                "no earlier step",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"resume\"\nmember = \"leader\"\n",
                Some("faults.0.member"),
                "member name",
            ),
            (
                "[[faults]]\nat = \"2s\"\naction = \"move-leader\"\nmember = \"leader\"\n",
                Some("faults.0.member"),
                "to a follower",
            ),
            ("[[faults]]\nat = \"soon\"\naction = \"compact\"\n", None, "invalid duration"),
            (
                "[[faults]]\nat = \"2s\"\naction = \"compact\"\nwhen = 1\n",
                None,
                "unknown field `when`",
            ),
        ];
        for (faults, field, needle) in cases {
            let err = parse(faults).unwrap_err();
            assert_eq!(err.field(), field, "{faults}: {err}");
            let msg = err.to_string();
            assert!(msg.contains(needle), "{faults}: {needle:?} in {msg}");
            assert!(msg.starts_with("line "), "{faults}: located: {msg}");
        }
        let remote = Scenario::from_toml_str(
            "[cluster]\nendpoints = [\"127.0.0.1:2379\"]\n[load]\ntotal = 10\n[op.put]\n\
             [[faults]]\nat = \"1s\"\naction = \"kill\"\nmember = \"leader\"\n",
        )
        .unwrap_err();
        assert_eq!(remote.field(), Some("faults.0.action"));
        assert!(remote.to_string().contains("throwaway local cluster"), "{remote}");
        let single = Scenario::from_toml_str(
            "[cluster]\nmembers = 1\n[load]\ntotal = 10\n[op.put]\n\
             [[faults]]\nat = \"1s\"\naction = \"kill\"\nmember = \"follower\"\n",
        )
        .unwrap_err();
        assert!(single.to_string().contains("no followers"), "{single}");
    }
}
