//! Steps that are requests any client may send: move-leader, compact, defrag.

use std::time::{Duration, Instant};

use etcdlat_core::FaultStep;

use super::{Applied, Executor, LEADER_WAIT, REQUEST_TIMEOUT, connect};
use crate::transport::{source_chain, within};

impl Executor {
    pub(super) async fn move_leader(
        &mut self,
        step: &FaultStep,
        applied: &mut Applied,
    ) -> Result<(), String> {
        // The leader may change under the request (an election in progress): asked again
        // while the cluster says "not leader", for up to LEADER_WAIT.
        let deadline = Instant::now() + LEADER_WAIT;
        let target = match &step.member {
            Some(m) => Some(self.resolve(m).await?.0),
            None => None,
        };
        loop {
            let roster = self.roster(true).await?;
            let leader = roster.leader().ok_or("no member answers as the leader")?;
            let to = match &target {
                Some(name) => {
                    roster.by_name(name).ok_or_else(|| format!("{name} does not answer"))?
                }
                None => roster.followers().next().ok_or("no follower answers")?,
            };
            if to.id == leader.id {
                return Err(format!("{} is the leader already", to.name));
            }
            applied.member = Some(to.name.clone());
            applied.started = Instant::now();
            let mut client = connect(&self.target.dialer, &leader.url).await?;
            match within(REQUEST_TIMEOUT, "MoveLeader", client.move_leader(to.id)).await {
                Ok(_) => {
                    applied.what = format!("moved the leader from {} to {}", leader.name, to.name);
                    return Ok(());
                }
                Err(e) => {
                    let reason = source_chain(&e);
                    if !reason.contains("not leader") || Instant::now() >= deadline {
                        return Err(reason);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub(super) async fn compact(&mut self, applied: &mut Applied) -> Result<(), String> {
        let urls: Vec<String> = self.live_urls().into_iter().map(|(_, u)| u).collect();
        let mut last = String::from("no member answers");
        for member_url in urls {
            let attempt = async {
                let mut client = connect(&self.target.dialer, &member_url).await?;
                let revision =
                    within(REQUEST_TIMEOUT, "Range", client.get("\0etcdlat-fault-probe", None))
                        .await
                        .map_err(|e| source_chain(&e))?
                        .header()
                        .map_or(0, etcd_client::ResponseHeader::revision);
                within(
                    REQUEST_TIMEOUT,
                    "Compact",
                    client.compact(revision, None::<etcd_client::CompactionOptions>),
                )
                .await
                .map_err(|e| source_chain(&e))?;
                Ok::<i64, String>(revision)
            };
            applied.started = Instant::now();
            match attempt.await {
                Ok(revision) => {
                    applied.what = format!("compacted at revision {revision}");
                    return Ok(());
                }
                Err(e) => last = format!("{member_url}: {e}"),
            }
        }
        Err(last)
    }

    pub(super) async fn defrag(
        &mut self,
        step: &FaultStep,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let targets: Vec<(String, String)> = match &step.member {
            Some(m) => {
                let (name, _) = self.resolve(m).await?;
                let roster = self.roster(false).await?;
                let member =
                    roster.by_name(&name).ok_or_else(|| format!("{name} does not answer"))?;
                vec![(member.name.clone(), member.url.clone())]
            }
            None => {
                let roster = self.roster(false).await?;
                roster.members.iter().map(|m| (m.name.clone(), m.url.clone())).collect()
            }
        };
        if targets.is_empty() {
            return Err("no member answers".to_owned());
        }
        applied.member =
            Some(targets.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "));
        applied.started = Instant::now();
        for (name, member_url) in &targets {
            let mut client = connect(&self.target.dialer, member_url).await?;
            within(REQUEST_TIMEOUT, "Defragment", client.defragment())
                .await
                .map_err(|e| format!("{name}: {}", source_chain(&e)))?;
        }
        applied.what = format!(
            "defragmented {}",
            targets.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
        );
        Ok(())
    }
}
