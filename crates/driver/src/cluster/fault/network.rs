//! Steps on the network: partition, heal, delay, bandwidth. On a local cluster they change
//! the emulated links ([`crate::cluster::network`]); on a cluster etcdlat did not start, they
//! are toxics on the toxiproxy proxies of the members ([`crate::cluster::toxiproxy`]). A step
//! with `for` is undone after it. Whatever a run changed is undone when it ends, stopped
//! early or not, so that the cluster is left as it began.

use std::time::Instant;

use etcdlat_core::unit::{format_bandwidth, format_duration};
use etcdlat_core::{FaultAction, FaultStep};

use super::{Applied, Due, Executor};
use crate::cluster::network::LinkChange;

impl Executor {
    pub(super) async fn network_step(
        &mut self,
        index: usize,
        step: &FaultStep,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let member = match &step.member {
            Some(m) => Some(self.resolve(m).await?),
            None => None,
        };
        let change = match step.action {
            FaultAction::Partition => LinkChange::Partition,
            FaultAction::Heal => LinkChange::Heal,
            FaultAction::Delay => LinkChange::Delay(step.latency.ok_or("no latency")?),
            FaultAction::Bandwidth => LinkChange::Bandwidth(Some(step.bandwidth.ok_or("no rate")?)),
            other => return Err(format!("{other} is not a network step")),
        };
        let whose = match &member {
            Some((name, role)) => format!("{name}{role}"),
            None => "every member".to_owned(),
        };
        applied.member = member.as_ref().map(|(name, _)| name.clone());
        applied.started = Instant::now();
        // Before the change: one that fails halfway may have changed something.
        self.network_changed = true;
        let name = member.as_ref().map(|(name, _)| name.as_str());
        self.change_links(name, change).await?;
        applied.what = match change {
            // Through toxiproxy, whatever the member's proxies carry.
            LinkChange::Partition if self.toxics.is_some() => format!("cut the traffic of {whose}"),
            LinkChange::Partition => format!("partitioned {whose} from its peers"),
            LinkChange::Heal => format!("healed the partitions of {whose}"),
            LinkChange::Delay(d) => format!("added {} to the links of {whose}", format_duration(d)),
            LinkChange::Bandwidth(cap) => format!(
                "capped the links of {whose} at {}",
                cap.map_or_else(|| "no limit".to_owned(), format_bandwidth)
            ),
        };
        if let Some(d) = step.pause_for {
            applied.what.push_str(&format!(" for {}", format_duration(d)));
        }
        if let Some(toxics) = &self.toxics {
            let proxies = toxics.proxies().of(name).join(", ");
            applied.what.push_str(&format!(" (toxiproxy: {proxies})"));
        }
        if let Some(when) = step.pause_for.and_then(|d| applied.started.checked_add(d)) {
            let undo = match change {
                LinkChange::Partition => LinkChange::Heal,
                LinkChange::Delay(_) => LinkChange::Delay(std::time::Duration::ZERO),
                LinkChange::Bandwidth(_) => LinkChange::Bandwidth(None),
                LinkChange::Heal => return Ok(()),
            };
            let member = applied.member.clone();
            self.agenda.push((when, Due::Undo { step: index, member, undo }));
        }
        Ok(())
    }

    /// The end of a timed network step: undone, noted on the step as when it recovered.
    pub(super) async fn undo_timed(&mut self, step: usize, member: Option<&str>, undo: LinkChange) {
        match self.change_links(member, undo).await {
            Ok(()) => {
                if let Some(Some(applied)) = self.applied.get_mut(step) {
                    applied.resumed = Some(Instant::now());
                }
            }
            Err(reason) => tracing::warn!(step, %reason, "network step not undone"),
        }
    }

    /// Puts every link back as the cluster was configured (removes this run's toxics), when
    /// a step changed any.
    pub(super) async fn restore_network(&mut self) {
        if !std::mem::take(&mut self.network_changed) {
            return;
        }
        if let Some(toxics) = &mut self.toxics {
            if let Err(e) = toxics.remove_all().await {
                tracing::warn!(error = %e, "toxics not all removed after the run");
            }
            return;
        }
        for undo in [
            LinkChange::Heal,
            LinkChange::Delay(std::time::Duration::ZERO),
            LinkChange::Bandwidth(None),
        ] {
            if let Err(reason) = self.change_links(None, undo).await {
                tracing::warn!(%reason, "network not restored after the run");
            }
        }
    }

    async fn change_links(
        &mut self,
        member: Option<&str>,
        change: LinkChange,
    ) -> Result<(), String> {
        if let Some(toxics) = &mut self.toxics {
            if toxics.proxies().of(member).is_empty() {
                let whose = member.map_or_else(|| "any member".to_owned(), |m| format!("{m:?}"));
                return Err(format!("network.proxies maps no toxiproxy proxy to {whose}"));
            }
            return toxics.change(member, change).await.map_err(|e| e.to_string());
        }
        let control = self.control()?;
        let network = control.network().ok_or(
            "the local cluster has no emulated network (start it with LocalClusterOptions::network)",
        )?;
        let index = match member {
            Some(name) => {
                Some(control.index(name).ok_or_else(|| format!("no member named {name:?}"))?)
            }
            None => None,
        };
        network.change(index, change);
        Ok(())
    }
}
