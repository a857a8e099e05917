//! Resource figures of a run: every member's Prometheus `/metrics`, scraped at the start,
//! every sampling period and at the end ([`Sampler`]), with each member's resource series
//! (for a member etcdlat started, also its process, data dir and disk from the machine);
//! and the etcdlat process's own CPU time, memory and load traffic ([`Usage`], and its
//! series).
//!
//! - `scrape`: fetching and reading `/metrics`, and a member's totals over the run;
//! - `host`: `/proc`, a data dir's size, `/proc/diskstats`, `getrusage`;
//! - `resources`: readings turned into samples.
//!
//! Nothing here ever fails or slows a run: the sampler runs on the driver's own runtime,
//! never on a worker thread, and its reads of `/proc` and of data dirs, as the client's
//! [`Usage`]'s, on tokio's blocking threads, never on the runtime's ([`off_runtime`]); a
//! member that cannot be scraped or read is reported with what was sampled and why the rest
//! was not, and a figure that is not exported stays `None`.

mod exposition;
mod host;
mod resources;
mod scrape;

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcdlat_core::{ClientBusy, ClientUsage, EmulatorUsage, MemberMetrics, ResourceSeries};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::discovery::MemberInfo;
use super::local::{MemberControl, MemberProcess};
use crate::transport::{Dialer, Ledger};
use resources::{ClientResources, MemberResources};
use scrape::{Scrapes, scrape};

/// Time between two samples: a second, as dbtester and `top` sample, whatever the report's
/// interval, so that a sample's CPU and its peaks are per second (a run of 5 s intervals
/// has its busiest second, not its busiest 5 s).
pub(crate) const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// The longest [`Sampler::measure_now`] waits: a scrape's timeout and then some.
const MEASURE_WAIT: Duration = Duration::from_secs(5);

/// A member to sample: its name, its `/metrics` URL, and its process when etcdlat started
/// it.
pub(crate) struct Target {
    name: String,
    url: String,
    local: Option<MemberProcess>,
}

/// Every member's name and `/metrics` URL (its first plain `http://` client URL, else its
/// first, scraped over the run's TLS), from the member list the run already has; with its
/// process and data dir when `control` (the local cluster's) has a member of that name.
pub(crate) fn targets(members: &[MemberInfo], control: Option<&MemberControl>) -> Vec<Target> {
    let targets: Vec<Target> = members
        .iter()
        .filter_map(|m| {
            let urls = &m.client_urls;
            let base = urls.iter().find(|u| u.starts_with("http://")).or(urls.first())?;
            Some(Target {
                name: m.name.clone(),
                url: format!("{}/metrics", base.trim_end_matches('/')),
                local: control.and_then(|c| c.member_process(&m.name)),
            })
        })
        .collect();
    if targets.is_empty() {
        tracing::warn!("server metrics are not scraped: no member has a client URL");
    }
    targets
}

/// The Go versions `members`' etcd was built with (`go1.26.8`), from each one's `/metrics`
/// at once, distinct ones comma-separated in order; empty when none said. A member that
/// does not answer is left out: its version is the others' in all but a rolling upgrade.
pub(crate) async fn go_version(members: &[Target], dialer: &Dialer) -> String {
    let mut asked = tokio::task::JoinSet::new();
    for m in members {
        let (dialer, url) = (dialer.clone(), m.url.clone());
        asked.spawn(async move { scrape::go_version(&dialer, &url).await });
    }
    let mut versions = Vec::new();
    while let Some(answer) = asked.join_next().await {
        match answer {
            Ok(Ok(Some(version))) => versions.push(version),
            Ok(Ok(None)) => {}
            Ok(Err(why)) => tracing::debug!("the Go version of a member is not known: {why}"),
            Err(e) => tracing::debug!("asking a member its Go version failed: {e}"),
        }
    }
    versions.sort_unstable();
    versions.dedup();
    versions.join(", ")
}

/// Samples members and the client on the caller's runtime, one task each, from
/// [`Sampler::start`] to [`Sampler::finish`].
pub(crate) struct Sampler {
    marks: watch::Sender<Marks>,
    /// A message from each sampling task once it has taken measurement's first sample.
    measuring: mpsc::UnboundedReceiver<()>,
    started: Instant,
    members: Vec<JoinHandle<(MemberMetrics, MemberResources)>>,
    client: JoinHandle<ClientResources>,
}

impl Sampler {
    /// Starts sampling `members` and the client (whose load's bytes `traffic` counts, and
    /// whose CPU leaves out threads `apart`, the network emulator's) every `period`. Returns
    /// once every first sample is taken (or has failed), so that the baseline precedes the
    /// load.
    pub(crate) async fn start(
        members: Vec<Target>,
        traffic: Arc<Ledger>,
        apart: Vec<i32>,
        period: Duration,
        dialer: &Dialer,
    ) -> Self {
        let (marks, marks_rx) = watch::channel(Marks::default());
        let (measuring_tx, measuring) = mpsc::unbounded_channel();
        let started = Instant::now();
        let mut first = Vec::with_capacity(members.len() + 1);
        let mut baseline = || {
            let (tx, rx) = oneshot::channel();
            first.push(rx);
            tx
        };
        // Each member's block device is looked up in `/proc`, and the client's memory is.
        let dialer = dialer.clone();
        let (members, client) = off_runtime(move || {
            let members: Vec<MemberSampling> = members
                .into_iter()
                .map(|target| sample_member(target, dialer.clone(), period, started))
                .collect();
            (members, ClientResources::new(traffic, apart, period, started))
        })
        .await;
        let members = members
            .into_iter()
            .map(|sampled| {
                let signals = (baseline(), measuring_tx.clone());
                tokio::spawn(each_period(period, signals, marks_rx.clone(), sampled))
            })
            .collect();
        let client =
            tokio::spawn(each_period(period, (baseline(), measuring_tx), marks_rx, client));
        for sampled in first {
            let _ = sampled.await;
        }
        Self { marks, measuring, started, members, client }
    }

    /// Says when measurement starts: a sample is taken then, and every period from it, so
    /// that no sample spans both warm-up (or setup) and measurement.
    pub(crate) fn measure_from(&self, at: Instant) {
        self.marks.send_modify(|m| m.measure_from = Some(at));
    }

    /// Measurement starts now: every member and the client are sampled, and this returns
    /// once they all are, so that the samples precede the load that starts after it (a
    /// sample taken at the instant the load starts races its first requests: a leader's
    /// proposals counted 496 of a run's 500 puts).
    /// A sampling task that has stopped (it cannot, but if) holds the load back at most
    /// [`MEASURE_WAIT`].
    pub(crate) async fn measure_now(&mut self) {
        self.measure_from(Instant::now());
        let tasks = self.members.len() + 1;
        let all = async {
            for _ in 0..tasks {
                if self.measuring.recv().await.is_none() {
                    break;
                }
            }
        };
        if tokio::time::timeout(MEASURE_WAIT, all).await.is_err() {
            tracing::warn!("measurement's first samples not taken in {MEASURE_WAIT:?}");
        }
    }

    /// Says that the load has ended: a sample is taken now, the last of the measurement;
    /// what follows (faults undone, the last checks) is counted apart.
    pub(crate) fn load_ended(&self) {
        self.marks.send_modify(|m| m.load_ended = true);
    }

    /// Takes the last samples and returns every member's figures, in the order given to
    /// [`Sampler::start`], and the client's series; their times are seconds since `origin`,
    /// when measurement started.
    pub(crate) async fn finish(self, origin: Instant) -> (Vec<MemberMetrics>, ResourceSeries) {
        self.marks.send_modify(|m| m.stopped = true);
        let shift_s = if self.started >= origin {
            (self.started - origin).as_secs_f64()
        } else {
            -(origin - self.started).as_secs_f64()
        };
        let mut out = Vec::with_capacity(self.members.len());
        for member in self.members {
            match member.await {
                Ok((mut metrics, resources)) => {
                    metrics.resources = resources.finish(shift_s);
                    out.push(metrics);
                }
                Err(e) => tracing::warn!("a metrics sampler stopped: {e}"),
            }
        }
        let client = match self.client.await {
            Ok(client) => client.finish(shift_s),
            Err(e) => {
                tracing::warn!("the client's sampler stopped: {e}");
                ResourceSeries::default()
            }
        };
        (out, client)
    }
}

/// Something sampled every period: [`Sampled::sample`] takes one sample, and
/// [`Sampled::done`] hands over what was sampled.
trait Sampled {
    type Output;
    /// Takes a sample; `measured` when the time since the one before is the measurement's.
    async fn sample(&mut self, measured: bool);
    fn done(self) -> Self::Output;
}

/// Where a run stands, as the [`Sampler`] is told.
#[derive(Debug, Clone, Copy, Default)]
struct Marks {
    /// When measurement starts.
    measure_from: Option<Instant>,
    /// Whether the load has ended.
    load_ended: bool,
    /// Whether sampling is to stop.
    stopped: bool,
}

/// A sample now, one every `period` (from measurement's start once it is known), one when
/// the load ends and one when told to stop; then what was sampled. When the [`Sampler`] is
/// dropped instead (the run failed), it ends without the last sample.
async fn each_period<S: Sampled>(
    period: Duration,
    (first, measuring): (oneshot::Sender<()>, mpsc::UnboundedSender<()>),
    mut marks: watch::Receiver<Marks>,
    mut sampled: S,
) -> S::Output {
    // Periods count from the first sample's start, not its end (a first scrape dials).
    let start = tokio::time::Instant::now();
    sampled.sample(false).await;
    let _ = first.send(());
    let every = |from: tokio::time::Instant| {
        let mut tick = tokio::time::interval_at(from, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick
    };
    let mut tick = every(start + period);
    let mut seen = Marks::default();
    // Whether the next tick is measurement's start, and whether the time since the last
    // sample is the measurement's.
    let (mut at_start, mut measured) = (false, false);
    loop {
        tokio::select! {
            biased;
            changed = marks.changed() => {
                if changed.is_err() {
                    return sampled.done();
                }
                let now = *marks.borrow_and_update();
                if let (Some(from), None) = (now.measure_from, seen.measure_from) {
                    tick = every(from.into());
                    at_start = true;
                }
                if now.load_ended && !seen.load_ended {
                    sampled.sample(measured).await;
                    measured = false;
                }
                seen = now;
                if now.stopped {
                    break;
                }
            }
            _ = tick.tick() => {
                sampled.sample(measured).await;
                if std::mem::take(&mut at_start) {
                    measured = !seen.load_ended;
                    let _ = measuring.send(());
                }
            }
        }
    }
    sampled.sample(measured).await;
    sampled.done()
}

/// One member's scrapes and resources.
struct MemberSampling {
    dialer: Dialer,
    url: String,
    scrapes: Scrapes,
    resources: MemberResources,
}

fn sample_member(
    target: Target,
    dialer: Dialer,
    period: Duration,
    started: Instant,
) -> MemberSampling {
    MemberSampling {
        dialer,
        scrapes: Scrapes::new(target.name, target.url.clone()),
        url: target.url,
        resources: MemberResources::new(target.local, period, started),
    }
}

impl Sampled for MemberSampling {
    type Output = (MemberMetrics, MemberResources);

    /// The machine's figures first, then the scrape, both as of the same moment (the
    /// scrape's own cost lands in the next sample).
    async fn sample(&mut self, measured: bool) {
        let at = Instant::now();
        let host = match self.resources.host_reader() {
            Some(reader) => Some(off_runtime(move || reader.read()).await),
            None => None,
        };
        let scraped = scrape(&self.dialer, &self.url).await;
        self.resources.add(at, host, scraped.as_ref().ok(), measured);
        self.scrapes.add(scraped, measured);
    }

    fn done(self) -> Self::Output {
        (self.scrapes.finish(), self.resources)
    }
}

impl Sampled for ClientResources {
    type Output = ClientResources;

    async fn sample(&mut self, measured: bool) {
        let at = Instant::now();
        let reader = self.reader();
        let read = off_runtime(move || reader.read()).await;
        self.add(at, read, measured);
    }

    fn done(self) -> Self::Output {
        self
    }
}

/// Runs `read` (of files under `/proc`, a walk of a data dir) on tokio's blocking threads:
/// a data dir of many files or a slow disk must not hold the runtime's thread, and the
/// tasks it serves, while it is read.
pub(crate) async fn off_runtime<T: Send + 'static>(read: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(read).await {
        Ok(read) => read,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is shutting down, and drops this task too.
            Err(_) => std::future::pending().await,
        },
    }
}

/// The etcdlat process's CPU time and context switches when a run started, to report what
/// the run used.
pub(crate) struct Usage {
    start: Option<host::Rusage>,
    since: Instant,
    /// The threads whose CPU is not the client's (the network emulator's), and their
    /// counters at the start.
    apart: Vec<(i32, Option<host::ThreadCounters>)>,
}

impl Usage {
    /// Notes the CPU time used so far, by the client and by threads `apart` (the network
    /// emulator's), read off the runtime's threads ([`off_runtime`]): the threads' counters
    /// are files under `/proc`.
    pub(crate) async fn start(apart: Vec<i32>) -> Self {
        off_runtime(move || Self {
            start: host::rusage_without(&apart),
            since: Instant::now(),
            apart: apart.into_iter().map(|tid| (tid, host::own_thread(tid).ok())).collect(),
        })
        .await
    }

    /// What threads `apart` of [`Usage::start`] spent since then, together; `None` without
    /// any, or when one cannot be read. Read off the runtime's threads, as at the start.
    pub(crate) async fn apart(&self) -> Option<EmulatorUsage> {
        if self.apart.is_empty() {
            return None;
        }
        let apart = self.apart.clone();
        off_runtime(move || Self::apart_since(&apart)).await
    }

    /// What threads `apart` spent since their counters at the start.
    fn apart_since(apart: &[(i32, Option<host::ThreadCounters>)]) -> Option<EmulatorUsage> {
        let mut sum = EmulatorUsage {
            user_cpu_s: 0.0,
            system_cpu_s: 0.0,
            voluntary_ctxt_switches: 0,
            nonvoluntary_ctxt_switches: 0,
            realtime: true,
        };
        for (tid, start) in apart {
            let (Some(start), Ok(end)) = (start, host::own_thread(*tid)) else { return None };
            sum.user_cpu_s += (end.user_s - start.user_s).max(0.0);
            sum.system_cpu_s += (end.system_s - start.system_s).max(0.0);
            sum.voluntary_ctxt_switches +=
                end.ctxt_switches.0.saturating_sub(start.ctxt_switches.0);
            sum.nonvoluntary_ctxt_switches +=
                end.ctxt_switches.1.saturating_sub(start.ctxt_switches.1);
            sum.realtime &= end.realtime;
        }
        Some(sum)
    }

    /// CPU time and context switches since [`Usage::start`] (without threads `apart`'s), the
    /// process's peak memory, and from its resource series (`resources`) the load's bytes
    /// and the busiest period; `None` where the platform does not tell. Read off the
    /// runtime's threads, as at the start.
    pub(crate) async fn finish(&self, resources: ResourceSeries) -> Option<ClientUsage> {
        let apart: Vec<i32> = self.apart.iter().map(|(tid, _)| *tid).collect();
        let start = self.start.as_ref()?;
        let since = self.since;
        let (end, wall) =
            off_runtime(move || (host::rusage_without(&apart), since.elapsed())).await;
        let end = end?;
        let user_cpu_s = (end.user_s - start.user_s).max(0.0);
        let system_cpu_s = (end.system_s - start.system_s).max(0.0);
        let wall_s = wall.as_secs_f64();
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
        Some(ClientUsage {
            user_cpu_s,
            system_cpu_s,
            max_rss_bytes: end.max_rss_bytes,
            worker_cpu_s: None,
            busy: (wall_s > 0.0).then(|| ClientBusy {
                process: (user_cpu_s + system_cpu_s) / wall_s / cores,
                worker_max: None,
                worker_peak: None,
            }),
            sent_bytes: resources.total(|s| s.sent_bytes),
            received_bytes: resources.total(|s| s.received_bytes),
            cpu_max_percent: resources.cpu_max_percent(),
            voluntary_ctxt_switches: Some(
                end.ctxt_switches.0.saturating_sub(start.ctxt_switches.0),
            ),
            nonvoluntary_ctxt_switches: Some(
                end.ctxt_switches.1.saturating_sub(start.ctxt_switches.1),
            ),
            resources,
        })
    }
}

/// This process's CPU time so far (user and system, every thread, seconds) and resident
/// memory (bytes), for a live view of the client; `None` where the platform does not tell.
#[must_use]
pub fn own_usage() -> Option<(f64, u64)> {
    let usage = host::rusage()?;
    Some((usage.user_s + usage.system_s, host::own_rss_bytes()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_member_is_reported_with_its_error() {
        // A port nobody listens on: bind, note it, free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/metrics");
        let dialer =
            Dialer::new(&crate::transport::Security::default(), Duration::from_secs(1)).unwrap();
        let members = vec![Target { name: "gone".into(), url: url.clone(), local: None }];
        let traffic = Arc::new(Ledger::default());
        let sampler =
            Sampler::start(members, traffic, Vec::new(), Duration::from_millis(20), &dialer).await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        let origin = Instant::now();
        sampler.measure_from(origin);
        tokio::time::sleep(Duration::from_millis(50)).await;
        sampler.load_ended();
        let ended_s = origin.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let (got, client) = sampler.finish(origin).await;
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].name.as_str(), got[0].url.as_str()), ("gone", url.as_str()));
        assert_eq!(got[0].samples, 0);
        assert!(got[0].failed_samples >= 2, "{got:?}");
        assert!(got[0].last_error.is_some());
        assert_eq!(got[0].rss_max_bytes, None);
        // Sampled all the same, with nothing in its samples, and its /proc named as not
        // available: etcdlat did not start it.
        let series = &got[0].resources;
        assert!(series.samples.len() >= 2, "{series:?}");
        assert!(series.samples.iter().all(|s| s.cpu_percent.is_none() && s.rss_bytes.is_none()));
        for source in [
            etcdlat_core::metrics::source::PROCESS,
            etcdlat_core::metrics::source::DATA_DIR,
            etcdlat_core::metrics::source::DISK,
        ] {
            assert!(
                series.why_not(source).is_some_and(|w| w.contains("did not start")),
                "{series:?}"
            );
        }
        // Times are on the measurement's clock, whose origin is given to `finish`: the
        // samples of the measurement span from it to the load's end, those before it are
        // negative, and those after the load's end are outside it too.
        let (first, last) = (&series.samples[0], series.samples.last().unwrap());
        assert!((first.t_s - first.span_s).abs() < 0.005, "{series:?}");
        assert!((last.t_s - ended_s).abs() < 0.005, "{series:?}");
        assert!(series.outside.iter().any(|s| s.t_s <= 0.0), "{series:?}");
        assert!(series.outside.iter().any(|s| s.t_s - s.span_s >= ended_s - 0.005), "{series:?}");
        // The client sampled itself meanwhile: its CPU and (here, with no load) no bytes.
        assert!(client.samples.len() >= 2, "{client:?}");
        assert!(client.samples.iter().all(|s| s.sent_bytes == Some(0)), "{client:?}");
        assert!(client.cpu_avg_percent().is_some(), "{client:?}");
    }

    #[tokio::test]
    async fn the_process_measures_itself() {
        let usage = Usage::start(Vec::new()).await;
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let used = usage.finish(ResourceSeries::default()).await.unwrap();
        assert!(used.user_cpu_s + used.system_cpu_s > 0.0, "{used:?}");
        assert!(used.max_rss_bytes > 1 << 20, "{used:?}");
        assert!(used.voluntary_ctxt_switches.is_some(), "{used:?}");
    }
}
