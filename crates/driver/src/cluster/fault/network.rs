//! Steps on the network: partition, heal, delay, bandwidth. On a local cluster they change
//! the emulated links ([`crate::cluster::network`]); a step with `for` is undone after it.
//! Whatever a run changed is undone when it ends, so that the cluster is left as it began.

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
        self.change_links(member.as_ref().map(|(name, _)| name.as_str()), change)?;
        applied.what = match change {
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
            if let Some(when) = applied.started.checked_add(d) {
                let undo = match change {
                    LinkChange::Partition => LinkChange::Heal,
                    LinkChange::Delay(_) => LinkChange::Delay(std::time::Duration::ZERO),
                    LinkChange::Bandwidth(_) => LinkChange::Bandwidth(None),
                    LinkChange::Heal => return Ok(()),
                };
                let member = applied.member.clone();
                self.agenda.push((when, Due::Undo { step: index, member, undo }));
            }
        }
        self.network_changed = true;
        Ok(())
    }

    /// The end of a timed network step: undone, noted on the step as when it recovered.
    pub(super) fn undo_timed(&mut self, step: usize, member: Option<&str>, undo: LinkChange) {
        match self.change_links(member, undo) {
            Ok(()) => {
                if let Some(Some(applied)) = self.applied.get_mut(step) {
                    applied.resumed = Some(Instant::now());
                }
            }
            Err(reason) => tracing::warn!(step, %reason, "network step not undone"),
        }
    }

    /// Puts every link back as the cluster was configured, when a step changed any.
    pub(super) fn restore_network(&mut self) {
        if !std::mem::take(&mut self.network_changed) {
            return;
        }
        for undo in [
            LinkChange::Heal,
            LinkChange::Delay(std::time::Duration::ZERO),
            LinkChange::Bandwidth(None),
        ] {
            if let Err(reason) = self.change_links(None, undo) {
                tracing::warn!(%reason, "network not restored after the run");
            }
        }
    }

    fn change_links(&self, member: Option<&str>, change: LinkChange) -> Result<(), String> {
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
