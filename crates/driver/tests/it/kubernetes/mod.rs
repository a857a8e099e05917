//! The apiserver's requests (`k8s-*`) on a 3-member cluster, checked against what etcd did.
//! Here its writes: creates that write once and fail on an existing name, optimistic updates
//! and deletes whose compares fail on stale revisions (none with one writer per object but
//! where a loaded machine's watch cache lags, more with more writers), racing creates of
//! which one wins, pods' lives (a client's create, updates and delete of each new name, in
//! order, never conflicting), objects with a TTL written again when their lease expired; the
//! revision moves by exactly the successful mutating transactions.
//!
//! - `reads`: lists pinned to their first page's revision, counts, lists of a compacted
//!   revision, consistent reads' waits for progress notifications, the watch caches that
//!   end as a fresh list and deliver every write the run made (its lag the watch row's
//!   latency), and the reads each apiserver release sends to etcd;
//! - `cluster`: a modelled cluster of nodes at its derived rates, node leases, events on
//!   reused leases, the apiserver's compactor and a steady-state run.

mod cluster;
mod reads;

use std::collections::BTreeMap;
use std::time::Duration;

use etcd_client::{EventType, GetOptions, WatchOptions};
use etcdlat_core::invariant::InvariantReport;
use etcdlat_core::workload::kubernetes::Verb;
use etcdlat_core::{ErrorCode, OpKind, Report};
use etcdlat_driver::Driver;
use etcdlat_testkit::{Etcd, etcd_version, skip};

use crate::scenario;

/// Runs `op` with `params` on `clients` clients for `total` requests.
async fn run(driver: &Driver, clients: u32, total: u64, op: &str, params: &str) -> Report {
    let toml = format!("[load]\nclients = {clients}\ntotal = {total}\n[op.{op}]\n{params}\n");
    driver.run(&scenario(&toml)).await.expect("a run")
}

/// Keys under `prefix`, and the largest mod revision among them.
async fn keys(etcd: &Etcd, prefix: &str) -> Vec<etcd_client::KeyValue> {
    let opts = GetOptions::new().with_prefix();
    etcd.client().await.get(prefix, Some(opts)).await.expect("listing").kvs().to_vec()
}

/// The invariants of a run that sent the apiserver's requests, all of which must hold.
/// But one on etcd 3.4 before 3.4.24 (Debian's is 3.4.23): it may send a progress
/// notification older than events it has just delivered (it notifies watchers of a write
/// before its store's revision moves), a bug the checks find there about one run in three,
/// and the reason Kubernetes asks for 3.4.31 or 3.5.13 and later for its progress requests.
fn held(report: &Report) -> InvariantReport {
    let mut checked = report.invariants.expect("the apiserver's requests check their invariants");
    if etcd_version().starts_with("etcd 3.4.") {
        checked.progress_regressions = 0;
    }
    assert_eq!(checked.violation_count(), 0, "{checked:?}");
    checked
}

#[tokio::test]
async fn creates_updates_and_deletes_write_as_the_apiserver_and_move_the_revision_by_their_successes()
 {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(4).await;
    let pods = "objects = 200\nnamespaces = 4\nobject-size = 2000";

    // 200 creates of 200 names: each written once, at version 1.
    let before = etcd.revision().await;
    let report = run(&driver, 8, 200, "k8s-create", pods).await;
    let create = report.op(OpKind::K8sCreate);
    assert_eq!((create.ok, create.errors_total), (200, 0), "{:?}", create.errors);
    assert_eq!(etcd.revision().await - before, 200);
    let stored = keys(&etcd, "/registry/pods/").await;
    assert_eq!(stored.len(), 200);
    assert!(stored.iter().all(|kv| kv.version() == 1 && kv.value().len() == 2000));
    assert_eq!(stored[0].key_str().unwrap(), "/registry/pods/ns-0/object-00000000");
    held(&report);

    // Creating them again fails on every one (If mod_revision == 0) and writes nothing.
    let before = etcd.revision().await;
    let report = run(&driver, 8, 200, "k8s-create", pods).await;
    let create = report.op(OpKind::K8sCreate);
    assert_eq!((create.ok, create.errors_of(ErrorCode::AlreadyExists)), (0, 200));
    assert_eq!(etcd.revision().await, before);

    // One writer per object: 800 updates, 4 per object, each comparing the revision the
    // watch cache delivered. About 25 other updates separate two of one object, time for
    // the watch to deliver the first on a quiet machine; on a loaded one (a load average
    // of 18 on 2 cores here) it may not have, and the update conflicts as the apiserver's
    // does and is retried on what etcd's Else returned. Never a fault (`held`), never
    // more than one retry for a conflict, and each conflict writes nothing.
    let before = etcd.revision().await;
    let report = run(&driver, 8, 800, "k8s-update", pods).await;
    let update = report.op(OpKind::K8sUpdate);
    assert_eq!((update.ok, update.errors_total), (800, 0), "{:?}", update.errors);
    assert_eq!(update.conflicts, update.retries);
    assert!(update.conflicts < 400, "most updates compared a delivered revision: {update:?}");
    assert_eq!(etcd.revision().await - before, 800, "one revision per successful update");
    let versions: i64 = keys(&etcd, "/registry/pods/").await.iter().map(|kv| kv.version()).sum();
    assert_eq!(versions, 200 + 800, "each update wrote its object once");
    held(&report);
    // When each client updates one object back to back, faster than the watch delivers
    // its own writes, the next update compares what the cache holds, as the apiserver's
    // does (its cache is fed by its watch alone): stale, it conflicts, and the retry
    // compares what etcd's Else returned; every conflict is retried, and none is a fault
    // (the cache had not been sent the revision it conflicted on).
    let before = etcd.revision().await;
    let report = run(&driver, 8, 800, "k8s-update", "objects = 8\nnamespaces = 4").await;
    let update = report.op(OpKind::K8sUpdate);
    assert_eq!(
        (update.ok, update.errors_total, update.retries),
        (800, 0, update.conflicts),
        "{:?} {:?}",
        update.errors,
        update.error_messages
    );
    assert!(update.conflicts > 0, "back-to-back updates never saw their cache lag");
    assert_eq!(etcd.revision().await - before, 800, "one revision per update, none per conflict");
    held(&report);

    // Eight writers per object race on the same revisions: compares fail on the stale ones
    // and the retries carry the revision etcd's Else returned; still one revision per
    // successful update, none per conflict.
    let mut conflicts = Vec::new();
    for writers in [1, 2, 8] {
        let before = etcd.revision().await;
        let params = format!("{pods}\nwriters-per-object = {writers}");
        let report = run(&driver, 8, 800, "k8s-update", &params).await;
        let update = report.op(OpKind::K8sUpdate);
        assert_eq!((update.ok, update.errors_total), (800, 0), "{writers}: {:?}", update.errors);
        assert_eq!(update.retries, update.conflicts, "{writers}");
        assert_eq!(etcd.revision().await - before, 800, "{writers} writers");
        held(&report);
        conflicts.push(update.conflicts);
    }
    assert_eq!(conflicts[0], 0, "one writer per object never conflicts: {conflicts:?}");
    assert!(conflicts[2] > 0, "eight writers per object conflict: {conflicts:?}");
    assert!(conflicts[2] >= conflicts[1], "more writers, more conflicts: {conflicts:?}");

    // Deletes compare the same way; every object goes, once (one client: the objects in
    // turn).
    let before = etcd.revision().await;
    let report = run(&driver, 1, 200, "k8s-delete", pods).await;
    let delete = report.op(OpKind::K8sDelete);
    assert_eq!(
        (delete.ok, delete.errors_total, delete.conflicts),
        (200, 0, 0),
        "{:?}",
        delete.errors
    );
    assert_eq!(etcd.revision().await - before, 200);
    assert!(keys(&etcd, "/registry/pods/").await.is_empty());
    // And a second round finds nothing to delete.
    let report = run(&driver, 1, 200, "k8s-delete", pods).await;
    assert_eq!(report.op(OpKind::K8sDelete).errors_of(ErrorCode::NotFound), 200);
}

/// Pods with a life, one client's after another: 8 clients, one per worker so that each
/// sends exactly its share, each create a new pod, update it 4 times and delete it, 3 times
/// over. Every request succeeds without a conflict, etcd's history under the prefix is 24
/// lives of 24 names (a create at version 1, the updates, the delete, in that order), the
/// revision moved by exactly those 144 writes, nothing is left, and the (pods, create),
/// (pods, update) and (pods, delete) rows count them. A run that stops in the middle of
/// its lives leaves their pods, and the next run's names are its own.
#[tokio::test]
async fn pods_live_one_client_after_another_and_leave_nothing_when_their_lives_end() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver_builder().conns(8).workers(8).connect().await.unwrap();
    let life = "updates = 4\nnamespaces = 3\nname-prefix = \"life-\"\nobject-size = 700";
    let (clients, cycles, per_life) = (8, 3, 6);
    let before = etcd.revision().await;
    let report = run(&driver, 8, clients * cycles * per_life, "k8s-pod-lifecycle", life).await;
    let lives = clients * cycles;
    let (create, update, delete) =
        (report.op(OpKind::K8sCreate), report.op(OpKind::K8sUpdate), report.op(OpKind::K8sDelete));
    assert_eq!(
        [
            create.ok,
            update.ok,
            delete.ok,
            create.errors_total + update.errors_total + delete.errors_total
        ],
        [lives, lives * 4, lives, 0],
        "{:?} {:?} {:?}",
        create.errors,
        update.error_messages,
        delete.error_messages
    );
    assert_eq!((update.conflicts, update.retries, delete.conflicts), (0, 0, 0));
    assert_eq!(update.value_bytes, lives * 4 * 700);
    assert_eq!(etcd.revision().await - before, (lives * per_life) as i64, "one per write");
    assert!(keys(&etcd, "/registry/pods/").await.is_empty(), "every life ended");
    held(&report);
    // The run's pods cache (one of the lives' own, holding no pod) heard of every write.
    assert_eq!(watch_row(&report, "pods").ok, lives * per_life);

    // What etcd did, name by name: each name created once, updated four times from the
    // revision before, deleted at the fifth version.
    let mut client = etcd.client().await;
    let from = WatchOptions::new().with_prefix().with_prev_key().with_start_revision(before + 1);
    let mut stream = client.watch("/registry/pods/", Some(from)).await.unwrap();
    let mut history: BTreeMap<String, Vec<(bool, i64, i64)>> = BTreeMap::new();
    let mut events = 0;
    while events < lives * per_life {
        let resp = tokio::time::timeout(Duration::from_secs(10), stream.message())
            .await
            .expect("the history in time")
            .unwrap()
            .expect("a watch response");
        for e in resp.events() {
            let kv = e.kv().expect("a key");
            let (version, prev) = match e.event_type() {
                EventType::Put => (kv.version(), e.prev_kv().map_or(0, |p| p.mod_revision())),
                EventType::Delete => (0, e.prev_kv().map_or(0, |p| p.version())),
            };
            let name = kv.key_str().unwrap().to_owned();
            history.entry(name).or_default().push((
                e.event_type() == EventType::Put,
                version,
                prev,
            ));
            events += 1;
        }
    }
    assert_eq!(history.len() as u64, lives, "a new name for every life");
    for (name, writes) in &history {
        assert!(name.starts_with("/registry/pods/ns-") && name.contains("/life-"), "{name}");
        let puts: Vec<i64> = writes.iter().filter(|w| w.0).map(|w| w.1).collect();
        assert_eq!(puts, [1, 2, 3, 4, 5], "{name}: {writes:?}");
        assert_eq!(writes.last(), Some(&(false, 0, 5)), "{name}: deleted last, at version 5");
    }

    // One more request per client than whole lives: each starts a life it cannot end, and
    // its pod stays. The next run's names are its own, so each of its creates succeeds.
    let report = run(&driver, 8, clients * per_life + clients, "k8s-pod-lifecycle", life).await;
    assert_eq!((report.op(OpKind::K8sCreate).ok, report.errors_total()), (2 * clients, 0));
    assert_eq!(keys(&etcd, "/registry/pods/").await.len() as u64, clients, "left by the run");
    let report = run(&driver, 8, clients * per_life, "k8s-pod-lifecycle", life).await;
    assert_eq!((report.op(OpKind::K8sDelete).ok, report.errors_total()), (clients, 0));
    assert_eq!(keys(&etcd, "/registry/pods/").await.len() as u64, clients);

    // By resource and verb: the three rows of pods, each with what its kind counted, and the
    // watch of pods that delivered them.
    let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
    let rows: Vec<(&str, Verb, u64, u64)> =
        k.requests.iter().map(|r| (r.resource.as_str(), r.verb, r.ok, r.errors_total)).collect();
    assert_eq!(
        rows,
        [
            ("pods", Verb::Create, clients, 0),
            ("pods", Verb::Update, clients * 4, 0),
            ("pods", Verb::Delete, clients, 0),
            ("pods", Verb::Watch, clients * per_life, 0),
        ]
    );

    // A timed run after a warm-up on two workers: its lives are named apart from the
    // warm-up's, whose pods stay; every request succeeds, and each client ends at most one
    // life short.
    let driver = etcd.driver_builder().conns(2).workers(2).connect().await.unwrap();
    let timed = format!(
        "[load]\nclients = 4\nduration = \"1s\"\nwarmup = \"300ms\"\n[op.k8s-pod-lifecycle]\n{life}\n"
    );
    let report = driver.run(&scenario(&timed)).await.expect("a run");
    let (create, delete) = (report.op(OpKind::K8sCreate), report.op(OpKind::K8sDelete));
    assert_eq!(report.errors_total(), 0, "{:?}", report.ops);
    assert!(delete.ok > 0 && create.ok >= delete.ok && create.ok - delete.ok <= 4);
    held(&report);
}

/// An update of objects with a TTL puts each on a new lease of that TTL (15 s: too short
/// for the apiserver's lease manager to reuse one), and writes again an object whose lease
/// expired, as the master lease reconciler's GuaranteedUpdate with ignoreNotFound does:
/// master leases deleted before the run are all there after it, with no error.
#[tokio::test]
async fn updates_of_objects_with_a_ttl_write_them_again_when_their_lease_expired() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(1).await;
    let masters = "resource = \"masterleases\"\nnamespace = \"\"\nname-prefix = \"ip-\"\n\
        objects = 3\nttl = \"15s\"\nobject-size = 64";
    run(&driver, 3, 3, "k8s-create", masters).await;
    let created = keys(&etcd, "/registry/masterleases/").await;
    assert_eq!(created.len(), 3);
    assert!(created.iter().all(|kv| kv.lease() != 0));
    let mut client = etcd.client().await;
    // Two of them expired: their leases revoked, deleting them.
    for kv in &created[..2] {
        client.lease_revoke(kv.lease()).await.unwrap();
    }
    assert_eq!(keys(&etcd, "/registry/masterleases/").await.len(), 1);
    let report = run(&driver, 3, 30, "k8s-update", masters).await;
    let update = report.op(OpKind::K8sUpdate);
    assert_eq!((update.ok, update.errors_total), (30, 0), "{:?}", update.errors);
    let after = keys(&etcd, "/registry/masterleases/").await;
    let names: Vec<&str> = after.iter().map(|kv| kv.key_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "/registry/masterleases/ip-00000000",
            "/registry/masterleases/ip-00000001",
            "/registry/masterleases/ip-00000002"
        ]
    );
    for kv in &after {
        let ttl = client.lease_time_to_live(kv.lease(), None).await.unwrap();
        assert_eq!(ttl.granted_ttl(), 15, "a lease of the TTL, not reused");
    }
    held(&report);
}

/// Versions written past each key's first under `prefix`: the updates its objects took.
async fn updates_under(etcd: &Etcd, prefix: &str) -> i64 {
    keys(etcd, prefix).await.iter().map(|kv| kv.version() - 1).sum()
}

/// The (resource, `watch`) row of `report`.
fn watch_row<'r>(
    report: &'r Report,
    resource: &str,
) -> &'r etcdlat_core::report::kubernetes::RequestReport {
    let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
    let row = k.requests.iter().find(|r| r.resource == resource && r.verb == Verb::Watch);
    row.unwrap_or_else(|| panic!("no {resource} watch in {:?}", k.requests))
}
