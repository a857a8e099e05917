//! Network fault steps against a cluster etcdlat did not start, through a real toxiproxy
//! server in front of a real etcd: a delay shows in the step's `during` latency and not
//! around it, a partition stops the service until it heals, every toxic the run created is
//! gone after it (stopped early included), and an unreachable toxiproxy or a proxy it does not
//! have fails the run before anything starts.

use std::cell::RefCell;

use etcdlat_core::{FaultAction, OpKind, Report};
use etcdlat_driver::{Driver, DriverError, ToxiproxyError};
use etcdlat_testkit::{Etcd, Toxiproxy, eventually, skip};
use serde_json::Value;

use crate::{START_WITHIN, scenario};

/// The name of the proxy in front of the member's client port.
const PROXY: &str = "etcd0";

/// One etcd member (`m0`) behind proxy [`PROXY`] of a toxiproxy server, and a driver that
/// reaches it only through the proxy.
struct Remote {
    etcd: Etcd,
    toxiproxy: Toxiproxy,
    endpoint: String,
    driver: Driver,
}

impl Remote {
    /// `None` when tests that need etcd are skipped.
    async fn start() -> Option<Self> {
        if skip() {
            return None;
        }
        let etcd = Etcd::start().await;
        let toxiproxy = Toxiproxy::start().await;
        let endpoint = format!("http://{}", toxiproxy.create_proxy(PROXY, &etcd.endpoint()));
        let driver = Driver::builder().endpoints([endpoint.clone()]).connect().await.unwrap();
        Some(Self { etcd, toxiproxy, endpoint, driver })
    }

    /// A scenario against the proxy with `[network]` pointing at the server: `network` is
    /// the rest of the table, `rest` the load and steps.
    fn scenario(&self, network: &str, rest: &str) -> etcdlat_core::Scenario {
        scenario(&format!(
            "[cluster]\nendpoints = [\"{}\"]\n[network]\ntoxiproxy = \"{}\"\n{network}{rest}",
            self.endpoint,
            self.toxiproxy.api()
        ))
    }

    /// Runs [`load`] for `duration` with one fault step (`step`, its keys) on the mapped
    /// proxy; checks the step was done.
    async fn run_step(&self, duration: &str, step: &str) -> Report {
        let text = format!("{}[[faults]]\n{step}", load(duration));
        let report = self.driver.run(&self.scenario(MAPPED, &text)).await.unwrap();
        assert_eq!(report.faults.len(), 1, "{:#?}", report.faults);
        assert_eq!(report.faults[0].error, None, "{:#?}", report.faults[0]);
        report
    }

    /// The toxics on the proxy now.
    fn toxics(&self) -> Vec<Value> {
        let body = self.toxiproxy.get(&format!("/proxies/{PROXY}/toxics"));
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("toxics {body:?}: {e}"))
    }
}

const MAPPED: &str = "[network.proxies]\nm0 = [\"etcd0\"]\n";

/// 20 puts a second from 4 clients (each waits 200 ms between sends, longer than any delay
/// here), for `duration`, in intervals of 250 ms.
fn load(duration: &str) -> String {
    format!(
        "[load]\nclients = 4\nrate = 20\nduration = \"{duration}\"\n[report]\ninterval = \"250ms\"\n\
         [op.put]\nkey-space-size = 10\n"
    )
}

#[tokio::test]
async fn a_delay_shows_during_the_step_and_its_toxics_are_gone_after() {
    let Some(remote) = Remote::start().await else { return };
    let step =
        "at = \"1s\"\naction = \"delay\"\nlatency = \"30ms\"\nmember = \"m0\"\nfor = \"1s\"\n";
    let report = remote.run_step("3s", step).await;
    let f = &report.faults[0];
    assert_eq!(f.action, FaultAction::Delay);
    assert_eq!(f.what, "added 30ms to the links of m0 for 1s (toxiproxy: etcd0)");
    // 30 ms each way: every request and its answer cross the latency toxic once.
    assert!(f.during.ok > 0 && f.during.p50_us >= 60_000, "the delay was felt: {f:#?}");
    assert!(f.before.ok > 0 && f.before.p50_us < 30_000, "not before it: {f:#?}");
    assert!(f.after.ok > 0 && f.after.p50_us < 30_000, "nor after it: {f:#?}");
    assert_eq!(report.op(OpKind::Put).errors_total, 0);
    assert_eq!(remote.toxics(), Vec::<Value>::new(), "the run removed its toxics");
    let network = report.target.network.as_ref().expect("the report names the network");
    assert!(network.summary.contains("toxiproxy http://127.0.0.1:"), "{network:?}");
    assert!(network.links.is_empty(), "no links of etcdlat's own: {network:?}");
}

#[tokio::test]
async fn a_partition_stops_the_service_until_it_heals_and_leaves_no_toxic() {
    let Some(remote) = Remote::start().await else { return };
    let step = "at = \"1s\"\naction = \"partition\"\nmember = \"m0\"\nfor = \"1s\"\n";
    let report = remote.run_step("4s", step).await;
    let f = &report.faults[0];
    assert_eq!(f.what, "cut the traffic of m0 for 1s (toxiproxy: etcd0)");
    // Nothing crosses the proxy for the second it is cut; toxiproxy closes the connections
    // it held when the toxic goes, and the driver dials again.
    assert!(f.unavailable_s >= 0.9, "the service stopped for the partition: {f:#?}");
    let back = f.first_success_after_s.expect("the service came back");
    assert!(back >= f.started_s + 0.9 && back < f.started_s + 2.5, "and soon after: {f:#?}");
    assert!(f.after.ok > 0, "{f:#?}");
    assert!(f.before.ok > 0 && f.before.errors == 0, "{f:#?}");
    // Failed: only the requests in flight when the held connections were closed (one per
    // client) and, at most one per client again, a request sent in the moment before its
    // connection was dialled anew (Unavailable, as a member restarting gives).
    let put = report.op(OpKind::Put);
    assert!(put.errors_total <= 2 * 4, "{:?}", put.errors);
    assert_eq!(
        put.errors_total,
        put.errors_of(etcdlat_core::ErrorCode::Unavailable),
        "{:?}",
        put.errors
    );
    assert_eq!(remote.toxics(), Vec::<Value>::new(), "the run removed its toxics");
    // The writes the report counts reached the server.
    assert!(remote.etcd.revision().await > i64::try_from(put.ok).unwrap(), "{put:#?}");
}

#[tokio::test]
async fn a_run_stopped_mid_step_removes_its_toxics() {
    let Some(remote) = Remote::start().await else { return };
    let steps =
        "[[faults]]\nat = \"300ms\"\naction = \"delay\"\nlatency = \"20ms\"\nfor = \"30s\"\n";
    let scenario = remote.scenario(MAPPED, &format!("{}{steps}", load("60s")));
    // Stopped once the step's toxics are on the proxy, as Ctrl-C would stop the CLI.
    let seen = RefCell::new(Vec::new());
    let shutdown = async {
        let toxics = eventually(START_WITHIN, async || remote.toxics(), |t| t.len() == 2).await;
        *seen.borrow_mut() = toxics;
    };
    let report = remote.driver.run_until(&scenario, shutdown).await.unwrap();
    assert!(report.interrupted);
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 2, "the step's toxics appeared: {seen:?}");
    let mut streams: Vec<&str> = seen.iter().map(|t| t["stream"].as_str().unwrap()).collect();
    streams.sort_unstable();
    assert_eq!(streams, ["downstream", "upstream"]);
    for t in &seen {
        assert!(t["name"].as_str().unwrap().starts_with("etcdlat-"), "{t}");
        assert_eq!(
            (t["type"].as_str(), t["attributes"]["latency"].as_u64()),
            (Some("latency"), Some(20))
        );
    }
    assert_eq!(remote.toxics(), Vec::<Value>::new(), "the stopped run removed its toxics");
}

#[tokio::test]
async fn an_unreachable_toxiproxy_or_an_unknown_proxy_fails_before_anything_starts() {
    let Some(remote) = Remote::start().await else { return };
    let before = remote.etcd.revision().await;
    let steps =
        format!("{}[[faults]]\nat = \"0s\"\naction = \"partition\"\nmember = \"m0\"\n", load("2s"));
    let run = async |s: etcdlat_core::Scenario| remote.driver.run(&s).await.unwrap_err();

    // Nothing listens on this port.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let text = format!(
        "[cluster]\nendpoints = [\"{}\"]\n[network]\ntoxiproxy = \"http://{dead}\"\n{MAPPED}{steps}",
        remote.endpoint
    );
    let err = run(scenario(&text)).await;
    assert!(matches!(err, DriverError::Toxiproxy(ToxiproxyError::Unreachable { .. })), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("cannot reach toxiproxy at http://{dead}: ")),
        "{message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");

    let err = run(remote.scenario("[network.proxies]\nm0 = [\"etcd9\"]\n", &steps)).await;
    assert!(matches!(err, DriverError::Toxiproxy(ToxiproxyError::NoProxy { .. })), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("no proxy \"etcd9\" (network.proxies.m0); its proxies: etcd0"),
        "{message}"
    );

    let err = run(remote.scenario("[network.proxies]\nm7 = [\"etcd0\"]\n", &steps)).await;
    assert!(err.to_string().contains("network.proxies maps to no toxiproxy proxy"), "{err}");

    assert_eq!(remote.etcd.revision().await, before, "no load ran");
    assert_eq!(remote.toxics(), Vec::<Value>::new(), "no toxic was created");
}
