//! Findings: where a run crossed etcd's own guidance or was bound by something other than
//! the load (the disk, a full quota, an election, the client, the emulated network), each
//! once, with its figure, the guidance it crossed and the member, so that every report
//! (text, JSON, HTML) says so in one place.
//!
//! A pure function of the report ([`Report::findings`]): a report read back finds the same.
//! etcd's guidance is from its operations docs: WAL fdatasync p99 under 10 ms and backend
//! commit p99 under 25 ms ("Disk" in etcd's hardware and tuning guides), a database kept
//! under its quota (etcd raises NOSPACE at it; 80% is where operators are warned), no
//! leader elections under steady load, and no "apply request took too long"
//! (`etcd_server_slow_apply_total`).

use serde::{Deserialize, Serialize};

use super::Report;
use crate::metrics::SATURATED;

/// etcd's guidance for the WAL's fdatasync p99, microseconds.
pub const WAL_FSYNC_P99_GUIDANCE_US: u64 = 10_000;

/// etcd's guidance for the backend commit p99, microseconds.
pub const BACKEND_COMMIT_P99_GUIDANCE_US: u64 = 25_000;

/// The share of its quota a member's database may fill before it is a finding, percent.
pub const QUOTA_GUIDANCE_PERCENT: f64 = 80.0;

/// The share of the asked rate a paced schedule must start, percent, as
/// [`Report::client_limit`] holds it.
const SCHEDULE_GUIDANCE_PERCENT: f64 = 99.0;

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FindingKind {
    /// A member's WAL fsync p99 over [`WAL_FSYNC_P99_GUIDANCE_US`]: the disk bound the run.
    WalFsync,
    /// A member's backend commit p99 over [`BACKEND_COMMIT_P99_GUIDANCE_US`].
    BackendCommit,
    /// A member's database over [`QUOTA_GUIDANCE_PERCENT`] of its quota.
    Quota,
    /// The leader changed during the measurement.
    LeaderChanges,
    /// A member applied requests slower than etcd's own warning ("apply request took too
    /// long").
    SlowApplies,
    /// The client, not etcd, held the load back ([`Report::client_limit`]).
    ClientSaturated,
    /// The emulated network delivered later than its links allow
    /// ([`Report::network_limit`]).
    EmulatorLate,
}

/// One place a run crossed etcd's guidance or was bound by something other than the load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Finding {
    /// What it is about.
    pub kind: FindingKind,
    /// The member it was seen on (a link `from -> to` for the emulator); `None` when it is
    /// the run's as a whole.
    pub member: Option<String>,
    /// The figure, in `unit`.
    pub value: f64,
    /// The guidance it crossed, in `unit`.
    pub guidance: f64,
    /// The unit of `value` and `guidance`: `ms`, `%` or `count`.
    pub unit: String,
    /// The finding in words, with what it means for the figures.
    pub text: String,
}

impl Finding {
    fn new(kind: FindingKind, member: Option<&str>, value: f64, guidance: f64, unit: &str) -> Self {
        Self {
            kind,
            member: member.map(str::to_owned),
            value,
            guidance,
            unit: unit.to_owned(),
            text: String::new(),
        }
    }

    /// `x` (the value or the guidance) with this finding's unit: `48.3 ms`, `85.6%`, `3`.
    #[must_use]
    pub fn shown(&self, x: f64) -> String {
        match self.unit.as_str() {
            "count" => format!("{x}"),
            "%" => format!("{x}%"),
            unit => format!("{x} {unit}"),
        }
    }

    fn text(mut self, text: String) -> Self {
        self.text = text;
        self
    }
}

/// Milliseconds of a microsecond figure, to 0.1 ms.
fn ms(us: u64) -> f64 {
    (us as f64 / 100.0).round() / 10.0
}

impl Report {
    /// Where this run crossed etcd's guidance or was bound by something other than the
    /// load, in the order of [`FindingKind`], members in the report's order; empty when
    /// nothing did. Figures a member did not export are not findings.
    #[must_use]
    pub fn findings(&self) -> Vec<Finding> {
        let mut found = Vec::new();
        let disk = [
            (FindingKind::WalFsync, "WAL fsync", WAL_FSYNC_P99_GUIDANCE_US),
            (FindingKind::BackendCommit, "backend commit", BACKEND_COMMIT_P99_GUIDANCE_US),
        ];
        for (kind, what, guidance_us) in disk {
            for m in &self.server {
                let p99 = match kind {
                    FindingKind::WalFsync => m.wal_fsync_p99_us,
                    _ => m.backend_commit_p99_us,
                };
                if let Some(p99) = p99.filter(|&p| p > guidance_us) {
                    let (value, guidance) = (ms(p99), ms(guidance_us));
                    found.push(Finding::new(kind, Some(&m.name), value, guidance, "ms").text(
                        format!(
                            "{}: {what} p99 was {value} ms, over etcd's {guidance} ms: the disk \
                             bound the run, not the load",
                            m.name
                        ),
                    ));
                }
            }
        }
        for m in &self.server {
            let (Some(db), Some(quota)) = (m.db_size_bytes, m.quota_backend_bytes) else {
                continue;
            };
            let percent = (db as f64 / quota.max(1) as f64 * 1000.0).round() / 10.0;
            if percent > QUOTA_GUIDANCE_PERCENT {
                found.push(
                    Finding::new(
                        FindingKind::Quota,
                        Some(&m.name),
                        percent,
                        QUOTA_GUIDANCE_PERCENT,
                        "%",
                    )
                    .text(format!(
                        "{}: the database was {percent}% of its quota ({db} of {quota} \
                             bytes), over {QUOTA_GUIDANCE_PERCENT}%: at 100% etcd raises NOSPACE \
                             and refuses writes; compact and defragment, or raise \
                             --quota-backend-bytes",
                        m.name
                    )),
                );
            }
        }
        // The leader watch saw each change once; a member's counter sees the changes it took
        // part in, so the largest of them all is the least the cluster had.
        let changes = self
            .server
            .iter()
            .filter_map(|m| m.leader_changes)
            .chain([self.leader_changes.len() as u64])
            .max()
            .unwrap_or_default();
        if changes > 0 {
            let times = if changes == 1 { "once".to_owned() } else { format!("{changes} times") };
            found.push(
                Finding::new(FindingKind::LeaderChanges, None, changes as f64, 0.0, "count").text(
                    format!(
                        "the leader changed {times} during the measurement: requests \
                         waited for an election, and the latency includes it"
                    ),
                ),
            );
        }
        for m in &self.server {
            if let Some(slow) = m.slow_applies.filter(|&n| n > 0) {
                found.push(
                    Finding::new(
                        FindingKind::SlowApplies,
                        Some(&m.name),
                        slow as f64,
                        0.0,
                        "count",
                    )
                    .text(format!(
                        "{}: {slow} {} took too long to apply (etcd's \"apply \
                             request took too long\", etcd_server_slow_apply_total): the \
                             member, not the load, bound them",
                        m.name,
                        if slow == 1 { "request" } else { "requests" }
                    )),
                );
            }
        }
        if let Some(text) = self.client_limit() {
            let peak = self
                .client
                .as_ref()
                .filter(|c| c.saturated())
                .and_then(|c| c.busy.as_ref()?.worker_peak);
            let finding = match peak {
                Some(peak) => Finding::new(
                    FindingKind::ClientSaturated,
                    None,
                    (peak * 1000.0).round() / 10.0,
                    SATURATED * 100.0,
                    "%",
                ),
                None => {
                    let started = self.pacing.as_ref().map_or(0.0, |p| {
                        p.achieved_rate / p.target_rate.max(f64::MIN_POSITIVE) * 100.0
                    });
                    Finding::new(
                        FindingKind::ClientSaturated,
                        None,
                        (started * 10.0).round() / 10.0,
                        SCHEDULE_GUIDANCE_PERCENT,
                        "%",
                    )
                }
            };
            found.push(finding.text(text));
        }
        if let (Some(text), Some(network)) = (self.network_limit(), &self.target.network) {
            let worst =
                network.late_links().into_iter().max_by_key(|l| l.late_p99_us.unwrap_or_default());
            if let Some(l) = worst {
                let link = format!("{} -> {}", l.from, l.to);
                let late = ms(l.late_p99_us.unwrap_or_default());
                let bound = ms(l.late_bound_us());
                found.push(
                    Finding::new(FindingKind::EmulatorLate, Some(&link), late, bound, "ms")
                        .text(text),
                );
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{ClientBusy, ClientUsage, MemberMetrics};
    use crate::report::{LeaderChange, LinkReport, NetworkReport, Params, TargetInfo};
    use crate::scenario::{Network, Scenario};

    fn report() -> Report {
        let scenario =
            Scenario::from_toml_str("name = \"f\"\n[load]\ntotal = 10\n[op.put]\n").unwrap();
        Report::new(scenario, Params::default(), TargetInfo::default())
    }

    fn member(name: &str) -> MemberMetrics {
        MemberMetrics {
            name: name.to_owned(),
            wal_fsync_p99_us: Some(2_000),
            backend_commit_p99_us: Some(5_000),
            db_size_bytes: Some(1 << 20),
            quota_backend_bytes: Some(2 << 30),
            leader_changes: Some(0),
            slow_applies: Some(0),
            ..MemberMetrics::default()
        }
    }

    fn kinds(r: &Report) -> Vec<(FindingKind, Option<String>)> {
        r.findings().into_iter().map(|f| (f.kind, f.member)).collect()
    }

    #[test]
    fn a_run_within_guidance_has_no_findings() {
        let mut r = report();
        r.server = vec![member("m1"), member("m2")];
        assert_eq!(r.findings(), vec![]);
    }

    #[test]
    fn wal_fsync_over_10ms_is_found_on_its_member_only() {
        let mut r = report();
        r.server = vec![member("m1"), member("m2")];
        r.server[1].wal_fsync_p99_us = Some(48_250);
        let found = r.findings();
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!((f.kind, f.member.as_deref()), (FindingKind::WalFsync, Some("m2")));
        assert_eq!((f.value, f.guidance, f.unit.as_str()), (48.3, 10.0, "ms"));
        assert_eq!((f.shown(f.value), f.shown(f.guidance)), ("48.3 ms".into(), "10 ms".into()));
        assert!(f.text.contains("WAL fsync p99 was 48.3 ms, over etcd's 10 ms"), "{}", f.text);
        // At the guidance is within it.
        r.server[1].wal_fsync_p99_us = Some(WAL_FSYNC_P99_GUIDANCE_US);
        assert_eq!(r.findings(), vec![]);
    }

    #[test]
    fn backend_commit_over_25ms_is_found() {
        let mut r = report();
        r.server = vec![member("m1")];
        r.server[0].backend_commit_p99_us = Some(30_000);
        let f = &r.findings()[0];
        assert_eq!((f.kind, f.value, f.guidance), (FindingKind::BackendCommit, 30.0, 25.0));
    }

    #[test]
    fn a_database_over_80_percent_of_its_quota_is_found() {
        let mut r = report();
        r.server = vec![member("m1")];
        r.server[0].quota_backend_bytes = Some(1000);
        r.server[0].db_size_bytes = Some(800);
        assert_eq!(r.findings(), vec![]);
        r.server[0].db_size_bytes = Some(856);
        let f = &r.findings()[0];
        assert_eq!(
            (f.kind, f.value, f.guidance, f.unit.as_str()),
            (FindingKind::Quota, 85.6, 80.0, "%")
        );
        assert!(f.text.contains("856 of 1000 bytes"), "{}", f.text);
        assert_eq!(f.shown(f.value), "85.6%");
        // Without the quota (not exported), nothing is claimed.
        r.server[0].quota_backend_bytes = None;
        assert_eq!(r.findings(), vec![]);
    }

    #[test]
    fn leader_changes_are_one_finding_of_the_most_seen() {
        let mut r = report();
        r.server = vec![member("m1"), member("m2")];
        r.server[0].leader_changes = Some(2);
        r.server[1].leader_changes = Some(1);
        let change = LeaderChange { t_s: 1.0, from: "m1".into(), to: "m2".into() };
        r.leader_changes = vec![change];
        let found = r.findings();
        assert_eq!(kinds(&r), vec![(FindingKind::LeaderChanges, None)]);
        assert_eq!(found[0].value, 2.0);
        // The leader watch alone, without metrics.
        r.server.clear();
        assert_eq!(r.findings()[0].value, 1.0);
    }

    #[test]
    fn slow_applies_are_found_per_member() {
        let mut r = report();
        r.server = vec![member("m1"), member("m2")];
        r.server[0].slow_applies = Some(3);
        assert_eq!(kinds(&r), vec![(FindingKind::SlowApplies, Some("m1".to_owned()))]);
        assert_eq!(r.findings()[0].value, 3.0);
        assert_eq!(r.findings()[0].shown(3.0), "3");
    }

    #[test]
    fn a_saturated_client_is_found_once_with_its_busiest_second() {
        let mut r = report();
        let busy = ClientBusy { process: 0.5, worker_max: Some(0.8), worker_peak: Some(0.954) };
        r.client = Some(ClientUsage { busy: Some(busy), ..ClientUsage::default() });
        let found = r.findings();
        assert_eq!(kinds(&r), vec![(FindingKind::ClientSaturated, None)]);
        assert_eq!((found[0].value, found[0].guidance), (95.4, 90.0));
        assert_eq!(Some(found[0].text.clone()), r.client_limit());
    }

    #[test]
    fn a_late_emulator_is_found_once_naming_its_latest_link() {
        let mut r = report();
        let link = |to: &str, late_p99_us| LinkReport {
            from: "client".into(),
            to: to.into(),
            latency_us: 5_000,
            jitter_us: 0,
            bandwidth_bytes_per_s: None,
            bytes: 1,
            late_p50_us: Some(10),
            late_p99_us: Some(late_p99_us),
        };
        r.target.network = Some(NetworkReport {
            config: Network::default(),
            summary: String::new(),
            links: vec![link("m1", 300), link("m2", 2_400), link("m3", 100)],
            emulator: None,
        });
        let found = r.findings();
        assert_eq!(kinds(&r), vec![(FindingKind::EmulatorLate, Some("client -> m2".to_owned()))]);
        assert_eq!((found[0].value, found[0].guidance), (2.4, 0.5));
        assert_eq!(Some(found[0].text.clone()), r.network_limit());
    }

    #[test]
    fn each_kind_comes_in_order_and_once() {
        let mut r = report();
        r.server = vec![member("m1")];
        r.server[0].wal_fsync_p99_us = Some(20_000);
        r.server[0].backend_commit_p99_us = Some(40_000);
        r.server[0].slow_applies = Some(1);
        r.server[0].leader_changes = Some(1);
        let got: Vec<FindingKind> = r.findings().into_iter().map(|f| f.kind).collect();
        assert_eq!(
            got,
            [
                FindingKind::WalFsync,
                FindingKind::BackendCommit,
                FindingKind::LeaderChanges,
                FindingKind::SlowApplies
            ]
        );
    }
}
