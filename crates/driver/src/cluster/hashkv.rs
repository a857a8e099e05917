//! The HashKV check after a run: do the members hold the same history?

use std::time::Duration;

use etcd_client::Client;

use super::discovery::{View, not_answering};
use crate::error::{AnswerError, DriverError};
use crate::transport::{Dialer, control_client, within};

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
        let client = control_client(dialer, member_url).await?;
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
                source: AnswerError::Task(e),
            })?;
            match answer.map_err(|e| not_answering(&members[i].1, e))? {
                Some(resp) => hashes[i] = (resp.hash(), resp.compact_version()),
                None => compacted = true,
            }
        }
        if compacted {
            let (_, url, client) = &mut members[0];
            if round >= HASHKV_ROUNDS {
                return Err(DriverError::NotAnswering {
                    endpoint: url.clone(),
                    source: AnswerError::Compacted,
                });
            }
            let status = client.status().await.map_err(|e| not_answering(url, e))?;
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
