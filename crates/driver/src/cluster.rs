//! What a run measures against: the cluster's version, members and leader, learned from
//! Status and MemberList.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions, MemberListResponse, StatusResponse};
use etcdlat_core::TargetInfo;

use crate::connection::{source_chain, url};
use crate::error::DriverError;

/// Status and member list, as one member sees them.
struct View {
    status: StatusResponse,
    members: MemberListResponse,
}

impl View {
    async fn fetch(endpoint: &str, timeout: Duration) -> Result<Self, DriverError> {
        let not_answering = |e: etcd_client::Error| DriverError::NotAnswering {
            endpoint: endpoint.to_owned(),
            reason: source_chain(&e),
        };
        let opts = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout.max(Duration::from_secs(5)));
        let mut client =
            Client::connect([url(endpoint)?], Some(opts)).await.map_err(not_answering)?;
        let status = client.status().await.map_err(not_answering)?;
        let members = client.member_list().await.map_err(not_answering)?;
        Ok(Self { status, members })
    }

    /// The view of the first endpoint that answers.
    async fn first(endpoints: &[String], timeout: Duration) -> Result<Self, DriverError> {
        let mut last_err = None;
        for ep in endpoints {
            match Self::fetch(ep, timeout).await {
                Ok(view) => return Ok(view),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| DriverError::Endpoint {
            endpoint: String::new(),
            reason: "no endpoints given".to_owned(),
        }))
    }

    fn leader(&self) -> Option<&etcd_client::Member> {
        self.members.members().iter().find(|m| m.id() == self.status.leader())
    }
}

/// Asks the cluster behind `endpoints` (the first that answers) for its version, members and
/// leader.
pub(crate) async fn discover(
    endpoints: &[String],
    timeout: Duration,
) -> Result<TargetInfo, DriverError> {
    let view = View::first(endpoints, timeout).await?;
    let leader_id = view.status.leader();
    let leader = view
        .leader()
        .filter(|m| !m.name().is_empty())
        .map_or_else(|| format!("{leader_id:x}"), |m| m.name().to_owned());
    Ok(TargetInfo {
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
    })
}

/// The client URLs of the current leader, asked of the first endpoint that answers.
pub(crate) async fn leader_endpoints(
    endpoints: &[String],
    timeout: Duration,
) -> Result<Vec<String>, DriverError> {
    let view = View::first(endpoints, timeout).await?;
    let leader = view.leader().ok_or_else(|| DriverError::NoLeader {
        reason: format!("leader {:x} is not in the member list", view.status.leader()),
    })?;
    if leader.client_urls().is_empty() {
        return Err(DriverError::NoLeader {
            reason: format!("leader {} has no client URL", leader.name()),
        });
    }
    Ok(leader.client_urls().to_vec())
}

/// HashKV of every member (from the member list, not only the endpoints given) at the
/// cluster's current revision.
pub(crate) async fn hashkv(
    endpoints: &[String],
    timeout: Duration,
) -> Result<etcdlat_core::HashKvCheck, DriverError> {
    let view = View::first(endpoints, timeout).await?;
    let revision = view.status.header().map_or(0, etcd_client::ResponseHeader::revision);
    let mut check = etcdlat_core::HashKvCheck { revision, ..Default::default() };
    for member in view.members.members() {
        let Some(member_url) = member.client_urls().first() else { continue };
        let name = if member.name().is_empty() {
            format!("{:x}", member.id())
        } else {
            member.name().to_owned()
        };
        let not_answering = |e: etcd_client::Error| DriverError::NotAnswering {
            endpoint: member_url.clone(),
            reason: source_chain(&e),
        };
        let opts = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(Duration::from_secs(30));
        let mut client =
            Client::connect([member_url.as_str()], Some(opts)).await.map_err(not_answering)?;
        // A follower may not have applied `revision` yet: give it a moment.
        let mut attempts = 0;
        let resp = loop {
            match client.hash_kv(revision).await {
                Ok(resp) => break resp,
                Err(_) if attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(not_answering(e)),
            }
        };
        check.compact_revision = check.compact_revision.max(resp.compact_version());
        check.members.insert(name, resp.hash());
    }
    let mut hashes = check.members.values();
    let first = hashes.next().copied();
    check.consistent = hashes.all(|h| Some(*h) == first);
    Ok(check)
}
