//! What a run measures against: the cluster's version, members and leader, learned from
//! Status and MemberList.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use etcdlat_core::TargetInfo;

use crate::connection::{source_chain, url};
use crate::error::DriverError;

/// Asks the cluster behind `endpoints` (the first that answers) for its version, members and
/// leader.
pub(crate) async fn discover(
    endpoints: &[String],
    timeout: Duration,
) -> Result<TargetInfo, DriverError> {
    let mut last_err = None;
    for ep in endpoints {
        match describe(ep, timeout).await {
            Ok(mut info) => {
                info.endpoints = endpoints.to_vec();
                return Ok(info);
            }
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_else(|| DriverError::Endpoint {
        endpoint: String::new(),
        reason: "no endpoints given".to_owned(),
    }))
}

async fn describe(endpoint: &str, timeout: Duration) -> Result<TargetInfo, DriverError> {
    let not_answering = |e: etcd_client::Error| DriverError::NotAnswering {
        endpoint: endpoint.to_owned(),
        reason: source_chain(&e),
    };
    let opts = ConnectOptions::new()
        .with_connect_timeout(timeout)
        .with_timeout(timeout.max(Duration::from_secs(5)));
    let mut client = Client::connect([url(endpoint)?], Some(opts)).await.map_err(not_answering)?;
    let status = client.status().await.map_err(not_answering)?;
    let members = client.member_list().await.map_err(not_answering)?;
    let leader_id = status.leader();
    let leader = members
        .members()
        .iter()
        .find(|m| m.id() == leader_id)
        .map(|m| if m.name().is_empty() { format!("{leader_id:x}") } else { m.name().to_owned() })
        .unwrap_or_else(|| format!("{leader_id:x}"));
    Ok(TargetInfo {
        endpoints: Vec::new(),
        local: false,
        etcd_version: status.version().to_owned(),
        members: u32::try_from(members.members().len()).unwrap_or(u32::MAX),
        leader,
        cluster_id: status.header().map(|h| format!("{:x}", h.cluster_id())).unwrap_or_default(),
    })
}

/// The client URLs of the current leader, asked of the first endpoint that answers.
pub(crate) async fn leader_endpoints(
    endpoints: &[String],
    timeout: Duration,
) -> Result<Vec<String>, DriverError> {
    let mut last_err = None;
    for ep in endpoints {
        let not_answering = |e: etcd_client::Error| DriverError::NotAnswering {
            endpoint: ep.clone(),
            reason: source_chain(&e),
        };
        let opts = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout.max(Duration::from_secs(5)));
        let attempt = async {
            let mut client =
                Client::connect([url(ep)?], Some(opts)).await.map_err(not_answering)?;
            let status = client.status().await.map_err(not_answering)?;
            let members = client.member_list().await.map_err(not_answering)?;
            let leader =
                members.members().iter().find(|m| m.id() == status.leader()).ok_or_else(|| {
                    DriverError::NoLeader {
                        reason: format!("leader {:x} is not in the member list", status.leader()),
                    }
                })?;
            if leader.client_urls().is_empty() {
                return Err(DriverError::NoLeader {
                    reason: format!("leader {} has no client URL", leader.name()),
                });
            }
            Ok(leader.client_urls().to_vec())
        };
        match attempt.await {
            Ok(urls) => return Ok(urls),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or(DriverError::NoLeader { reason: "no endpoints given".to_owned() }))
}
