//! Steps on members' processes: kill, pause, resume, restart (local clusters only).

use std::time::Instant;

use etcdlat_core::FaultStep;

use super::{Applied, Due, Executor};

impl Executor {
    pub(super) async fn kill(
        &mut self,
        step: &FaultStep,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let control = self.control()?;
        let (name, role) = self.resolve(step.member.as_ref().ok_or("no member")?).await?;
        applied.member = Some(name.clone());
        applied.started = Instant::now();
        let killed = {
            let name = name.clone();
            tokio::task::spawn_blocking(move || control.kill(&name)).await.unwrap_or(false)
        };
        if !killed {
            return Err(format!("{name} is not running"));
        }
        self.paused.remove(&name);
        self.killed.insert(name.clone());
        applied.what = format!("killed {name}{role}");
        Ok(())
    }

    pub(super) async fn pause(
        &mut self,
        index: usize,
        step: &FaultStep,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let control = self.control()?;
        let (name, role) = self.resolve(step.member.as_ref().ok_or("no member")?).await?;
        applied.member = Some(name.clone());
        if self.paused.contains_key(&name) {
            return Err(format!("{name} is paused already"));
        }
        applied.started = Instant::now();
        if !control.pause(&name) {
            return Err(format!("{name} is not running"));
        }
        self.paused.insert(name.clone(), index);
        applied.what = format!("paused {name}{role}");
        if let Some(d) = step.pause_for {
            applied.what.push_str(&format!(" for {}", etcdlat_core::unit::format_duration(d)));
            if let Some(when) = applied.started.checked_add(d) {
                self.agenda.push((when, Due::Resume { step: index, member: name.clone() }));
            }
        }
        Ok(())
    }

    pub(super) async fn resume(
        &mut self,
        step: &FaultStep,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let names: Vec<String> = match &step.member {
            Some(m) => vec![self.resolve(m).await?.0],
            None => self.paused.keys().cloned().collect(),
        };
        if names.is_empty() {
            return Err("no member paused by an earlier step is still paused".to_owned());
        }
        applied.member = Some(names.join(", "));
        applied.started = Instant::now();
        let control = self.control()?;
        for name in &names {
            if self.paused.contains_key(name) {
                self.resume_member(name).await;
            } else if !control.resume(name) {
                return Err(format!("{name} is not running"));
            }
        }
        applied.what = format!("resumed {}", names.join(", "));
        Ok(())
    }

    /// The end of a timed pause, unless a resume step or a kill came first.
    pub(super) async fn resume_timed(&mut self, step: usize, member: &str) {
        if self.paused.get(member) == Some(&step) {
            self.resume_member(member).await;
        }
    }

    /// Resumes a member this run paused, noting when on the step that paused it.
    pub(super) async fn resume_member(&mut self, member: &str) {
        let Some(step) = self.paused.remove(member) else { return };
        let resumed = self.target.control.as_ref().is_some_and(|c| c.resume(member));
        let now = Instant::now();
        if let Some(Some(applied)) = self.applied.get_mut(step)
            && resumed
        {
            applied.resumed = Some(now);
        }
        self.agenda.retain(|(_, due)| !matches!(due, Due::Resume { member: m, .. } if m == member));
    }

    pub(super) async fn restart(
        &mut self,
        step: &FaultStep,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let control = self.control()?;
        let targets: Vec<(String, &'static str)> = match &step.member {
            Some(m) => vec![self.resolve(m).await?],
            None => self.killed.iter().map(|n| (n.clone(), "")).collect(),
        };
        if targets.is_empty() {
            return Err("no member killed by an earlier step is down".to_owned());
        }
        applied.member =
            Some(targets.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "));
        applied.started = Instant::now();
        let mut done = Vec::new();
        for (name, role) in targets {
            let was_running = control.is_running(&name);
            let restarted = {
                let (control, name) = (control.clone(), name.clone());
                tokio::task::spawn_blocking(move || control.restart(&name))
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()))
            };
            restarted.map_err(|e| format!("{name}: {e}"))?;
            self.killed.remove(&name);
            if let Some(step) = self.paused.remove(&name)
                && let Some(Some(a)) = self.applied.get_mut(step)
            {
                a.resumed = Some(Instant::now());
            }
            done.push(if was_running {
                format!("{name}{role} (killed and started again)")
            } else {
                format!("{name}{role}")
            });
        }
        applied.what = format!("restarted {}", done.join(", "));
        Ok(())
    }
}
