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
