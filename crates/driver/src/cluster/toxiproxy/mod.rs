//! Network fault steps against a cluster etcdlat did not start: toxics on the proxies of a
//! toxiproxy server (Shopify/toxiproxy v2) that stands between the cluster and its clients or
//! peers, created and removed through its HTTP API.
//!
//! A step on a member acts on both streams of every proxy `[network.proxies]` maps to it:
//!
//! | step | toxic |
//! | --- | --- |
//! | `partition` | `timeout` with timeout 0: nothing gets through (toxiproxy drops it), and the connections it held are closed when it is removed |
//! | `delay` | `latency` of the step's latency (whole milliseconds), no jitter |
//! | `bandwidth` | `bandwidth` at the step's rate (whole KB/s, 1 KB = 1000 bytes) |
//! | `heal` | the member's `partition` toxics removed |
//! | the end of a step's `for` | that step's toxics removed |
//!
//! Toxics a run creates are named `etcdlat-<pid>-<run>-<step>-<stream>` (`<step>` is
//! `partition`, `delay` or `bandwidth`), so that the run's end removes exactly its own (as the
//! server lists them, which finds even one whose creation's answer was lost), and a second
//! `delay` on a proxy replaces the first, as on an emulated link. If a run ends without
//! removing them (a panic unwinding through the executor), dropping [`Toxics`] removes the
//! ones it knows.

mod api;
mod error;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use api::Client;
pub use error::ToxiproxyError;
use serde_json::json;

use super::network::LinkChange;

/// How long dropping [`Toxics`] may spend removing what the run left.
const DROP_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs of this process so far, so that two runs' toxics never share a name.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// What a step's toxic does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToxicKind {
    Partition,
    Delay,
    Bandwidth,
}

impl ToxicKind {
    /// The step it stands for, in toxic names.
    fn step(self) -> &'static str {
        match self {
            Self::Partition => "partition",
            Self::Delay => "delay",
            Self::Bandwidth => "bandwidth",
        }
    }

    /// toxiproxy's type of toxic for it.
    fn toxic_type(self) -> &'static str {
        match self {
            Self::Partition => "timeout",
            Self::Delay => "latency",
            Self::Bandwidth => "bandwidth",
        }
    }
}

/// A toxiproxy server in front of a cluster, and which of its proxies carry each member's
/// traffic (`[network]`'s `toxiproxy` and `proxies`).
#[derive(Debug, Clone)]
pub(crate) struct Proxies {
    client: Client,
    by_member: BTreeMap<String, Vec<String>>,
}

impl Proxies {
    /// The server at `api` with `by_member`'s proxies; nothing is sent yet.
    pub(crate) fn new(
        api: &str,
        by_member: BTreeMap<String, Vec<String>>,
    ) -> Result<Self, ToxiproxyError> {
        Ok(Self { client: Client::new(api)?, by_member })
    }

    /// Whether some proxy carries `member`'s traffic.
    pub(crate) fn maps(&self, member: &str) -> bool {
        self.by_member.get(member).is_some_and(|p| !p.is_empty())
    }

    /// Whether no proxy is mapped at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_member.values().all(Vec::is_empty)
    }

    /// Checks, before a run, that the server answers, that every mapped member is one of
    /// `members` (the cluster's names) and that every proxy exists.
    pub(crate) async fn check(&self, members: &[String]) -> Result<(), ToxiproxyError> {
        self.client.version().await?;
        let known = self.client.proxies().await?;
        for (member, proxies) in &self.by_member {
            if !members.contains(member) {
                let members = members.join(", ");
                return Err(ToxiproxyError::NoMember { member: member.clone(), members });
            }
            if let Some(proxy) = proxies.iter().find(|p| !known.contains(p)) {
                return Err(ToxiproxyError::NoProxy {
                    api: self.client.api().to_owned(),
                    proxy: proxy.clone(),
                    member: member.clone(),
                    known: if known.is_empty() { "none".to_owned() } else { known.join(", ") },
                });
            }
        }
        Ok(())
    }

    /// The proxies of `member`, or of every member, each once.
    pub(crate) fn of(&self, member: Option<&str>) -> Vec<String> {
        let mut proxies: Vec<String> = match member {
            Some(m) => self.by_member.get(m).cloned().unwrap_or_default(),
            None => self.by_member.values().flatten().cloned().collect(),
        };
        proxies.sort();
        proxies.dedup();
        proxies
    }
}

/// The toxics one run creates, removed by [`Toxics::remove_all`] when it ends, or (those
/// still known) when dropped.
#[derive(Debug)]
pub(crate) struct Toxics {
    proxies: Proxies,
    /// `etcdlat-<pid>-<run>-`: what this run's toxics' names start with.
    prefix: String,
    /// Proxy and toxic name of each toxic this run created and has not removed.
    created: BTreeSet<(String, String)>,
}

impl Toxics {
    /// A run's toxics on `proxies`; none yet.
    pub(crate) fn new(proxies: Proxies) -> Self {
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("etcdlat-{}-{run}-", std::process::id());
        Self { proxies, prefix, created: BTreeSet::new() }
    }

    /// The proxies it acts on.
    pub(crate) fn proxies(&self) -> &Proxies {
        &self.proxies
    }

    /// Applies `change` to both streams of every proxy of `member` (of every mapped member
    /// with `None`): a partition or a rate or delay added (a new delay or rate replaces the
    /// run's earlier one), or removed.
    pub(crate) async fn change(
        &mut self,
        member: Option<&str>,
        change: LinkChange,
    ) -> Result<(), ToxiproxyError> {
        let (kind, attributes) = match change {
            LinkChange::Partition => (ToxicKind::Partition, Some(json!({ "timeout": 0 }))),
            LinkChange::Heal => (ToxicKind::Partition, None),
            LinkChange::Delay(d) => {
                let ms = d.as_secs_f64() * 1e3;
                // toxiproxy counts whole milliseconds; a delay under one is still a delay.
                let ms = if d.is_zero() { 0 } else { (ms.round() as u64).max(1) };
                (ToxicKind::Delay, (ms > 0).then(|| json!({ "latency": ms, "jitter": 0 })))
            }
            LinkChange::Bandwidth(cap) => {
                // KB/s of 1000 bytes; 0 would mean no limit to toxiproxy.
                let rate = cap.map(|bytes_per_s| (bytes_per_s / 1000).max(1));
                (ToxicKind::Bandwidth, rate.map(|rate| json!({ "rate": rate })))
            }
        };
        for proxy in self.proxies.of(member) {
            for stream in ["upstream", "downstream"] {
                let name = format!("{}{}-{stream}", self.prefix, kind.step());
                let key = (proxy.clone(), name.clone());
                let present = self.created.contains(&key);
                if present && kind == ToxicKind::Partition && attributes.is_some() {
                    continue;
                }
                if present {
                    self.proxies.client.delete_toxic(&proxy, &name).await?;
                    self.created.remove(&key);
                }
                if let Some(attributes) = &attributes {
                    // Noted first: a creation whose answer is lost may still have happened.
                    self.created.insert(key);
                    let toxic = (name.as_str(), kind.toxic_type(), stream);
                    self.proxies.client.create_toxic(&proxy, toxic, attributes).await?;
                }
            }
        }
        Ok(())
    }

    /// Removes every toxic of this run from every mapped proxy, as the server lists them;
    /// goes on past errors and returns the first (what it could not remove is tried again
    /// when dropped).
    pub(crate) async fn remove_all(&mut self) -> Result<(), ToxiproxyError> {
        let client = self.proxies.client.clone();
        let mut first_error = None;
        for proxy in self.proxies.of(None) {
            let names = match client.toxics(&proxy).await {
                Ok(names) => names.unwrap_or_default(),
                Err(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            let mut left = BTreeSet::new();
            for name in names.into_iter().filter(|n| n.starts_with(&self.prefix)) {
                if let Err(e) = client.delete_toxic(&proxy, &name).await {
                    first_error.get_or_insert(e);
                    left.insert(name);
                }
            }
            self.created.retain(|(p, name)| *p != proxy || left.contains(name));
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Toxics {
    fn drop(&mut self) {
        if self.created.is_empty() {
            return;
        }
        // The run did not remove them (a panic unwound through the executor). Drop cannot
        // await and may run on a runtime's thread: a thread with a runtime of its own removes
        // them, waited for.
        let created = std::mem::take(&mut self.created);
        let client = self.proxies.client.clone();
        let removal = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            rt.block_on(async {
                let all = async {
                    for (proxy, name) in &created {
                        if let Err(e) = client.delete_toxic(proxy, name).await {
                            tracing::warn!(error = %e, "a toxic left behind");
                        }
                    }
                };
                let _ = tokio::time::timeout(DROP_TIMEOUT, all).await;
            });
        });
        let _ = removal.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_of_a_member_or_of_all_each_once() {
        let by_member = BTreeMap::from([
            ("m0".to_owned(), vec!["c0".to_owned(), "p".to_owned()]),
            ("m1".to_owned(), vec!["p".to_owned(), "c1".to_owned()]),
            ("m2".to_owned(), vec![]),
        ]);
        let p = Proxies::new("http://127.0.0.1:8474", by_member).unwrap();
        assert_eq!(p.of(Some("m1")), ["c1", "p"]);
        assert_eq!(p.of(None), ["c0", "c1", "p"]);
        assert!(p.of(Some("m9")).is_empty());
        assert!(p.maps("m0") && !p.maps("m2") && !p.maps("m9") && !p.is_empty());
        let a = Toxics::new(p.clone());
        let b = Toxics::new(p);
        assert_ne!(a.prefix, b.prefix, "two runs' toxics never share a name");
        assert!(a.prefix.starts_with(&format!("etcdlat-{}-", std::process::id())));
    }

    /// A real toxiproxy server with proxies `a` (for m0) and `b` (for m1); nothing connects
    /// to them, so their upstream is never dialled. `None` when etcd tests are skipped.
    async fn server() -> Option<(etcdlat_testkit::Toxiproxy, Proxies)> {
        if etcdlat_testkit::skip() {
            return None;
        }
        let server = etcdlat_testkit::Toxiproxy::start().await;
        let _ = server.create_proxy("a", "127.0.0.1:9");
        let _ = server.create_proxy("b", "127.0.0.1:9");
        let by_member =
            BTreeMap::from([("m0".into(), vec!["a".into()]), ("m1".into(), vec!["b".into()])]);
        let proxies = Proxies::new(&server.api(), by_member).unwrap();
        Some((server, proxies))
    }

    /// A proxy's toxics as `type stream value` (the latency, rate or timeout), sorted.
    fn on(server: &etcdlat_testkit::Toxiproxy, proxy: &str) -> Vec<String> {
        let toxics: serde_json::Value =
            serde_json::from_str(&server.get(&format!("/proxies/{proxy}/toxics"))).unwrap();
        let mut out: Vec<String> = toxics
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let kind = t["type"].as_str().unwrap();
                let key = if kind == "bandwidth" { "rate" } else { kind };
                format!("{kind} {} {}", t["stream"].as_str().unwrap(), t["attributes"][key])
            })
            .collect();
        out.sort();
        out
    }

    #[tokio::test]
    async fn steps_become_toxics_that_replace_each_other_and_are_all_removed() {
        let Some((server, proxies)) = server().await else { return };
        proxies.check(&["m0".into(), "m1".into()]).await.unwrap();
        let mut toxics = Toxics::new(proxies);
        let ms = Duration::from_millis;
        toxics.change(Some("m0"), LinkChange::Partition).await.unwrap();
        toxics.change(Some("m0"), LinkChange::Partition).await.unwrap();
        assert_eq!(on(&server, "a"), ["timeout downstream 0", "timeout upstream 0"]);
        assert!(on(&server, "b").is_empty());
        toxics.change(None, LinkChange::Delay(ms(30))).await.unwrap();
        toxics.change(None, LinkChange::Delay(ms(50))).await.unwrap();
        toxics.change(Some("m1"), LinkChange::Bandwidth(Some(2_000_000))).await.unwrap();
        toxics.change(Some("m0"), LinkChange::Heal).await.unwrap();
        assert_eq!(on(&server, "a"), ["latency downstream 50", "latency upstream 50"]);
        assert_eq!(
            on(&server, "b"),
            [
                "bandwidth downstream 2000",
                "bandwidth upstream 2000",
                "latency downstream 50",
                "latency upstream 50"
            ]
        );
        // One of this run's whose creation's answer was lost, and another program's.
        for name in [format!("{}lost", toxics.prefix), "someone-else".to_owned()] {
            let body =
                format!(r#"{{"name":"{name}","type":"latency","attributes":{{"latency":7}}}}"#);
            let (status, answer) = server.request("POST", "/proxies/a/toxics", &body);
            assert_eq!(status, 200, "{answer}");
        }
        toxics.remove_all().await.unwrap();
        assert_eq!(on(&server, "a"), ["latency downstream 7"], "only the other program's is left");
        assert!(on(&server, "b").is_empty());
    }

    #[tokio::test]
    async fn toxics_dropped_before_the_run_removed_them_are_removed() {
        let Some((server, proxies)) = server().await else { return };
        let mut toxics = Toxics::new(proxies);
        toxics.change(None, LinkChange::Partition).await.unwrap();
        assert_eq!(on(&server, "b").len(), 2);
        drop(toxics);
        assert!(on(&server, "a").is_empty() && on(&server, "b").is_empty());
    }

    #[tokio::test]
    async fn a_member_the_cluster_lacks_is_named() {
        let Some((server, _)) = server().await else { return };
        let by_member = BTreeMap::from([("m5".into(), vec!["a".into()])]);
        let err = Proxies::new(&server.api(), by_member).unwrap().check(&["m0".into()]).await;
        let err = err.unwrap_err().to_string();
        assert_eq!(err, "network.proxies.m5: the cluster has no member \"m5\" (members: m0)");
    }
}
