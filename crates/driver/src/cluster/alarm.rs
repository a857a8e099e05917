//! etcd's alarms, read after a run: a member whose database reached its quota raises
//! NOSPACE and the cluster refuses writes ("etcdserver: mvcc: database space exceeded",
//! ResourceExhausted) until it is compacted, defragmented and the alarm disarmed; CORRUPT
//! marks a member whose data disagrees with the others'.

use std::time::Duration;

use etcd_client::{AlarmAction, AlarmType};
use etcdlat_core::AlarmReport;

use super::discovery::MemberInfo;
use crate::transport::{Dialer, control_client, within};

/// How long the alarm list may take.
const ALARM_TIMEOUT: Duration = Duration::from_secs(2);

/// The alarms raised in the cluster behind `endpoints` (the first that answers), members
/// named as in `members`. None when no endpoint answers: the report then simply has none,
/// as the run's own figures do not depend on them.
pub(crate) async fn alarms(
    endpoints: &[String],
    dialer: &Dialer,
    members: &[MemberInfo],
) -> Vec<AlarmReport> {
    for endpoint in endpoints {
        let Ok(mut client) = control_client(dialer, endpoint).await else { continue };
        let list = client.alarm(AlarmAction::Get, AlarmType::None, None);
        match within(ALARM_TIMEOUT, "Alarm", list).await {
            Ok(resp) => {
                return resp
                    .alarms()
                    .iter()
                    .map(|a| AlarmReport {
                        member: members
                            .iter()
                            .find(|m| m.id == a.member_id())
                            .map_or_else(|| format!("{:x}", a.member_id()), |m| m.name.clone()),
                        alarm: a.alarm().as_str_name().to_owned(),
                    })
                    .collect();
            }
            Err(e) => tracing::debug!(%endpoint, error = %e, "listing alarms"),
        }
    }
    Vec::new()
}
