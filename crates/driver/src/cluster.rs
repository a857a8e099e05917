//! What a run measures against: the cluster's version, members and leader, learned from
//! Status and MemberList.

use std::time::Duration;

use etcd_client::{Client, MemberListResponse, StatusResponse};
use std::time::Instant;

use etcdlat_core::{LeaderChange, TargetInfo, Targeting};
use tokio::sync::watch;

use crate::error::DriverError;
use crate::transport::{Conn, Dialer, source_chain, within};

/// Status and member list, as one member sees them.
struct View {
    status: StatusResponse,
    members: MemberListResponse,
}

impl View {
    /// A control client of the first endpoint that answers, with its view.
    async fn connect(endpoints: &[String], dialer: &Dialer) -> Result<(Client, Self), DriverError> {
        let mut last_err = None;
        for endpoint in endpoints {
            let attempt = async {
                let mut client = Conn::dial(dialer, endpoint).await?.client;
                let view = Self::ask(&mut client, dialer)
                    .await
                    .map_err(|e| not_answering(endpoint, &e))?;
                Ok::<_, DriverError>((client, view))
            };
            match attempt.await {
                Ok(found) => return Ok(found),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| DriverError::Endpoint {
            endpoint: String::new(),
            reason: "no endpoints given".to_owned(),
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
    async fn first(endpoints: &[String], dialer: &Dialer) -> Result<Self, DriverError> {
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

/// Asks the cluster behind `endpoints` (the first that answers) for its version, members and
/// leader, once: the report's target and the members that targeting, metrics and the
/// per-member breakdown use.
pub(crate) async fn discover(
    endpoints: &[String],
    dialer: &Dialer,
) -> Result<(TargetInfo, Vec<MemberInfo>), DriverError> {
    let view = View::first(endpoints, dialer).await?;
    let members = view.member_infos();
    let leader_id = view.status.leader();
    let leader = view
        .leader()
        .filter(|m| !m.name().is_empty())
        .map_or_else(|| format!("{leader_id:x}"), |m| m.name().to_owned());
    let target = TargetInfo {
        endpoints: endpoints.to_vec(),
        local: false,
        etcd_version: view.status.version().to_owned(),
        members: u32::try_from(view.members.members().len()).unwrap_or(u32::MAX),
        leader,
        cluster_id: view
            .status
            .header()
            .map(|h| format!("{:x}", h.cluster_id()))
            .unwrap_or_default(),
    };
    Ok((target, members))
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

/// The endpoints a targeting sends load to: the endpoints as given, or the client URLs of
/// the members it selects.
pub(crate) fn select(
    targeting: &Targeting,
    given: &[String],
    members: &[MemberInfo],
) -> Result<Vec<String>, DriverError> {
    let urls = |ms: Vec<&MemberInfo>| -> Result<Vec<String>, DriverError> {
        if let Some(m) = ms.iter().find(|m| m.url.is_empty()) {
            return Err(DriverError::Target {
                reason: format!("member {} has no client URL", m.name),
            });
        }
        Ok(ms.iter().map(|m| m.url.clone()).collect())
    };
    let followers: Vec<&MemberInfo> = members.iter().filter(|m| !m.leader).collect();
    match targeting {
        Targeting::Endpoints => Ok(given.to_vec()),
        Targeting::Leader => match members.iter().find(|m| m.leader) {
            Some(m) => urls(vec![m]),
            None => Err(DriverError::NoLeader { reason: "no member is the leader".to_owned() }),
        },
        Targeting::Followers if followers.is_empty() => Err(DriverError::Target {
            reason: format!("a cluster of {} member(s) has no followers", members.len()),
        }),
        Targeting::Followers => urls(followers),
        Targeting::Follower(n) => match followers.get(*n as usize - 1) {
            Some(m) => urls(vec![m]),
            None => Err(DriverError::Target {
                reason: format!("follower {n} asked for, the cluster has {}", followers.len()),
            }),
        },
        Targeting::Member(name) => match members.iter().find(|m| &m.name == name) {
            Some(m) => urls(vec![m]),
            None => Err(DriverError::Target {
                reason: format!(
                    "no member named {name:?} (members: {})",
                    members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }),
        },
        Targeting::All => urls(members.iter().collect()),
    }
}

/// Rounds of HashKV asked before members that keep disagreeing on the compact revision are
/// compared anyway; 100 ms apart.
const HASHKV_ROUNDS: u32 = 50;

/// HashKV of every member (from the member list, not only the endpoints given) at the
/// cluster's current revision.
///
/// A member hashes the history from its compact revision on, so two members compare only
/// when they report the same compact revision: one that has not applied the latest
/// compaction yet (ours just before the check, or anyone else's during it) is not corrupt,
/// and etcd's own corruption check skips such pairs too. Every member is asked at once, again
/// until their compact revisions agree; a revision compacted meanwhile is replaced by the
/// current one.
pub(crate) async fn hashkv(
    endpoints: &[String],
    dialer: &Dialer,
) -> Result<etcdlat_core::HashKvCheck, DriverError> {
    let view = View::first(endpoints, dialer).await?;
    let mut revision = view.status.header().map_or(0, etcd_client::ResponseHeader::revision);
    let mut members = Vec::new();
    for member in view.members.members() {
        let Some(member_url) = member.client_urls().first() else { continue };
        let name = if member.name().is_empty() {
            format!("{:x}", member.id())
        } else {
            member.name().to_owned()
        };
        let client = Conn::dial(dialer, member_url).await?.client;
        members.push((name, member_url.clone(), client));
    }
    let mut round = 0;
    loop {
        round += 1;
        let mut asked = tokio::task::JoinSet::new();
        for (i, (_, _, client)) in members.iter().enumerate() {
            let client = client.clone();
            asked.spawn(async move {
                (i, within(HASHKV_TIMEOUT, "HashKV", member_hash(client, revision)).await)
            });
        }
        let mut hashes = vec![(0, 0); members.len()];
        let mut compacted = false;
        while let Some(joined) = asked.join_next().await {
            let (i, answer) = joined.map_err(|e| DriverError::NotAnswering {
                endpoint: endpoints.join(","),
                reason: e.to_string(),
            })?;
            match answer.map_err(|e| not_answering(&members[i].1, &e))? {
                Some(resp) => hashes[i] = (resp.hash(), resp.compact_version()),
                None => compacted = true,
            }
        }
        if compacted {
            let (_, url, client) = &mut members[0];
            if round >= HASHKV_ROUNDS {
                return Err(DriverError::NotAnswering {
                    endpoint: url.clone(),
                    reason: "every revision HashKV was asked for was compacted meanwhile".into(),
                });
            }
            let status = client.status().await.map_err(|e| not_answering(url, &e))?;
            revision = status.header().map_or(revision, etcd_client::ResponseHeader::revision);
            continue;
        }
        let agree = hashes.windows(2).all(|w| w[0].1 == w[1].1);
        if !agree && round < HASHKV_ROUNDS {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let mut check = etcdlat_core::HashKvCheck {
            revision,
            compact_revision: hashes.iter().map(|h| h.1).max().unwrap_or(0),
            ..Default::default()
        };
        for ((name, _, _), (hash, _)) in members.iter().zip(&hashes) {
            check.members.insert(name.clone(), *hash);
        }
        check.consistent = hashes.windows(2).all(|w| w[0].0 == w[1].0);
        return Ok(check);
    }
}

/// How long a member may take to answer HashKV (it hashes its whole key space).
const HASHKV_TIMEOUT: Duration = Duration::from_secs(30);

fn not_answering(endpoint: &str, e: &etcd_client::Error) -> DriverError {
    DriverError::NotAnswering { endpoint: endpoint.to_owned(), reason: source_chain(e) }
}

/// One member's HashKV at `revision`; `None` when that revision has been compacted.
async fn member_hash(
    mut client: Client,
    revision: i64,
) -> Result<Option<etcd_client::HashKvResponse>, etcd_client::Error> {
    let mut attempts = 0;
    loop {
        match client.hash_kv(revision).await {
            Ok(resp) => return Ok(Some(resp)),
            // etcd's ErrGRPCCompacted: OutOfRange, like a future revision, told apart by its
            // message.
            Err(etcd_client::Error::GRpcStatus(s))
                if s.code() == tonic::Code::OutOfRange && s.message().contains("compacted") =>
            {
                return Ok(None);
            }
            // A follower may not have applied `revision` yet: give it a moment.
            Err(_) if attempts < 50 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// How often the leader is asked for during a run.
const LEADER_POLL: Duration = Duration::from_millis(200);

/// Watches the leader until `stop` turns true: every change is recorded with its time
/// (seconds since `since`; negative during warm-up), and when `follow` is given the new
/// leader's client URL is sent on it so the workers move their connections there.
pub(crate) async fn watch_leader(
    endpoints: Vec<String>,
    dialer: Dialer,
    since: Instant,
    follow: Option<watch::Sender<Vec<String>>>,
    mut stop: watch::Receiver<bool>,
) -> Vec<LeaderChange> {
    let mut changes = Vec::new();
    let mut current: Option<MemberInfo> = None;
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

    fn cluster() -> Vec<MemberInfo> {
        ["m0", "m1", "m2"]
            .iter()
            .enumerate()
            .map(|(i, n)| MemberInfo {
                name: (*n).to_owned(),
                id: i as u64 + 10,
                url: format!("http://127.0.0.1:{}", 2379 + i),
                client_urls: vec![format!("http://127.0.0.1:{}", 2379 + i)],
                leader: i == 1,
            })
            .collect()
    }

    #[test]
    fn targets_select_members() {
        let ms = cluster();
        let given = vec!["h:1".to_owned()];
        assert_eq!(select(&Targeting::Endpoints, &given, &ms).unwrap(), given);
        assert_eq!(select(&Targeting::Leader, &given, &ms).unwrap(), ["http://127.0.0.1:2380"]);
        assert_eq!(
            select(&Targeting::Followers, &given, &ms).unwrap(),
            ["http://127.0.0.1:2379", "http://127.0.0.1:2381"]
        );
        assert_eq!(
            select(&Targeting::Follower(2), &given, &ms).unwrap(),
            ["http://127.0.0.1:2381"]
        );
        assert!(select(&Targeting::Follower(3), &given, &ms).is_err());
        assert_eq!(
            select(&Targeting::Member("m0".into()), &given, &ms).unwrap(),
            ["http://127.0.0.1:2379"]
        );
        assert!(
            select(&Targeting::Member("x".into()), &given, &ms)
                .unwrap_err()
                .to_string()
                .contains("m0, m1, m2")
        );
        assert_eq!(select(&Targeting::All, &given, &ms).unwrap().len(), 3);
        assert!(select(&Targeting::Followers, &given, &ms[1..2]).is_err());
    }
}
