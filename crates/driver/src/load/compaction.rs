//! Background compaction during a run, as etcd benchmark's `put --compact-interval`: every
//! interval, compact at the current revision minus `index-delta`; or as kube-apiserver's
//! compactor (`style = "apiserver"`): every interval, a Txn on `compact_rev_key`'s version
//! (measured as `k8s-compactor`, its write counted in its keys), and when it won, Compact
//! to the revision the previous interval's Txn saw. Each Compact is measured (kind
//! `compact`) in a recorder of its own, merged into the run's at the end. Compaction
//! runs through warm-up too, but like the requests only what completes after it is counted,
//! and none starts after the measured phase ends.
//!
//! Ticks missed while a compaction was slow are skipped, not fired in a burst (tokio's
//! default): on a slow machine a burst of back-to-back compactions is load the scenario
//! never asked for, and counts more compactions than its interval allows.

use std::time::{Duration, Instant};

use etcd_client::{CompactionOptions, Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use etcdlat_core::{Compaction, CompactionStyle, ErrorCode, OpKind, Recorder};
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use crate::transport::{Dialer, control_client_any, status};

/// What background compaction did: its recorder, and the revision of its last
/// compaction (0 with none).
pub(crate) struct Compacted {
    pub(crate) recorder: Recorder,
    pub(crate) revision: i64,
}

/// Compacts every `cfg.interval` until `measure_end` (a run of a fixed duration) or until
/// `stop` turns true; records the compactions that complete from `measure_start` on, in
/// intervals counted from it. The apiserver's compactor starts from `resumed`, the
/// (version, revision seen) of a claim made before the run ([`claim_before`]), else
/// afresh, as an apiserver just started.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    endpoints: Vec<String>,
    dialer: Dialer,
    cfg: Compaction,
    measure_start: Instant,
    measure_end: Option<Instant>,
    interval: Duration,
    resumed: Option<(i64, i64)>,
    stop: watch::Receiver<bool>,
) -> Compacted {
    let mut last = 0;
    let recorder = compact(
        endpoints,
        dialer,
        cfg,
        (measure_start, measure_end, interval),
        resumed,
        stop,
        &mut last,
    )
    .await;
    Compacted { recorder, revision: last }
}

async fn compact(
    endpoints: Vec<String>,
    dialer: Dialer,
    cfg: Compaction,
    (measure_start, measure_end, interval): (Instant, Option<Instant>, Duration),
    resumed: Option<(i64, i64)>,
    mut stop: watch::Receiver<bool>,
    last: &mut i64,
) -> Recorder {
    let apiserver = cfg.style == CompactionStyle::Apiserver;
    let kinds: &[OpKind] =
        if apiserver { &[OpKind::Compact, OpKind::K8sCompactor] } else { &[OpKind::Compact] };
    let mut recorder = Recorder::new(kinds, measure_start, interval);
    let Ok(mut client) = control_client_any(&dialer, &endpoints).await else {
        recorder.record_error(OpKind::Compact, ErrorCode::Unavailable, Instant::now());
        return recorder;
    };
    // The apiserver's compactor's state: the version of `compact_rev_key` it expects, and
    // the revision its last claim saw.
    let (mut version, mut seen) = resumed.unwrap_or((0, 0));
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
        let target = if apiserver {
            let won;
            (won, version, seen) =
                claim(&mut client, version, seen, measure_start, &mut recorder).await;
            let Some(target) = won else { continue };
            target
        } else {
            match client.get("\0etcdlat-compaction-probe", None).await {
                Ok(resp) => {
                    let revision = resp.header().map_or(0, etcd_client::ResponseHeader::revision);
                    revision - i64::try_from(cfg.index_delta).unwrap_or(i64::MAX)
                }
                Err(e) => {
                    record_error(&mut recorder, OpKind::Compact, e, measure_start);
                    continue;
                }
            }
        };
        if target <= *last {
            continue;
        }
        let sent = Instant::now();
        let result = client.compact(target, None::<CompactionOptions>).await;
        let done = Instant::now();
        match result {
            Ok(_) => {
                if done >= measure_start {
                    recorder.record_ok(OpKind::Compact, sent, sent, done);
                }
                *last = target;
            }
            Err(e) => record_error(&mut recorder, OpKind::Compact, e, measure_start),
        }
    }
}

/// The claim of the apiserver that compacted before the run (a cluster's compactor has
/// been claiming every interval): `compact_rev_key` claimed now, unmeasured, so that the
/// run's compactor, resuming from the returned (version, revision seen), compacts to
/// this revision one interval into the run, as a running cluster's does, rather than
/// claiming afresh and compacting only after two.
///
/// # Errors
/// etcd's, when the claim's Get or Txn fails.
pub(crate) async fn claim_before(
    client: &mut etcd_client::Client,
) -> Result<(i64, i64), etcd_client::Error> {
    let current = client.get(COMPACT_REV_KEY, None).await?;
    let version = current.kvs().first().map_or(0, etcd_client::KeyValue::version);
    let txn = Txn::new()
        .when([Compare::version(COMPACT_REV_KEY, CompareOp::Equal, version)])
        .and_then([TxnOp::put(COMPACT_REV_KEY, "0", None)]);
    let resp = client.txn(txn).await?;
    let revision = resp.header().map_or(0, etcd_client::ResponseHeader::revision);
    // Lost only to a compactor claiming meanwhile: then it holds this interval.
    Ok(if resp.succeeded() { (version + 1, revision) } else { (version + 1, 0) })
}

/// A failure of `kind` now, recorded if measured.
fn record_error(
    recorder: &mut Recorder,
    kind: OpKind,
    e: etcd_client::Error,
    measure_start: Instant,
) {
    let done = Instant::now();
    if done >= measure_start {
        let code = ErrorCode::from_grpc(status(e).code() as i32);
        recorder.record_error(kind, code, done);
    }
}

/// Where the apiserver keeps the compactor's claim: at the root, outside `/registry`.
const COMPACT_REV_KEY: &str = "compact_rev_key";

/// One claim of the apiserver's compactor (k8s.io/apiserver's `compact`): `Txn(If
/// version(compact_rev_key) == version, Then Put(compact_rev_key, seen), Else
/// Get(compact_rev_key))`. Returns the revision to compact to (the one the previous claim
/// saw) when it won and one was seen, and the version and revision the next claim starts
/// from. Several compactors (apiservers) on one cluster thus compact once per interval.
async fn claim(
    client: &mut etcd_client::Client,
    version: i64,
    seen: i64,
    measure_start: Instant,
    recorder: &mut Recorder,
) -> (Option<i64>, i64, i64) {
    let txn = Txn::new()
        .when([Compare::version(COMPACT_REV_KEY, CompareOp::Equal, version)])
        .and_then([TxnOp::put(COMPACT_REV_KEY, seen.to_string(), None)])
        .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
    let sent = Instant::now();
    let resp = match client.txn(txn).await {
        Ok(resp) => resp,
        Err(e) => {
            record_error(recorder, OpKind::K8sCompactor, e, measure_start);
            return (None, version, seen);
        }
    };
    let done = Instant::now();
    let revision = resp.header().map_or(0, etcd_client::ResponseHeader::revision);
    if done >= measure_start {
        recorder.record_ok(OpKind::K8sCompactor, sent, sent, done);
        recorder.record_payload(OpKind::K8sCompactor, u64::from(resp.succeeded()), 0);
    }
    if !resp.succeeded() {
        // Another compactor claimed this interval: follow its version.
        let theirs = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(get) => get.kvs().first().map(etcd_client::KeyValue::version),
            _ => None,
        });
        return (None, theirs.unwrap_or(version), revision);
    }
    // No compaction on the first claim: nothing was seen an interval before.
    ((seen > 0).then_some(seen), version + 1, revision)
}
