//! Carrying out a scenario's fault steps ([`etcdlat_core::fault`]) during the measured run.
//!
//! # Design
//!
//! The executor is a task on the driver's runtime, spawned beside the run like background
//! compaction, that sleeps until each step's time (counted from the start of measurement)
//! and carries it out; it never touches the workers, which only see what the cluster does.
//!
//! Steps that act on a member's process (kill, pause, resume, restart) need the processes: a
//! driver built with [`crate::DriverBuilder::local_cluster`] holds a [`MemberControl`], a
//! handle on the cluster's member processes shared with the [`crate::LocalCluster`] that
//! owns them (the cluster still tears everything down, and nothing is started again after
//! it has). So nothing changes for callers: the CLI, the testkit and embedders build drivers
//! from local clusters as before, and their scenarios' faults just work. A driver built from
//! endpoints has no handle: only move-leader, compact and defrag (requests any client may
//! send) can run, and network steps when the scenario names a toxiproxy server in front of
//! the cluster ([`super::toxiproxy`]); a scenario with other steps fails before the run
//! starts ([`check`]), as does one that names a member the cluster does not have, a member
//! no proxy is mapped to, or a toxiproxy that does not answer or lacks a proxy.
//!
//! A step that cannot be done when its time comes (the member already down, no leader
//! elected) is reported with why, and the run goes on. When the run ends (stopped by a
//! shutdown included), every member a step paused is resumed and every network change is
//! undone (toxics removed), so that the cluster can be checked and torn down.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use etcd_client::Client;
use etcdlat_core::fault::AppliedFault;
use etcdlat_core::{FaultAction, FaultStep, MemberRef};
use tokio::sync::watch;

use super::discovery::{self, MemberInfo};
use super::local::MemberControl;
use super::network::LinkChange;
use super::toxiproxy::{Proxies, Toxics};

mod network;
mod process;
mod request;
use crate::error::DriverError;
pub use crate::error::FaultError;
use crate::transport::{Dialer, control_client};

/// Where the steps act: the member processes when the cluster is local, and the endpoints;
/// for a cluster etcdlat did not start, the toxiproxy server in front of it, if any.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub control: Option<MemberControl>,
    pub endpoints: Vec<String>,
    pub dialer: Dialer,
    pub toxiproxy: Option<Proxies>,
}

/// How long a step may wait for the cluster to have a leader (one it needs to name).
const LEADER_WAIT: Duration = Duration::from_secs(5);

/// How long one member may take to answer Status when the executor looks for the leader.
const STATUS_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a move-leader, compact or defrag request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Checks, before the run, that every step can be carried out against this cluster: steps on
/// processes need a local cluster, steps on the network an emulated one or toxiproxy (which
/// answers, has every proxy mapped, and has proxies for the members the steps act on), and
/// named members and followers must exist: among the local cluster's members, else among
/// `members` (the run's discovery).
pub(crate) async fn check(
    steps: &[FaultStep],
    target: &Target,
    members: &[MemberInfo],
) -> Result<(), DriverError> {
    if steps.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = match &target.control {
        Some(control) => control.members().map(|(name, _)| name.to_owned()).collect(),
        None => members.iter().map(|m| m.name.clone()).collect(),
    };
    let followers = names.len().saturating_sub(1);
    let emulated = target.control.as_ref().is_some_and(|c| c.network().is_some());
    for (step, s) in steps.iter().enumerate() {
        let fail = |source: FaultError| Err(DriverError::Fault { step, source });
        if s.action.needs_local_cluster() && target.control.is_none() {
            return fail(FaultError::NeedsLocalCluster { action: s.action });
        }
        if s.action.is_network() && !emulated && target.toxiproxy.is_none() {
            return fail(FaultError::NeedsNetwork { action: s.action });
        }
        match &s.member {
            Some(MemberRef::Name(name)) if !names.contains(name) => {
                return fail(FaultError::NoSuchMember { name: name.clone(), members: names });
            }
            Some(MemberRef::Follower) if followers == 0 => {
                return fail(FaultError::NoFollowers);
            }
            Some(MemberRef::FollowerN(n)) if *n as usize > followers => {
                let members = names.len();
                return fail(FaultError::NoSuchFollower { asked: *n, members, followers });
            }
            _ => {}
        }
        if let Some(proxies) = target.toxiproxy.as_ref().filter(|_| s.action.is_network()) {
            // A role is a member only when the step runs: any of them may be it.
            let acted_on: &[String] = match &s.member {
                Some(MemberRef::Name(name)) => std::slice::from_ref(name),
                Some(_) => &names,
                None if proxies.is_empty() => return fail(FaultError::NoProxies),
                None => &[],
            };
            if let Some(m) = acted_on.iter().find(|m| !proxies.maps(m)) {
                return fail(FaultError::Unproxied { action: s.action, member: m.clone() });
            }
        }
    }
    if let Some(proxies) = &target.toxiproxy
        && steps.iter().any(|s| s.action.is_network())
    {
        proxies.check(&names).await?;
    }
    Ok(())
}

/// What the executor did for one step; times are instants until the run's start is known.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    step: usize,
    action: FaultAction,
    at: Duration,
    member: Option<String>,
    what: String,
    started: Instant,
    finished: Instant,
    resumed: Option<Instant>,
    error: Option<String>,
}

impl Applied {
    /// The step with its times counted from `measure_start`.
    pub(crate) fn since(&self, measure_start: Instant) -> AppliedFault {
        let rel = |t: Instant| t.saturating_duration_since(measure_start);
        AppliedFault {
            step: self.step,
            action: self.action,
            at: self.at,
            member: self.member.clone(),
            what: self.what.clone(),
            started: rel(self.started),
            finished: rel(self.finished),
            resumed: self.resumed.map(rel),
            error: self.error.clone(),
        }
    }
}

/// What is due next: a step, or the end of a timed pause.
enum Due {
    Step(usize),
    Resume {
        step: usize,
        member: String,
    },
    /// The end of a timed network step.
    Undo {
        step: usize,
        member: Option<String>,
        undo: LinkChange,
    },
}

/// Runs the executor ([`run`]) on a thread of its own, so that its timing does not depend on
/// what else the caller's runtime is doing (parsing members' metrics, drawing progress); the
/// steps arrive on the receiver when the run has stopped.
pub(crate) fn spawn(
    target: Target,
    steps: Vec<FaultStep>,
    start: Instant,
    stop: watch::Receiver<bool>,
) -> tokio::sync::oneshot::Receiver<Vec<Applied>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new().name("etcdlat-faults".into()).spawn(move || {
        match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => {
                let _ = tx.send(rt.block_on(run(target, steps, start, stop)));
            }
            Err(e) => tracing::warn!(error = %e, "fault steps not run: no runtime"),
        }
    });
    if let Err(e) = thread {
        tracing::warn!(error = %e, "fault steps not run: no thread");
    }
    rx
}

/// Carries out `steps` at `start + step.at` until they are done and `stop` turns true; then
/// resumes what is still paused. Returns one entry per step, in step order (steps the run
/// ended before are reported as not done).
async fn run(
    target: Target,
    steps: Vec<FaultStep>,
    start: Instant,
    mut stop: watch::Receiver<bool>,
) -> Vec<Applied> {
    let mut executor = Executor {
        toxics: target.toxiproxy.clone().map(Toxics::new),
        target,
        paused: BTreeMap::new(),
        killed: BTreeSet::new(),
        // A time past any clock's range is never reached (validation refuses such times).
        agenda: steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((start.checked_add(s.at)?, Due::Step(i))))
            .collect(),
        applied: vec![None; steps.len()],
        status_clients: BTreeMap::new(),
        network_changed: false,
    };
    // Connected before the first step, so that its leader is named without delay. (Only a
    // local cluster's members keep a client between steps; asking endpoints now would
    // leave nothing for the first step to reuse.)
    if executor.target.control.is_some()
        && steps.iter().any(|s| {
            matches!(
                s.member,
                Some(MemberRef::Leader | MemberRef::Follower | MemberRef::FollowerN(_))
            )
        })
    {
        let _ = executor.ask_roster().await;
    }
    while let Some(next) =
        executor.agenda.iter().enumerate().min_by_key(|(_, (t, _))| *t).map(|(i, _)| i)
    {
        let when = executor.agenda[next].0;
        tokio::select! {
            () = tokio::time::sleep_until(when.into()) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let (_, due) = executor.agenda.swap_remove(next);
        match due {
            Due::Step(i) => {
                let applied = executor.apply(i, &steps[i]).await;
                executor.applied[i] = Some(applied);
            }
            Due::Resume { step, member } => executor.resume_timed(step, &member).await,
            Due::Undo { step, member, undo } => {
                executor.undo_timed(step, member.as_deref(), undo).await;
            }
        }
    }
    if !executor.paused.is_empty() {
        // Paused until the end of the run: resumed once it has ended.
        let _ = stop.wait_for(|s| *s).await;
    }
    executor.restore_network().await;
    let still_paused: Vec<String> = executor.paused.keys().cloned().collect();
    for member in still_paused {
        executor.resume_member(&member).await;
    }
    let ended = Instant::now();
    executor
        .applied
        .into_iter()
        .zip(&steps)
        .enumerate()
        .map(|(i, (applied, step))| {
            applied.unwrap_or_else(|| Applied {
                step: i,
                action: step.action,
                at: step.at,
                member: step.member.as_ref().map(ToString::to_string),
                what: format!("{} not done", step.action),
                started: start.checked_add(step.at).map_or(ended, |t| t.max(ended)),
                finished: start.checked_add(step.at).map_or(ended, |t| t.max(ended)),
                resumed: None,
                error: Some("not reached: the run ended first".to_owned()),
            })
        })
        .collect()
}

struct Executor {
    target: Target,
    /// Members this run paused, with the step that paused each.
    paused: BTreeMap<String, usize>,
    /// Members this run killed and has not restarted.
    killed: BTreeSet<String>,
    agenda: Vec<(Instant, Due)>,
    applied: Vec<Option<Applied>>,
    /// A client per member URL for Status, kept between steps so that naming the leader
    /// costs one round trip, not a connection.
    status_clients: BTreeMap<String, Client>,
    /// Whether a network step changed any link (undone when the run ends).
    network_changed: bool,
    /// The toxics network steps created through toxiproxy (removed when the run ends, or
    /// when dropped).
    toxics: Option<Toxics>,
}

/// A member as the executor sees it when it needs to name the leader or a follower.
struct RosterMember {
    name: String,
    url: String,
    id: u64,
}

/// The members that answer, and which of them leads.
struct Roster {
    members: Vec<RosterMember>,
    leader: Option<u64>,
}

impl Roster {
    fn leader(&self) -> Option<&RosterMember> {
        self.members.iter().find(|m| Some(m.id) == self.leader)
    }

    fn followers(&self) -> impl Iterator<Item = &RosterMember> {
        self.members.iter().filter(|m| Some(m.id) != self.leader)
    }

    fn by_name(&self, name: &str) -> Option<&RosterMember> {
        self.members.iter().find(|m| m.name == name)
    }
}

impl Executor {
    /// Carries out one step and says what it did.
    async fn apply(&mut self, index: usize, step: &FaultStep) -> Applied {
        let mut applied = Applied {
            step: index,
            action: step.action,
            at: step.at,
            member: None,
            what: String::new(),
            started: Instant::now(),
            finished: Instant::now(),
            resumed: None,
            error: None,
        };
        let outcome = match step.action {
            FaultAction::Kill => self.kill(step, &mut applied).await,
            FaultAction::Pause => self.pause(index, step, &mut applied).await,
            FaultAction::Resume => self.resume(step, &mut applied).await,
            FaultAction::Restart => self.restart(step, &mut applied).await,
            FaultAction::MoveLeader => self.move_leader(step, &mut applied).await,
            FaultAction::Compact => self.compact(&mut applied).await,
            FaultAction::Defrag => self.defrag(step, &mut applied).await,
            FaultAction::Partition
            | FaultAction::Heal
            | FaultAction::Delay
            | FaultAction::Bandwidth => self.network_step(index, step, &mut applied).await,
        };
        applied.finished = Instant::now();
        if let Err(reason) = outcome {
            tracing::warn!(step = index, action = %step.action, %reason, "fault step not done");
            if applied.what.is_empty() {
                applied.what = format!(
                    "{}{} not done",
                    step.action,
                    step.member.as_ref().map(|m| format!(" {m}")).unwrap_or_default()
                );
            }
            applied.error = Some(reason);
        } else {
            tracing::info!(step = index, what = %applied.what, "fault step done");
        }
        applied
    }

    fn control(&self) -> Result<MemberControl, String> {
        // `check` refuses these steps without a local cluster; this is a second guard.
        self.target.control.clone().ok_or_else(|| "needs a throwaway local cluster".to_owned())
    }

    /// Members that run and are not paused by this run: the ones that can answer.
    fn live_urls(&self) -> Vec<(String, String)> {
        match &self.target.control {
            Some(control) => control
                .members()
                .filter(|(name, _)| control.is_running(name) && !self.paused.contains_key(*name))
                .map(|(name, url)| (name.to_owned(), url.to_owned()))
                .collect(),
            None => self.target.endpoints.iter().map(|e| (e.clone(), e.clone())).collect(),
        }
    }

    /// The members that answer and the leader, waiting up to [`LEADER_WAIT`] for one.
    async fn roster(&mut self, need_leader: bool) -> Result<Roster, String> {
        let deadline = Instant::now() + LEADER_WAIT;
        loop {
            let roster = self.ask_roster().await?;
            if !need_leader || roster.leader().is_some() || Instant::now() >= deadline {
                return Ok(roster);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The members and leader as they are now: asked when a step needs them, not taken from
    /// the run's discovery, since the leader may have moved since (a step is often what
    /// moved it).
    async fn ask_roster(&mut self) -> Result<Roster, String> {
        if self.target.control.is_none() {
            let members = discovery::members(&self.target.endpoints, &self.target.dialer)
                .await
                .map_err(|e| e.to_string())?;
            let leader = members.iter().find(|m| m.leader).map(|m| m.id);
            let members = members
                .into_iter()
                .map(|m| RosterMember { name: m.name, url: m.url, id: m.id })
                .collect();
            return Ok(Roster { members, leader });
        }
        // Every live member's own id and the leader it knows, asked at once.
        let mut asked = tokio::task::JoinSet::new();
        for (name, member_url) in self.live_urls() {
            let client = self.status_clients.get(&member_url).cloned();
            let dialer = self.target.dialer.clone();
            asked.spawn(async move {
                let (client, status) = status(&dialer, &member_url, client).await;
                (name, member_url, client, status)
            });
        }
        let mut members = Vec::new();
        let mut leaders: BTreeMap<u64, usize> = BTreeMap::new();
        while let Some(joined) = asked.join_next().await {
            let Ok((name, url, client, status)) = joined else { continue };
            match client {
                Some(c) => self.status_clients.insert(url.clone(), c),
                None => self.status_clients.remove(&url),
            };
            let Some((id, leader)) = status else { continue };
            if leader != 0 {
                *leaders.entry(leader).or_default() += 1;
            }
            members.push(RosterMember { name, url, id });
        }
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let leader = leaders.into_iter().max_by_key(|(_, votes)| *votes).map(|(id, _)| id);
        Ok(Roster { members, leader })
    }

    /// Names the member a step acts on, with its role when it was chosen by role.
    async fn resolve(&mut self, member: &MemberRef) -> Result<(String, &'static str), String> {
        match member {
            MemberRef::Name(name) => Ok((name.clone(), "")),
            MemberRef::Leader => {
                let roster = self.roster(true).await?;
                let leader = roster.leader().ok_or("no member answers as the leader")?;
                Ok((leader.name.clone(), " (the leader)"))
            }
            MemberRef::Follower => {
                let roster = self.roster(true).await?;
                roster.leader().ok_or("no leader, so no follower either")?;
                let follower =
                    roster.followers().next().ok_or("no follower is running and unpaused")?;
                Ok((follower.name.clone(), " (a follower)"))
            }
            MemberRef::FollowerN(n) => {
                let roster = self.roster(true).await?;
                let leader =
                    roster.leader().ok_or("no leader, so no follower either")?.name.clone();
                // Numbered among every member but the leader, as `target = "follower:N"`.
                let mut followers: Vec<String> = match &self.target.control {
                    Some(control) => control.members().map(|(name, _)| name.to_owned()).collect(),
                    None => roster.members.iter().map(|m| m.name.clone()).collect(),
                };
                followers.retain(|name| *name != leader);
                followers.sort();
                let name = followers.get(*n as usize - 1).ok_or_else(|| {
                    format!("follower {n} asked for, there are {}", followers.len())
                })?;
                Ok((name.clone(), " (a follower)"))
            }
        }
    }
}

async fn connect(dialer: &Dialer, member_url: &str) -> Result<Client, String> {
    control_client(dialer, member_url).await.map_err(|e| e.to_string())
}

/// A member's own id and the leader it knows, if it answers within [`STATUS_TIMEOUT`], asked
/// on `client` or a new connection; with the client to ask it again next time (`None` when
/// it failed).
async fn status(
    dialer: &Dialer,
    member_url: &str,
    client: Option<Client>,
) -> (Option<Client>, Option<(u64, u64)>) {
    let ask = async {
        let mut client = match client {
            Some(c) => c,
            None => control_client(dialer, member_url).await.ok()?,
        };
        let status = client.status().await.ok()?;
        let answer = (status.header()?.member_id(), status.leader());
        Some((client, answer))
    };
    match tokio::time::timeout(STATUS_TIMEOUT * 2, ask).await.ok().flatten() {
        Some((client, answer)) => (Some(client), Some(answer)),
        None => (None, None),
    }
}
