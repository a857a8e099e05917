//! After the load: what ran beside it stopped in order (the fault steps undone first), the
//! workers' recorders merged, the cluster checked (the audit's read back, HashKV, alarms),
//! and all of it made into the [`Report`].

use std::time::{Instant, SystemTime};

use etcdlat_core::audit::AuditReport;
use etcdlat_core::recorder::{MemberRecord, OpRecord, Pacing as RecordedPacing, Recorder};
use etcdlat_core::report::kubernetes::{KubernetesReport, ObjectSizeReport};
use etcdlat_core::{
    AlarmReport, ClientUsage, HashKvCheck, LeaderChange, MemberMetrics, NetworkReport, OpKind,
    OpReport, Report, StepReport, TargetInfo,
};

use super::Run;
use super::jobs::merge;
use super::load::{Ended, Loaded};
use crate::cluster::alarm;
use crate::cluster::fault::Applied;
use crate::cluster::hashkv::hashkv;
use crate::cluster::network::LinkState;
use crate::error::DriverError;
use crate::load::report::{member_reports, pacing_report, params};
use crate::transport::control_client_any;

impl Run<'_> {
    /// Stops what ran beside the load and gathers what the run measured, with the checks
    /// after it. The load's own error, if any, is returned here, after the fault steps are
    /// undone.
    pub(super) async fn collect(&self, loaded: Loaded) -> Result<Collected, DriverError> {
        let (driver, scenario) = (self.driver, self.scenario);
        // First, so that members paused until the end are resumed before anyone asks them.
        let applied = match loaded.faults {
            Some(f) => f.await.unwrap_or_default(),
            None => Vec::new(),
        };
        // Only now: a run that failed has still had its faults undone (toxics removed).
        let measured = match loaded.ended? {
            Ended::Requests { outcomes, work } => {
                merge(outcomes, work, scenario, loaded.start.measure_from)
            }
            Ended::Watch(measured) => *measured,
        };
        let leader_changes = loaded.leader_watch.await.unwrap_or_default();
        let mut target = loaded.target;
        target.network = self.network(loaded.network_before.as_deref());
        if let Some(network) = &mut target.network {
            network.emulator = loaded.usage.apart().await;
        }
        let (server, client_resources) = loaded.sampler.finish(measured.measure_start).await;
        let mut client = loaded.usage.finish(client_resources).await;
        if let Some(c) = &mut client {
            c.worker_cpu_s = measured.worker_cpu.map(|d| d.as_secs_f64());
            if let (Some(busy), Some((max, peak))) = (&mut c.busy, measured.worker_busy) {
                busy.worker_max = Some(max);
                busy.worker_peak = Some(peak);
            }
        }
        let mut recorder = measured.recorder;
        // The load's own, before the compactions join the recorder.
        let recorder_members = recorder.members().to_vec();
        let recorder_pacing = recorder.pacing().cloned();
        let mut kubernetes = measured.kubernetes;
        let mut steady = self.steady.as_ref().map(|s| s.report.clone());
        if let Some(compactor) = loaded.compactor
            && let Ok(compacted) = compactor.await
        {
            if let Some(steady) = &mut steady {
                steady.compactions = compacted
                    .recorder
                    .records()
                    .find(|(kind, _)| *kind == OpKind::Compact)
                    .map_or(0, |(_, r)| r.ok);
                steady.compacted_revision = compacted.revision;
            }
            recorder.merge(compacted.recorder);
        }
        if let (Some(steady), Some(expiry)) = (&mut steady, loaded.expiry)
            && let Ok(expired) = expiry.await
        {
            steady.leases_expired = expired.leases;
            steady.keys_expired = expired.keys;
            steady.largest_expiry_keys = expired.largest;
        }
        if let Some(k) = &mut kubernetes {
            k.steady_state = steady;
            k.object_sizes = ObjectSizeReport::of(scenario);
        }
        let audit = match &measured.audit {
            Some(history) => {
                let client = control_client_any(&driver.dialer, &driver.config.endpoints)
                    .await
                    .map_err(|e| e.to_string());
                let name = |id: u64| {
                    self.cluster
                        .members
                        .iter()
                        .find(|m| m.id == id)
                        .map_or_else(|| format!("{id:x}"), |m| m.name.clone())
                };
                Some(history.check(client, scenario.checks.audit_limit, &name).await)
            }
            None => None,
        };
        // HashKV asks the cluster afresh, on purpose: it compares at the revision the run left.
        let hashkv = if scenario.checks.hashkv {
            Some(hashkv(&driver.config.endpoints, &driver.dialer).await?)
        } else {
            None
        };
        let alarms =
            alarm::alarms(&driver.config.endpoints, &driver.dialer, &self.cluster.members).await;
        Ok(Collected {
            kubernetes,
            recorder,
            measure_start: measured.measure_start,
            last_done: measured.last_done,
            interrupted: measured.interrupted,
            watch: measured.watch,
            recorder_members,
            recorder_pacing,
            started_at: loaded.start.wall,
            target,
            conns: loaded.conns,
            workers: loaded.workers,
            applied,
            leader_changes,
            server,
            client,
            audit,
            hashkv,
            alarms,
        })
    }

    /// The emulated network's links as the run left them, or toxiproxy's settings.
    fn network(&self, before: Option<&[LinkState]>) -> Option<NetworkReport> {
        if let (Some(control), Some(before)) = (&self.driver.config.control, before) {
            return control.network_report(before);
        }
        // Shaped by toxiproxy, not by etcdlat: the settings, no links of ours to count.
        let network = &self.scenario.network;
        (!network.is_empty()).then(|| NetworkReport {
            config: network.clone(),
            summary: network.summary(),
            links: Vec::new(),
            emulator: None,
        })
    }

    /// The report of what the run measured.
    pub(super) fn report(&self, c: Collected) -> Report {
        let scenario = self.scenario;
        let duration = c.last_done.saturating_duration_since(c.measure_start);
        // The workers' recorders may have doubled theirs as the run went.
        let interval = c.recorder.interval();
        let steps = scenario
            .load
            .client_steps
            .iter()
            .zip(c.recorder.steps())
            .map(|(step, record)| StepReport::from_record(step, record, c.measure_start))
            .collect();
        let invariants = c.recorder.invariants();
        let records = c.recorder.finish();
        // Background compaction is not part of the load: `all` combines the workload's kinds.
        let load: Vec<&OpRecord> = records
            .iter()
            .filter(|(kind, _)| !matches!(kind, OpKind::Compact | OpKind::K8sCompactor))
            .map(|(_, r)| r)
            .collect();
        let all = (load.len() > 1)
            .then(|| OpReport::from_record(&OpRecord::combined(load), duration, interval));
        let ops = records
            .iter()
            .map(|(kind, rec)| (*kind, OpReport::from_record(rec, duration, interval)))
            .collect();
        let applied: Vec<_> = c.applied.iter().map(|a| a.since(c.measure_start)).collect();
        let faults = etcdlat_core::fault::analyze(&records, &applied, duration, interval);
        let params = params(scenario, c.conns, c.workers, self.seed);
        let mut report = Report::new(scenario.clone(), params, c.target);
        report.started_at = humantime::format_rfc3339_millis(c.started_at).to_string();
        report.interrupted = c.interrupted;
        report.duration_s = duration.as_secs_f64();
        report.interval_s = interval.as_secs_f64();
        report.ops = ops;
        report.all = all;
        report.steps = steps;
        report.watch = c.watch;
        report.hashkv = c.hashkv;
        report.audit = c.audit;
        report.invariants = invariants;
        report.kubernetes = c.kubernetes;
        report.members = member_reports(&c.recorder_members, &self.cluster.members, duration);
        report.leader_changes = c.leader_changes;
        report.alarms = c.alarms;
        report.faults = faults;
        report.pacing = c
            .recorder_pacing
            .as_ref()
            .map(|p| pacing_report(p, &scenario.load, duration, c.client.as_ref(), c.workers));
        report.server = c.server;
        report.client = c.client;
        report
    }
}

/// What the run measured and found, ready to report.
pub(super) struct Collected {
    /// The apiserver's requests by resource and verb, when the run sent any.
    kubernetes: Option<KubernetesReport>,
    /// Every recorder merged, the background compactions' included.
    recorder: Recorder,
    measure_start: Instant,
    last_done: Instant,
    interrupted: bool,
    watch: Option<etcdlat_core::WatchAccounting>,
    /// The load's per-member counts and pacing (not the compactions').
    recorder_members: Vec<MemberRecord>,
    recorder_pacing: Option<RecordedPacing>,
    started_at: SystemTime,
    target: TargetInfo,
    conns: u32,
    workers: usize,
    applied: Vec<Applied>,
    leader_changes: Vec<LeaderChange>,
    server: Vec<MemberMetrics>,
    client: Option<ClientUsage>,
    audit: Option<AuditReport>,
    hashkv: Option<HashKvCheck>,
    alarms: Vec<AlarmReport>,
}
