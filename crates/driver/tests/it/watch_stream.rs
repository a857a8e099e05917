//! Each apiserver's watch streams of the Kubernetes model, read from the report's JSON and
//! checked against the updates etcd holds: node leases (`kube-node-lease`) and the
//! apiservers' identity leases (`kube-system`), two namespaces of one resource, on a
//! stream each, each with the events of its own namespace alone.

use etcd_client::GetOptions;
use etcdlat_testkit::{Etcd, skip};

use crate::scenario;

/// Updates made to the keys under `prefix` since each was created (their versions).
async fn updates_under(etcd: &Etcd, prefix: &str) -> u64 {
    let opts = GetOptions::new().with_prefix();
    let resp = etcd.client().await.get(prefix, Some(opts)).await.expect("listing");
    resp.kvs().iter().map(|kv| kv.version() as u64 - 1).sum()
}

/// With the apiservers' leases renewed every second beside 40 nodes' leases every 10 s,
/// each of the three apiservers has one stream of node leases and one of identity leases
/// (and one of master leases), each delivering exactly the updates of its own keys: the
/// node leases' about 4 a second, the identity leases' about 3, not the two together on
/// both. The leases' update row counts both renewals.
#[tokio::test]
async fn node_leases_and_identity_leases_are_watched_on_streams_of_their_own() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s = scenario(
        "[load]\nclients = 6\nduration = \"6s\"\n\
         [kubernetes]\nnodes = 40\npod-churn = 0\npod-size = \"1KiB\"\n\
         apiserver-lease-interval = \"1s\"\n\
         history = \"0s\"\npreload-events = false\npods-per-controller = 0\n",
    );
    let report = driver.run(&s).await.expect("a run");
    assert_eq!(report.errors_total(), 0, "{:?}", report.ops);
    let v = serde_json::to_value(&report).expect("the report as JSON");
    let streams = v["kubernetes"]["watch_streams"].as_array().expect("watch streams");
    // Created by the preload, updated by the run alone: every version past the first is
    // an event each apiserver's stream of those keys was sent while measured.
    let node_leases = updates_under(&etcd, "/registry/leases/kube-node-lease/").await;
    let identity_leases = updates_under(&etcd, "/registry/leases/kube-system/").await;
    let master_leases = updates_under(&etcd, "/registry/masterleases/").await;
    assert!(node_leases >= 10 && identity_leases >= 6, "{node_leases}, {identity_leases}");
    assert_ne!(node_leases, identity_leases, "the counts below tell the streams apart");
    for (resource, namespace, updates) in [
        ("leases", Some("kube-node-lease"), node_leases),
        ("leases", Some("kube-system"), identity_leases),
        ("masterleases", None, master_leases),
    ] {
        let of: Vec<(u64, u64)> = streams
            .iter()
            .filter(|w| w["resource"] == resource && w["namespace"].as_str() == namespace)
            .map(|w| (w["apiserver"].as_u64().unwrap(), w["events"].as_u64().unwrap()))
            .collect();
        assert_eq!(of, [0, 1, 2].map(|a| (a, updates)), "{resource} {namespace:?}");
    }
    // No stream of leases but those two per apiserver.
    let leases = streams.iter().filter(|w| w["resource"] == "leases").count();
    assert_eq!(leases, 6, "{streams:?}");
    let rows = v["kubernetes"]["requests"].as_array().expect("rows");
    let updated = rows.iter().find(|r| r["resource"] == "leases" && r["verb"] == "update");
    let updated = updated.expect("the leases' update row")["ok"].as_u64();
    assert_eq!(updated, Some(node_leases + identity_leases));
}
