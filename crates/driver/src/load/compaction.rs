//! Background compaction during a run, as etcd benchmark's `put --compact-interval`: every
//! interval, compact at the current revision minus `index-delta`. Each Compact is measured
//! (kind `compact`) in a recorder of its own, merged into the run's at the end. Compaction
//! runs through warm-up too, but like the requests only what completes after it is counted,
//! and none starts after the measured phase ends.
//!
//! Ticks missed while a compaction was slow are skipped, not fired in a burst (tokio's
//! default): on a slow machine a burst of back-to-back compactions is load the scenario
//! never asked for, and counts more compactions than its interval allows.

use std::time::{Duration, Instant};

use etcd_client::CompactionOptions;
use etcdlat_core::{Compaction, ErrorCode, OpKind, Recorder};
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use crate::transport::{Dialer, control_client_any, status};

/// Compacts every `cfg.interval` until `measure_end` (a run of a fixed duration) or until
/// `stop` turns true; records the compactions that complete from `measure_start` on, in
/// intervals counted from it.
pub(crate) async fn run(
    endpoints: Vec<String>,
    dialer: Dialer,
    cfg: Compaction,
    measure_start: Instant,
    measure_end: Option<Instant>,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
) -> Recorder {
    let mut recorder = Recorder::new(&[OpKind::Compact], measure_start, interval);
    let Ok(mut client) = control_client_any(&dialer, &endpoints).await else {
        recorder.record_error(OpKind::Compact, ErrorCode::Unavailable, Instant::now());
        return recorder;
    };
    let mut last = 0;
    let mut tick = tokio::time::interval_at((Instant::now() + cfg.interval).into(), cfg.interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let end = async {
        match measure_end {
            Some(end) => tokio::time::sleep_until(end.into()).await,
            None => std::future::pending().await,
        }
    };
    let mut end = std::pin::pin!(end);
    loop {
        tokio::select! {
            // Checked first: a tick due together with the end or the stop must not compact.
            biased;
            _ = stop.wait_for(|s| *s) => return recorder,
            () = &mut end => return recorder,
            _ = tick.tick() => {}
        }
        let revision = match client.get("\0etcdlat-compaction-probe", None).await {
            Ok(resp) => resp.header().map_or(0, etcd_client::ResponseHeader::revision),
            Err(e) => {
                let done = Instant::now();
                if done >= measure_start {
                    let code = ErrorCode::from_grpc(status(e).code() as i32);
                    recorder.record_error(OpKind::Compact, code, done);
                }
                continue;
            }
        };
        let target = revision - i64::try_from(cfg.index_delta).unwrap_or(i64::MAX);
        if target <= last {
            continue;
        }
        let sent = Instant::now();
        let result = client.compact(target, None::<CompactionOptions>).await;
        let done = Instant::now();
        let measured = done >= measure_start;
        match result {
            Ok(_) => {
                if measured {
                    recorder.record_ok(OpKind::Compact, sent, sent, done);
                }
                last = target;
            }
            Err(e) if measured => {
                let code = ErrorCode::from_grpc(status(e).code() as i32);
                recorder.record_error(OpKind::Compact, code, done);
            }
            Err(_) => {}
        }
    }
}
