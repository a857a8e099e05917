//! What a run measures against: the cluster's version, members and leader, learned from
//! Status and MemberList, once before a run and, for leader changes, during it.

use std::time::Duration;

use etcd_client::{Client, MemberListResponse, StatusResponse};
use std::time::Instant;

use etcdlat_core::{LeaderChange, TargetInfo};
use tokio::sync::watch;

use crate::error::{AnswerError, DriverError, EndpointError};
use crate::transport::{Dialer, control_client, within};

/// Status and member list, as one member sees them.
pub(super) struct View {
    pub(super) status: StatusResponse,
    pub(super) members: MemberListResponse,
}

impl View {
    /// A control client of the first endpoint that answers, with its view.
    async fn connect(endpoints: &[String], dialer: &Dialer) -> Result<(Client, Self), DriverError> {
        let mut last_err = None;
        for endpoint in endpoints {
            let attempt = async {
                let mut client = control_client(dialer, endpoint).await?;
                let view =
                    Self::ask(&mut client, dialer).await.map_err(|e| not_answering(endpoint, e))?;
                Ok::<_, DriverError>((client, view))
            };
            match attempt.await {
                Ok(found) => return Ok(found),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| DriverError::Endpoint {
            endpoint: String::new(),
            source: EndpointError::Missing,
        }))
    }

    /// Status and member list, asked on an open client; a member that does not answer
    /// within the dial timeout (5 s at least) is given up on.
    async fn ask(client: &mut Client, dialer: &Dialer) -> Result<Self, etcd_client::Error> {
        let ask = async {
            let status = client.status().await?;
            let members = client.member_list().await?;
            Ok(Self { status, members })
        };
        within(dialer.timeout().max(Duration::from_secs(5)), "Status and MemberList", ask).await
    }

    /// The view of the first endpoint that answers.
    pub(super) async fn first(endpoints: &[String], dialer: &Dialer) -> Result<Self, DriverError> {
        Ok(Self::connect(endpoints, dialer).await?.1)
    }

    /// Every member, in name order.
    fn member_infos(&self) -> Vec<MemberInfo> {
        let leader = self.status.leader();
        let mut members: Vec<MemberInfo> = self
            .members
            .members()
            .iter()
            .map(|m| MemberInfo {
                name: if m.name().is_empty() {
                    format!("{:x}", m.id())
                } else {
                    m.name().to_owned()
                },
                id: m.id(),
                url: m.client_urls().first().cloned().unwrap_or_default(),
                client_urls: m.client_urls().to_vec(),
                leader: m.id() == leader,
            })
            .collect();
        members.sort_by(|a, b| a.name.cmp(&b.name));
        members
    }

    fn leader(&self) -> Option<&etcd_client::Member> {
        self.members.members().iter().find(|m| m.id() == self.status.leader())
    }
}

/// The cluster as one discovery found it.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    /// The report's target: version, member count, leader and cluster id; the driver fills
    /// in how the load's members were chosen.
    pub target: TargetInfo,
    /// Every member, in name order.
    pub members: Vec<MemberInfo>,
}

impl Discovery {
    /// The member that was the leader, if one was.
    pub(crate) fn leader(&self) -> Option<&MemberInfo> {
        self.members.iter().find(|m| m.leader)
    }
}

/// Asks the cluster behind `endpoints` (the first that answers) for its version, members and
/// leader, once: the report's target and the members that targeting, fault steps, metrics,
/// alarms and the per-member breakdown use.
pub(crate) async fn discover(
    endpoints: &[String],
    dialer: &Dialer,
) -> Result<Discovery, DriverError> {
    let view = View::first(endpoints, dialer).await?;
    let members = view.member_infos();
    let leader_id = view.status.leader();
    let leader = view
        .leader()
        .filter(|m| !m.name().is_empty())
        .map_or_else(|| format!("{leader_id:x}"), |m| m.name().to_owned());
    let mut target = TargetInfo::default();
    target.endpoints = endpoints.to_vec();
    target.local = false;
    target.etcd_version = view.status.version().to_owned();
    target.members = u32::try_from(view.members.members().len()).unwrap_or(u32::MAX);
    target.leader = leader;
    target.cluster_id =
        view.status.header().map(|h| format!("{:x}", h.cluster_id())).unwrap_or_default();
    // targeting, targeted, network and source addresses are set by the driver, which knows
    // how the load's members were chosen.
    Ok(Discovery { target, members })
}

/// A member of the cluster, as the member list and Status describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberInfo {
    /// Name (its id in hex when unnamed).
    pub name: String,
    /// Member id, as in response headers.
    pub id: u64,
    /// Its first client URL.
    pub url: String,
    /// Every client URL it advertises.
    pub client_urls: Vec<String>,
    /// Whether it is the leader.
    pub leader: bool,
}

/// Every member, in name order, asked of the first endpoint that answers.
pub(crate) async fn members(
    endpoints: &[String],
    dialer: &Dialer,
) -> Result<Vec<MemberInfo>, DriverError> {
    Ok(View::first(endpoints, dialer).await?.member_infos())
}

pub(super) fn not_answering(endpoint: &str, e: etcd_client::Error) -> DriverError {
    DriverError::NotAnswering { endpoint: endpoint.to_owned(), source: AnswerError::Client(e) }
}

/// Refreshes the load's endpoints from the member list every `every` until `stop` turns
/// true (etcd benchmark's `--auto-sync-interval`, as etcd's client syncs: every member's
/// client URLs, the first time one interval after the start): when the members' URLs
/// differ from the endpoints the connections go to (`current`), they are sent on `retarget`
/// and the workers reopen their connections there. The list is asked of the endpoints last
/// synced, then of the ones given, so that the endpoint given can leave the cluster.
pub(crate) async fn auto_sync(
    given: Vec<String>,
    dialer: Dialer,
    every: Duration,
    mut current: Vec<String>,
    retarget: watch::Sender<Vec<String>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let ask: Vec<String> = current.iter().chain(&given).cloned().collect();
        let members = match members(&ask, &dialer).await {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "auto-sync: the member list could not be read");
                continue;
            }
        };
        let mut synced: Vec<String> = members.into_iter().flat_map(|m| m.client_urls).collect();
        synced.sort();
        synced.dedup();
        if synced.is_empty() || authorities(&synced) == authorities(&current) {
            continue;
        }
        tracing::info!(endpoints = ?synced, "auto-sync: the members changed");
        current.clone_from(&synced);
        if retarget.send(synced).is_err() {
            return;
        }
    }
}

/// The `host:port`s of `endpoints`, sorted: an endpoint given as `127.0.0.1:2379` is the
/// member list's `http://127.0.0.1:2379` (or `https://`, with TLS), and must not look like a
/// change that reopens every connection.
fn authorities(endpoints: &[String]) -> Vec<&str> {
    let mut hosts: Vec<&str> = endpoints
        .iter()
        .map(|e| {
            let e = e.strip_prefix("http://").or_else(|| e.strip_prefix("https://")).unwrap_or(e);
            e.trim_end_matches('/')
        })
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts
}

/// How often the leader is asked for during a run.
const LEADER_POLL: Duration = Duration::from_millis(200);

/// Watches the leader until `stop` turns true, asking the cluster afresh every
/// [`LEADER_POLL`] (that is what it watches): every change from `leader` (as the run's
/// discovery found it, so that a move before the first poll counts too) is recorded with
/// its time (seconds since `since`; negative during warm-up), and when `follow` is given the
/// new leader's client URL is sent on it so the workers move their connections there.
pub(crate) async fn watch_leader(
    endpoints: Vec<String>,
    dialer: Dialer,
    leader: Option<MemberInfo>,
    since: Instant,
    follow: Option<watch::Sender<Vec<String>>>,
    mut stop: watch::Receiver<bool>,
) -> Vec<LeaderChange> {
    let mut changes = Vec::new();
    let mut current = leader;
    // One control connection, kept while it answers: a new one every poll would cost the
    // client a TCP and HTTP/2 handshake five times a second during the measurement.
    let mut client: Option<Client> = None;
    let mut tick = tokio::time::interval(LEADER_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return changes,
        }
        let view = match client.as_mut() {
            Some(c) => View::ask(c, &dialer).await.ok(),
            None => None,
        };
        let view = match view {
            Some(v) => v,
            None => match View::connect(&endpoints, &dialer).await {
                Ok((c, v)) => {
                    client = Some(c);
                    v
                }
                Err(_) => {
                    client = None;
                    continue;
                }
            },
        };
        let Some(leader) = view.member_infos().into_iter().find(|m| m.leader) else { continue };
        match &current {
            Some(c) if c.id == leader.id => {}
            Some(c) => {
                let now = Instant::now();
                let t_s = if now >= since {
                    now.duration_since(since).as_secs_f64()
                } else {
                    -since.duration_since(now).as_secs_f64()
                };
                tracing::info!(from = %c.name, to = %leader.name, t_s, "leader changed");
                changes.push(LeaderChange { t_s, from: c.name.clone(), to: leader.name.clone() });
                if let Some(follow) = &follow {
                    let _ = follow.send(vec![leader.url.clone()]);
                }
                current = Some(leader);
            }
            None => current = Some(leader),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_given_without_a_scheme_are_the_member_lists_urls() {
        let given = ["127.0.0.1:2379".to_owned(), "127.0.0.1:2381".to_owned()];
        let listed = ["http://127.0.0.1:2381".to_owned(), "https://127.0.0.1:2379/".to_owned()];
        assert_eq!(authorities(&given), authorities(&listed));
        let moved = ["http://127.0.0.1:2381".to_owned(), "http://127.0.0.1:2383".to_owned()];
        assert_ne!(authorities(&given), authorities(&moved));
    }
}
