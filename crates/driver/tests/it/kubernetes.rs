//! The apiserver's requests (`k8s-*`) on a 3-member cluster, checked against what etcd did:
//! creates that write once and fail on an existing name, optimistic updates and deletes
//! whose compares fail on stale revisions (none with one writer per object, more with
//! more writers), lists pinned to their first page's revision, counts, consistent reads,
//! events on reused leases, pods' lives (a client's create, updates and delete of each
//! new name, in order, never conflicting), the apiserver's compactor, racing creates of
//! which one wins,
//! the run's watch caches, shared by its workers, that end as a fresh list and deliver
//! every write the run made (its lag the watch row's latency), consistent reads' waits for progress notifications; the
//! revision moves by exactly the successful mutating transactions and the compactor's
//! writes.

use std::collections::BTreeMap;
use std::time::Duration;

use etcd_client::{DeleteOptions, EventType, GetOptions, WatchOptions};
use etcdlat_core::invariant::InvariantReport;
use etcdlat_core::report::kubernetes::{SloVerdict, verdict};
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

#[tokio::test]
async fn reads_get_list_in_pinned_pages_count_and_wait_for_the_cache() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(4).await;
    let nodes = "resource = \"minions\"\nobjects = 100\nobject-size = 300\npage-size = 7";
    run(&driver, 4, 100, "k8s-create", nodes).await;

    let report = run(&driver, 4, 50, "k8s-get", nodes).await;
    let get = report.op(OpKind::K8sGet);
    assert_eq!((get.ok, get.keys, get.value_bytes), (50, 50, 50 * 300));

    // Every list reads all 100 in 15 pages of at most 7, as one sample each.
    let report = run(&driver, 2, 10, "k8s-list", nodes).await;
    let list = report.op(OpKind::K8sList);
    assert_eq!((list.ok, list.keys, list.pages), (10, 1000, 150));
    held(&report);
    // Each page is an API call of its own, timed and judged against the list SLO per page:
    // the 150 pages, none near 30 s, each list's slowest page within the whole list's time.
    let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
    let calls = k.requests[0].page_calls.as_ref().expect("a list's pages as calls");
    assert_eq!((calls.pages, calls.over_limit), (150, 0));
    assert!(calls.slowest_max_us > 0 && calls.slowest_max_us <= list.latency.max_us(), "{calls:?}");
    let slo = k.requests[0].slo.as_ref().expect("lists are judged");
    assert_eq!((slo.per.as_str(), slo.etcd_limit_s, slo.verdict), ("page", 30.0, SloVerdict::Met));
    assert_eq!(k.scope.side, "etcd");
    // By pages taken: all ten in the bucket of 9 to 16 pages; in pages of 50, two; of 100,
    // one.
    for (page_size, bucket) in [(7, (9, 16)), (50, (2, 2)), (100, (1, 1))] {
        let params = nodes.replace("page-size = 7", &format!("page-size = {page_size}"));
        let report = run(&driver, 2, 10, "k8s-list", &params).await;
        let k = report.kubernetes.expect("the apiserver's requests by resource");
        let buckets: Vec<_> =
            k.requests[0].pages.iter().map(|b| ((b.pages_min, b.pages_max), b.count)).collect();
        assert_eq!(buckets, [(bucket, 10)], "pages of {page_size}");
        assert_eq!((k.requests[0].resource.as_str(), k.requests[0].verb), ("minions", Verb::List));
    }

    let report = run(&driver, 2, 10, "k8s-count", nodes).await;
    assert_eq!(report.op(OpKind::K8sCount).keys, 1000);
    // Counts are the apiserver's own calls: reported, not judged.
    let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
    assert_eq!((k.requests[0].verb, k.requests[0].ok), (Verb::Count, 10));
    assert!(!k.requests[0].judged && k.requests[0].slo.is_none(), "{:?}", k.requests[0]);

    // Lists and consistent reads beside creates of a second set of names: each list holds
    // what its first page counted (its later pages pinned to that revision), and each
    // consistent read finds the cache caught up within the apiserver's 3 s.
    let mixed = "[load]\nclients = 8\ntotal = 600\n\
        [[mix]]\nweight = 1\n[mix.op.k8s-list]\nresource = \"minions\"\nobjects = 100\npage-size = 5\n\
        [[mix]]\nweight = 1\n[mix.op.k8s-consistent-list]\nresource = \"minions\"\nobjects = 100\n\
        [[mix]]\nweight = 2\n[mix.op.k8s-create]\nresource = \"minions\"\nname-prefix = \"more-\"\nobjects = 400\nobject-size = 300\n";
    let report = driver.run(&scenario(mixed)).await.expect("a run");
    let (list, consistent) = (report.op(OpKind::K8sList), report.op(OpKind::K8sConsistentList));
    assert_eq!(
        list.errors_total + consistent.errors_total,
        0,
        "{:?} {:?}",
        list.errors,
        consistent.errors
    );
    assert!(list.ok > 0 && consistent.ok > 0);
    assert!(list.pages >= list.ok * 20, "100 objects and more, 5 a page: {}", list.pages);
    held(&report);
}

#[tokio::test]
async fn events_share_leases_of_an_hour_and_a_minute_a_thousand_at_most() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver_builder().conns(2).workers(1).connect().await.unwrap();
    let before = etcd.revision().await;
    let report = run(&driver, 4, 2500, "k8s-event", "object-size = 100").await;
    let event = report.op(OpKind::K8sEvent);
    assert_eq!((event.ok, event.errors_total), (2500, 0), "{:?}", event.errors);
    assert_eq!(etcd.revision().await - before, 2500);

    let events = keys(&etcd, "/registry/events/").await;
    assert_eq!(events.len(), 2500);
    let mut client = etcd.client().await;
    let leases = client.leases().await.unwrap();
    assert_eq!(leases.leases().len(), 3, "one worker: 1,000 events a lease");
    for lease in leases.leases() {
        let ttl = client.lease_time_to_live(lease.id(), None).await.unwrap();
        assert_eq!(ttl.granted_ttl(), 3660, "the TTL and the reuse time");
    }
    assert!(events.iter().all(|kv| kv.lease() != 0));

    // A second run names its events apart; so do the workers of a timed run, after a
    // warm-up, whose request numbers start again.
    run(&driver, 4, 10, "k8s-event", "").await;
    assert_eq!(keys(&etcd, "/registry/events/").await.len(), 2510);
    let driver = etcd.driver_builder().conns(2).workers(2).connect().await.unwrap();
    let timed = "[load]\nclients = 4\nduration = \"1s\"\nwarmup = \"300ms\"\n[op.k8s-event]\n";
    let report = driver.run(&scenario(timed)).await.expect("a run");
    let event = report.op(OpKind::K8sEvent);
    assert!(event.ok > 0 && event.errors_total == 0, "{:?}", event.errors);
}

#[tokio::test]
async fn the_apiserver_compactor_claims_compact_rev_key_and_compacts_to_the_revision_before() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(2).await;
    run(&driver, 4, 50, "k8s-create", "objects = 50").await;
    let before = etcd.revision().await;
    let toml = "[load]\nclients = 4\nduration = \"2s\"\n[op.k8s-update]\nobjects = 50\n\
        [compaction]\ninterval = \"300ms\"\nstyle = \"apiserver\"\n";
    let report = driver.run(&scenario(toml)).await.expect("a run");
    let (update, claims, compact) =
        (report.op(OpKind::K8sUpdate), report.op(OpKind::K8sCompactor), report.op(OpKind::Compact));
    assert_eq!((update.errors_total, claims.errors_total, compact.errors_total), (0, 0, 0));
    // One compactor wins every claim, and compacts from its second on.
    assert!(
        claims.ok >= 3 && claims.keys == claims.ok,
        "{} claims, {} won",
        claims.ok,
        claims.keys
    );
    assert!(compact.ok >= 2 && compact.ok < claims.ok, "{} compactions", compact.ok);
    // The revision moved by the successful updates and the compactor's writes, nothing else.
    assert_eq!(etcd.revision().await - before, (update.ok + claims.keys) as i64);
    let mut client = etcd.client().await;
    let key = client.get("compact_rev_key", None).await.unwrap();
    let key = &key.kvs()[0];
    assert_eq!(key.version(), claims.keys as i64, "a version per won claim");
    // Its value is the revision its previous claim saw, which the last compaction took: a
    // read below it is refused as compacted.
    let seen: i64 = key.value_str().unwrap().parse().unwrap();
    assert!(seen > before, "{seen}");
    let old = client.get("compact_rev_key", Some(GetOptions::new().with_revision(before))).await;
    assert!(old.is_err(), "revision {before} was compacted: {old:?}");
    held(&report);
}

#[tokio::test]
async fn a_churn_of_creates_and_deletes_leaves_every_watch_cache_as_a_fresh_list() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    // Two workers sharing the run's watch cache: each one's writes write through it, and
    // reach it by events too.
    let driver = etcd.driver_builder().conns(4).workers(2).connect().await.unwrap();
    let churn =
        "resource = \"pods\"\nname-prefix = \"churn-\"\nobjects = 40\nwriters-per-object = 8";
    let toml = format!(
        "[load]\nclients = 8\ntotal = 2000\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-create]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-delete]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-update]\n{churn}\n"
    );
    let before = etcd.revision().await;
    let report = driver.run(&scenario(&toml)).await.expect("a run");
    let (create, delete, update) =
        (report.op(OpKind::K8sCreate), report.op(OpKind::K8sDelete), report.op(OpKind::K8sUpdate));
    assert!(create.ok > 0 && delete.ok > 0 && update.ok > 0);
    // What failed did so as the apiserver's would: a name taken, an object gone.
    assert_eq!(create.errors_total, create.errors_of(ErrorCode::AlreadyExists));
    assert_eq!(delete.errors_total, delete.errors_of(ErrorCode::NotFound));
    assert_eq!(update.errors_total, update.errors_of(ErrorCode::NotFound));
    assert_eq!(
        etcd.revision().await - before,
        (create.ok + delete.ok + update.ok) as i64,
        "one revision per successful create, delete and update"
    );
    // The cache, its list and the events since, is what a fresh list says.
    held(&report);

    // Of racing creates of one name exactly one succeeds, again and again.
    for round in 0..5 {
        let race = format!("name-prefix = \"race{round}-\"\nobjects = 1");
        let report = run(&driver, 8, 8, "k8s-create", &race).await;
        let create = report.op(OpKind::K8sCreate);
        assert_eq!((create.ok, create.errors_of(ErrorCode::AlreadyExists)), (1, 7), "{round}");
    }
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

/// Versions written past each key's first under `prefix`: the updates its objects took.
async fn updates_under(etcd: &Etcd, prefix: &str) -> i64 {
    keys(etcd, prefix).await.iter().map(|kv| kv.version() - 1).sum()
}

/// `[kubernetes] nodes = 50` preloads exactly its nodes, node leases and pods (one create
/// each, counted by prefix and name), then sends each flow at its derived rate: the updates
/// each node resource's keys took (their versions), the pods' lives' requests, and the
/// events and counts the run made are each flow's share of the open-loop rate, within 30%
/// (a mix picks at random). The node status, churn, list and count rates are set higher
/// than a 50-node cluster's so that every flow has a hundred-odd requests in 20 s, and pods
/// of 1 KiB so that one Get lists them. The revision moves by exactly the preload and the
/// run's successful writes; the lives' pods left are those created and not yet deleted.
#[tokio::test]
async fn a_cluster_of_nodes_is_preloaded_and_sent_at_its_derived_rates() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(4).await;
    let s = scenario(
        "[load]\nclients = 16\nduration = \"20s\"\n\
         [kubernetes]\nnodes = 50\nnode-status-interval = \"10s\"\npod-churn = 1\n\
         lists-per-minute = 20\ncounts-per-minute = 20\npod-size = \"1KiB\"\n\
         history = \"0s\"\npreload-events = false\npods-per-controller = 0\n\
         apiserver-lease-interval = \"0s\"\napiserver = \"1.30\"\n",
    );
    assert_eq!(
        s.load.rate, 28,
        "5 + 5 leases and nodes, 8 lives' requests + 5 events, 1 list, 4 counts"
    );
    let before = etcd.revision().await;
    let report = driver.run(&s).await.expect("a run");

    for (prefix, objects) in [("/registry/minions/", 50), ("/registry/leases/", 50)] {
        assert_eq!(keys(&etcd, prefix).await.len(), objects, "{prefix}");
    }
    // The preloaded pods are named `pod-` and their number; the lives' names have the
    // run's part between.
    let (preloaded, lived): (Vec<_>, Vec<_>) =
        keys(&etcd, "/registry/pods/").await.into_iter().partition(|kv| {
            let name = kv.key_str().unwrap().rsplit('/').next().unwrap();
            name.len() == "pod-".len() + 8
        });
    assert_eq!(preloaded.len(), 1500);
    let seconds = report.op(OpKind::K8sUpdate).duration_s;
    // Each of the 28 requests a second picks its flow at random by rate: a flow's count is
    // binomial, held within 5 standard deviations (one run in 1.7 million falls outside;
    // 30% failed one in 180), which still tells a flow at twice or half its rate.
    let near = |what: &str, got: f64, per_second: f64| {
        let (n, p) = (28.0 * seconds, per_second / 28.0);
        let want = n * p;
        let bound = (5.0 * (n * p * (1.0 - p)).sqrt()).max(0.1 * want);
        assert!((got - want).abs() <= bound, "{what}: {got} requests, {want} expected");
    };
    near("lease renewals", updates_under(&etcd, "/registry/leases/").await as f64, 5.0);
    near("node status updates", updates_under(&etcd, "/registry/minions/").await as f64, 5.0);
    let (create, delete) = (report.op(OpKind::K8sCreate), report.op(OpKind::K8sDelete));
    near("events", keys(&etcd, "/registry/events/").await.len() as f64, 5.0);
    near("counts", report.op(OpKind::K8sCount).ok as f64, 4.0);
    assert!(report.op(OpKind::K8sList).ok > 0);
    let sent: u64 = report.ops.values().map(|op| op.ok + op.errors_total).sum();
    assert_eq!(report.errors_total(), 0, "{:?}", report.ops);
    let want = 28.0 * seconds;
    assert!((sent as f64 - want).abs() <= 0.3 * want, "{sent} requests, {want} expected");
    held(&report);
    // Every own write moved the revision once: the preload's creates, the compactor's
    // claim before the run (the model's apiserver compacts every 5 minutes), the updates,
    // the lives' creates and deletes, the events.
    let writes = [OpKind::K8sUpdate, OpKind::K8sCreate, OpKind::K8sDelete, OpKind::K8sEvent]
        .map(|k| report.op(k).ok)
        .iter()
        .sum::<u64>();
    assert_eq!(etcd.revision().await - before, (1600 + 1 + writes) as i64);
    // Each client's lives one after another: at most one each is not over.
    assert!(create.ok >= delete.ok && create.ok - delete.ok <= 16, "{} {}", create.ok, delete.ok);
    assert_eq!(lived.len() as u64, create.ok - delete.ok, "the lives not over left their pods");

    // By resource and verb, each flow on its own line: as many successes as etcd stored
    // writes under its prefix, and together what its kind counted.
    let by = |resource: &str, verb: Verb| {
        let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
        let row = k.requests.iter().find(|r| r.resource == resource && r.verb == verb);
        let row = row.unwrap_or_else(|| panic!("no {resource} {verb:?} in {:?}", k.requests));
        assert_eq!(row.errors_total, 0, "{resource} {verb:?}");
        // Counts are the apiserver's own calls, reported and not judged; the rest judged.
        assert_eq!(row.judged, verb != Verb::Count, "{resource} {verb:?}");
        match &row.slo {
            Some(slo) => assert_eq!(slo.verdict, SloVerdict::Met, "{resource} {verb:?}"),
            None => assert!(!row.judged, "{resource} {verb:?} has an SLO"),
        }
        row.ok
    };
    let mut updated = 0;
    for (resource, prefix) in [("leases", "/registry/leases/"), ("minions", "/registry/minions/")] {
        let stored = updates_under(&etcd, prefix).await as u64;
        assert_eq!(by(resource, Verb::Update), stored, "{resource} updates");
        updated += stored;
    }
    // The pods' lives: their rows are their kinds' (no other flow creates, updates a pod
    // or deletes), at the lives' rate together.
    let lives = [Verb::Create, Verb::Update, Verb::Delete].map(|verb| by("pods", verb));
    assert_eq!([lives[0], lives[2]], [create.ok, delete.ok]);
    assert_eq!(updated + lives[1], report.op(OpKind::K8sUpdate).ok, "the kind counts them all");
    near("pods' lives", lives.iter().sum::<u64>() as f64, 8.0);
    let left_updates: i64 = lived.iter().map(|kv| kv.version() - 1).sum();
    assert!(left_updates as u64 <= lives[1]);
    // The run's pods cache, made for the lives (no other flow needs one), heard of each.
    assert_eq!(watch_row(&report, "pods").ok, lives.iter().sum::<u64>());
    let events = keys(&etcd, "/registry/events/").await.len() as u64;
    assert_eq!(by("events", Verb::Create), events);
    assert_eq!(by("pods", Verb::List), report.op(OpKind::K8sList).ok);
    // Every SLO met, no lease past 40 s: the run sustained its 50 nodes.
    let v = verdict(&report);
    assert_eq!((v.nodes, v.sustained, v.not_ready), (Some(50), true, 0), "{:?}", v.missed);
    let k = report.kubernetes.as_ref().expect("reported");
    assert_eq!((k.nodes, k.sustained), (Some(50), true));
    // The verdict says it is etcd's side, under which model, at the default share.
    let scope = v.scope.as_ref().expect("a verdict of apiserver requests has its scope");
    assert_eq!((scope.side.as_str(), scope.etcd_share), ("etcd", 0.5));
    assert!(scope.apiserver.contains("as etcdlat models it"), "{}", scope.apiserver);
    let counts: u64 =
        ["minions", "leases", "pods", "events"].map(|r| by(r, Verb::Count)).iter().sum();
    assert_eq!(counts, report.op(OpKind::K8sCount).ok);
}

/// Node leases renewed less often than the node-monitor grace period allows are counted
/// NotReady. A node whose lease etcd stored at version `v` (the preload's create, then
/// `v - 1` renewals) went at least the run over `v` without one, so with a 1 s grace every
/// node with `duration / v > 1 s` must be counted, and the longest gap is at least the run
/// over the fewest versions; with a grace longer than the run, none is.
#[tokio::test]
async fn node_leases_renewed_less_often_than_the_grace_period_are_not_ready() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(2).await;
    let model = |grace: &str, duration: &str| {
        scenario(&format!(
            "[load]\nclients = 6\nduration = \"{duration}\"\n\
             [kubernetes]\nnodes = 6\npods-per-node = 0\nnode-status-interval = \"0s\"\n\
             pod-churn = 0\ncounts-per-minute = 0\nnode-lease-interval = \"4s\"\n\
             node-monitor-grace-period = \"{grace}\"\nhistory = \"0s\"\n\
             apiserver-lease-interval = \"0s\"\n"
        ))
    };
    let report = driver.run(&model("1s", "6s")).await.expect("a run");
    let versions: Vec<i64> =
        keys(&etcd, "/registry/leases/").await.iter().map(|kv| kv.version()).collect();
    assert_eq!(versions.len(), 6);
    let leases = report.kubernetes.as_ref().and_then(|k| k.node_leases.as_ref());
    let leases = leases.expect("the node leases' renewals are reported");
    let run_us = report.duration_s * 1e6;
    let must = versions.iter().filter(|&&v| run_us / v as f64 > 1e6).count() as u64;
    assert_eq!((leases.nodes, leases.not_ready_after_s), (6, 1.0));
    assert!(leases.not_ready >= must.max(1), "{leases:?}, versions {versions:?}");
    let fewest = *versions.iter().min().expect("six leases") as f64;
    assert!(leases.max_gap_us as f64 >= run_us / fewest * 0.99, "{leases:?} {versions:?}");
    assert!(leases.max_gap_us as f64 <= run_us * 1.01, "{leases:?} in {run_us} us");
    assert!(leases.p99_gap_us <= leases.max_gap_us);

    // Afresh, held to a minute: no node went that long.
    etcd.client()
        .await
        .delete("/registry/", Some(DeleteOptions::new().with_prefix()))
        .await
        .unwrap();
    let report = driver.run(&model("60s", "3s")).await.expect("a run");
    let leases = report.kubernetes.and_then(|k| k.node_leases).expect("reported");
    assert_eq!((leases.nodes, leases.not_ready), (6, 0), "{leases:?}");
}

/// Node leases are renewed in turn, as each node's kubelet renews its own at the lease
/// interval: with node status updates drawn at random beside them, by 8 clients on 2
/// workers, every node's lease is renewed as often as every other's, give or take one, and
/// no node waits much longer than the interval. Drawn by whichever client took a renewal,
/// each node waited for its client to draw one, and some waited several intervals.
#[tokio::test]
async fn node_leases_are_renewed_in_turn_at_their_interval() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let model = scenario(
        "[load]\nclients = 8\nduration = \"4s\"\n\
         [kubernetes]\nnodes = 60\npods-per-node = 0\nnode-status-interval = \"1s\"\n\
         pod-churn = 0\ncounts-per-minute = 0\nnode-lease-interval = \"1s\"\nhistory = \"0s\"\n\
         apiserver-lease-interval = \"0s\"\n",
    );
    let report = driver.run(&model).await.expect("a run");
    let renewals = report.op(OpKind::K8sUpdate).ok;
    assert!(renewals > 300, "leases and statuses, 120/s for 4 s: {renewals}");
    let versions: Vec<i64> =
        keys(&etcd, "/registry/leases/").await.iter().map(|kv| kv.version()).collect();
    assert_eq!(versions.len(), 60);
    let (fewest, most) = (versions.iter().min().unwrap(), versions.iter().max().unwrap());
    assert!(most - fewest <= 1, "renewals per node from {fewest} to {most}: {versions:?}");
    assert!(*fewest >= 4, "each renewed about every second for 4 s: {versions:?}");
    let leases = report.kubernetes.and_then(|k| k.node_leases).expect("reported");
    assert_eq!((leases.nodes, leases.not_ready), (60, 0), "{leases:?}");
    // Gaps include the run's start to each node's first renewal and its last to the end,
    // and the run's first second also opens its connections.
    assert!(leases.max_gap_us < 3_000_000, "a 1 s interval: {leases:?}");
}

/// A list whose later pages are pinned to a revision etcd compacts meanwhile fails with
/// ErrCompacted, and the report counts it apart (and among its errors, under OutOfRange):
/// lists a key a page run while another client writes and compacts to the newest revision
/// every few milliseconds. Without the compactions none fails so.
#[tokio::test]
async fn lists_pinned_to_a_compacted_revision_are_counted_apart() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(2).await;
    let pods = "objects = 200\nobject-size = 100\npage-size = 1";
    run(&driver, 8, 200, "k8s-create", pods).await;
    let compacted_of = |report: &Report| {
        let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
        let list = &k.requests[0];
        assert_eq!((list.resource.as_str(), list.verb), ("pods", Verb::List));
        (k.compacted, list.compacted, list.errors_total, list.errors.get("OutOfRange").copied())
    };
    let report = run(&driver, 2, 10, "k8s-list", pods).await;
    assert_eq!(compacted_of(&report), (0, 0, 0, None));

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let compactor = {
        let (stop, mut client) = (stop.clone(), etcd.client().await);
        tokio::spawn(async move {
            let mut compactions = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let put = client.put("/elsewhere/tick", "x", None).await.expect("a put");
                let revision = put.header().expect("a header").revision();
                client.compact(revision, None).await.expect("a compaction");
                compactions += 1;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            compactions
        })
    };
    let report = run(&driver, 2, 20, "k8s-list", pods).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(compactor.await.unwrap() > 0);
    let counted = compacted_of(&report);
    let (all, list, errors, out_of_range) = counted;
    assert!(list > 0 && all == list, "compacted, by list, errors, OutOfRange: {counted:?}");
    assert!(list <= errors && Some(list) <= out_of_range, "{counted:?}");
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

/// The run's watch cache, shared by its two workers, receives the events of the run's own
/// writes (creates, updates, deletes), every one of them once in a run that ends cleanly:
/// the watch row counts as many as the writes that succeeded, its lag positive and within the run, held to no SLO
/// and outside the verdict.
#[tokio::test]
async fn the_watch_row_times_the_delivery_of_every_own_write() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver_builder().conns(4).workers(2).connect().await.unwrap();
    let pods = "name-prefix = \"lag-\"\nobjects = 200\nobject-size = 1000";
    run(&driver, 8, 200, "k8s-create", pods).await;
    let started = std::time::Instant::now();
    let report = run(&driver, 8, 1000, "k8s-update", pods).await;
    let run_us = started.elapsed().as_micros() as u64;
    let update = report.op(OpKind::K8sUpdate);
    assert_eq!((update.ok, update.errors_total), (1000, 0), "{:?}", update.errors);
    let watch = watch_row(&report, "pods");
    assert_eq!((watch.ok, watch.errors_total, watch.compacted), (1000, 0, 0));
    // An event read before its write's own answer counts 0 (both arrive together), so half
    // of them or more may: only the largest is surely above 0.
    let (p50, max) = (watch.latency.quantile_us(0.5), watch.latency.quantile_us(1.0));
    assert!(max > 0 && max < run_us, "lag p50 {p50} us, max {max} us, run {run_us} us");
    assert_eq!(watch.slo, None, "Kubernetes has no official watch SLO");
    held(&report);

    // Creates, deletes and updates of names that come and go: each write that succeeded
    // reaches the cache, once.
    let churn =
        "resource = \"pods\"\nname-prefix = \"churn-\"\nobjects = 40\nwriters-per-object = 8";
    let toml = format!(
        "[load]\nclients = 8\ntotal = 1500\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-create]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-delete]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-update]\n{churn}\n"
    );
    let report = driver.run(&scenario(&toml)).await.expect("a run");
    let written: u64 = [OpKind::K8sCreate, OpKind::K8sDelete, OpKind::K8sUpdate]
        .map(|k| report.op(k).ok)
        .iter()
        .sum();
    assert!(report.op(OpKind::K8sCreate).ok > 0 && report.op(OpKind::K8sDelete).ok > 0);
    assert_eq!(watch_row(&report, "pods").ok, written);
    let k = report.kubernetes.as_ref().expect("reported");
    assert!(k.verdict().missed.iter().all(|m| m.verb != Verb::Watch));
    held(&report);
}

/// Consistent reads of a resource while another's writes move etcd's revision: the cache
/// hears of no event and must ask for progress, so notifications arrive, and each read's
/// wait for one ends within the apiserver's 3 s.
#[tokio::test]
async fn consistent_reads_wait_for_progress_notifications_counted_with_their_gaps() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(4).await;
    let mixed = "[load]\nclients = 8\ntotal = 600\n\
        [[mix]]\nweight = 1\n[mix.op.k8s-consistent-list]\nresource = \"minions\"\nobjects = 10\n\
        [[mix]]\nweight = 2\n[mix.op.k8s-create]\nresource = \"pods\"\nname-prefix = \"progress-\"\nobjects = 400\nobject-size = 300\n";
    let report = driver.run(&scenario(mixed)).await.expect("a run");
    let consistent = report.op(OpKind::K8sConsistentList);
    assert_eq!(consistent.errors_total, 0, "{:?}", consistent.errors);
    let watch = watch_row(&report, "minions");
    let progress = watch.progress.as_ref().expect("the watch's progress");
    assert!(progress.notifications > 0 && progress.waits > 0, "{progress:?}");
    assert!(progress.waits <= consistent.ok, "{progress:?}");
    assert!(progress.wait_p99_us <= progress.wait_max_us, "{progress:?}");
    assert!(progress.wait_max_us > 0 && progress.wait_max_us <= 3_000_000, "{progress:?}");
    held(&report);
}

/// A modelled cluster in steady state, scaled down: its history (two seconds of every
/// flow's writes) and a TTL of events (20 s of them, on a lease per second, each with the
/// TTL its age leaves it) are preloaded, and during a run of three compaction intervals
/// the apiserver's compactor compacts, resuming from the claim made before the run (at
/// the first interval, to the revision the preload left), and the oldest event leases
/// expire, etcd deleting their events at once; the report says so, and the server agrees:
/// the revision before the run is compacted, and the events under the prefix are the
/// preloaded and created ones less those the expiries deleted.
#[tokio::test]
async fn a_steady_state_run_compacts_and_expires_event_leases() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s = scenario(
        "[load]\nclients = 8\nduration = \"6500ms\"\n\
         [kubernetes]\nnodes = 20\npods-per-node = 1\npod-churn = 2\npod-size = \"1KiB\"\n\
         node-size = \"1KiB\"\nevent-ttl = \"20s\"\nhistory = \"2s\"\n\
         compaction-interval = \"2s\"\ncounts-per-minute = 0\nlists-per-minute = 0\n\
         apiserver-lease-interval = \"1s\"\n",
    );
    let k = s.kubernetes.clone().unwrap();
    let events = k.event_preload().expect("events preloaded");
    assert_eq!((events.windows, events.per_window, events.leases_per_window()), (20, 10, 1));
    let start = etcd.revision().await;
    let report = driver.run(&s).await.expect("a run");
    assert_eq!(report.errors_total(), 0, "{:?}", report.ops);
    let steady = report.kubernetes.as_ref().and_then(|k| k.steady_state.clone());
    let steady = steady.expect("a model's run reports its steady state");
    let history: u64 = k.history().iter().map(|(_, n)| n).sum();
    assert_eq!(steady.history_writes, history);
    assert_eq!(
        history,
        4 + 32 + 2 * 8 + 2 * 6,
        "2 s of 2 renewals a second, of 2 lives of 8 a second, of their ReplicaSet's and \
         EndpointSlice's 4 updates a second each, of 3 apiservers' 2 leases each a second"
    );
    assert_eq!((steady.preloaded_events, steady.preloaded_event_leases), (200, 20));
    // Compactions at 2 s and 4 s (and perhaps 6 s), each to the revision of the claim
    // one interval before.
    let compact = report.op(OpKind::Compact);
    assert!(steady.compactions >= 2 && steady.compactions == compact.ok, "{steady:?}");
    assert_eq!(report.op(OpKind::K8sCompactor).errors_total, 0);
    let objects: u64 = k.preload().iter().map(|o| o.objects).sum();
    assert_eq!(objects, 20 * 3 + 1 + 1 + 3 * 2, "nodes, leases, pods, a ReplicaSet and a Service");
    let preloaded = start + objects as i64 + steady.history_writes as i64 + 200;
    assert!(steady.compacted_revision > preloaded, "{steady:?}, preload to {preloaded}");
    let mut client = etcd.client().await;
    let old = client.get("/registry/", Some(GetOptions::new().with_revision(preloaded))).await;
    assert!(old.is_err(), "revision {preloaded} was compacted: {old:?}");
    let at = client
        .get("/registry/", Some(GetOptions::new().with_revision(steady.compacted_revision)))
        .await;
    assert!(at.is_ok(), "the compacted revision itself is kept: {at:?}");
    // Windows with 1 to about 6 s left expire in the run: one lease, 10 events each.
    assert!(steady.leases_expired >= 3, "{steady:?}");
    assert_eq!(steady.keys_expired, 10 * steady.leases_expired, "{steady:?}");
    assert_eq!(steady.largest_expiry_keys, 10);
    let created = report.op(OpKind::K8sEvent).ok;
    let left = keys(&etcd, "/registry/events/").await.len() as u64;
    // Expiries after the run's end may have deleted more since.
    assert!(left <= 200 + created - steady.keys_expired, "{left} events left, {steady:?}");
    assert!(left >= 200 + created - steady.keys_expired - 60, "{left} events left, {steady:?}");
    held(&report);
    apiserver_writes_at_their_keys(&etcd, &report).await;
}

/// The apiserver's other writes of a modelled cluster, each a row of the report by
/// resource and verb, at the apiserver's keys: nodes cluster-scoped, node leases in
/// kube-node-lease, identity leases in kube-system, master leases cluster-scoped on 15 s
/// leases (a new one each write), ReplicaSets and EndpointSlices in the pods' namespaces.
async fn apiserver_writes_at_their_keys(etcd: &Etcd, report: &Report) {
    let k = report.kubernetes.as_ref().expect("reported");
    let rows: Vec<(&str, Verb)> =
        k.requests.iter().map(|r| (r.resource.as_str(), r.verb)).collect();
    for resource in ["replicasets", "endpointslices", "masterleases", "leases"] {
        let row = k.requests.iter().find(|r| r.resource == resource && r.verb == Verb::Update);
        let row = row.unwrap_or_else(|| panic!("no {resource} update in {rows:?}"));
        assert!(row.ok > 0 && row.errors_total == 0, "{resource}: {} ok, {:?}", row.ok, row.errors);
    }
    let mut client = etcd.client().await;
    for key in [
        "/registry/minions/node-00000000",
        "/registry/leases/kube-node-lease/node-00000019",
        "/registry/leases/kube-system/apiserver-00000002",
        "/registry/pods/ns-0/pod-00000000",
        "/registry/replicasets/ns-0/rs-00000000",
        "/registry/endpointslices/ns-0/svc-00000000",
    ] {
        let got = client.get(key, None).await.unwrap();
        assert_eq!(got.kvs().len(), 1, "{key}");
    }
    let masters = keys(etcd, "/registry/masterleases/").await;
    let names: Vec<&str> = masters.iter().map(|kv| kv.key_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "/registry/masterleases/ip-00000000",
            "/registry/masterleases/ip-00000001",
            "/registry/masterleases/ip-00000002"
        ]
    );
    for kv in &masters {
        assert!(kv.version() > 1, "written again in the run: {kv:?}");
        let ttl = client.lease_time_to_live(kv.lease(), None).await.unwrap();
        assert_eq!(ttl.granted_ttl(), 15, "the master lease's TTL, no reuse");
    }
    assert_eq!(keys(etcd, "/registry/leases/").await.len(), 20 + 3);
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

/// A report row read from its JSON: resource, successes, page buckets (fewest, most).
type Row = (String, u64, Vec<(u64, u64)>);

/// The release chooses what reaches etcd (docs/scenarios.md's table), read from the
/// report's JSON: 1.30's lists of pods go to etcd in pages of 500, every resource is counted
/// there; 1.33's are consistent lists from the watch cache whose continue pages (the 100
/// pods after the cache's first 500) come from etcd; 1.37's are consistent lists from the watch cache (a probe, no page from etcd), each
/// apiserver's consistency checker lists every cached resource in one page of 10,000 at its
/// cache's revision, and only events are counted in etcd. Either way each of the three
/// apiservers watches each cached resource on its own stream (node leases and its identity
/// leases, each a namespace of leases, on one each), and etcd sends every event of the run
/// to each.
#[tokio::test]
async fn the_apiserver_release_chooses_the_lists_that_reach_etcd_and_each_apiserver_watches() {
    if skip() {
        return;
    }
    let run = |release: &str| {
        scenario(&format!(
            "[load]\nclients = 6\nduration = \"6s\"\n\
             [kubernetes]\nnodes = 20\npod-churn = 0\nnode-status-interval = \"5s\"\n\
             lists-per-minute = 60\ncounts-per-minute = 60\npod-size = \"1KiB\"\n\
             consistency-check-period = \"2s\"\napiserver = \"{release}\"\n\
             history = \"0s\"\npreload-events = false\npods-per-controller = 0\n"
        ))
    };
    let mut json = Vec::new();
    for release in ["1.30", "1.33", "1.37"] {
        // Each on an etcd of its own: a model preloads its objects.
        let etcd = Etcd::start().await;
        let driver = etcd.driver(2).await;
        // Node leases and the apiservers' identity leases are leases of two namespaces,
        // each watched on its own stream.
        let watched = [
            ("leases", Some("kube-node-lease"), "/registry/leases/kube-node-lease/"),
            ("leases", Some("kube-system"), "/registry/leases/kube-system/"),
            ("minions", None, "/registry/minions/"),
        ];
        let mut before = Vec::new();
        for (_, _, prefix) in watched {
            before.push(updates_under(&etcd, prefix).await);
        }
        let report = driver.run(&run(release)).await.expect("a run");
        assert_eq!(report.errors_total(), 0, "{release}: {:?}", report.ops);
        held(&report);
        let v = serde_json::to_value(&report).expect("the report as JSON");
        // Each apiserver's own watch of each cached resource (or namespace of it), sent
        // every update of it.
        let streams = v["kubernetes"]["watch_streams"].as_array().expect("watch streams");
        for ((resource, namespace, prefix), before) in watched.into_iter().zip(before) {
            let updates = updates_under(&etcd, prefix).await - before;
            let of: Vec<(u64, u64)> = streams
                .iter()
                .filter(|w| w["resource"] == resource && w["namespace"].as_str() == namespace)
                .map(|w| (w["apiserver"].as_u64().unwrap(), w["events"].as_u64().unwrap()))
                .collect();
            // The identity leases' renewals, 0.3 a second, may not come in 6 s.
            assert!(updates > 0 || namespace == Some("kube-system"), "{release}: {prefix}");
            assert_eq!(of, [0, 1, 2].map(|a| (a, updates as u64)), "{release} {prefix}");
        }
        json.push(v);
    }
    let rows = |v: &serde_json::Value, verb: &str| -> Vec<Row> {
        let rows = v["kubernetes"]["requests"].as_array().expect("rows");
        rows.iter()
            .filter(|r| r["verb"] == verb && r["ok"].as_u64().unwrap() > 0)
            .map(|r| {
                let pages = r["pages"].as_array().unwrap();
                let pages = pages
                    .iter()
                    .map(|b| (b["pages_min"].as_u64().unwrap(), b["pages_max"].as_u64().unwrap()));
                (
                    r["resource"].as_str().unwrap().to_owned(),
                    r["ok"].as_u64().unwrap(),
                    pages.collect(),
                )
            })
            .collect()
    };
    let names = |rows: Vec<Row>| {
        rows.into_iter().map(|(resource, _, pages)| (resource, pages)).collect::<Vec<_>>()
    };
    let keys_per_list = |v: &serde_json::Value| {
        let list = &v["ops"]["k8s-list"];
        list["keys"].as_u64().expect("keys") as f64 / list["ok"].as_u64().expect("ok") as f64
    };
    let (old, between, new) = (&json[0], &json[1], &json[2]);
    // 1.30: the clients' lists of the 600 pods from etcd, two pages of 500 each, every
    // key read; every resource counted in etcd; no consistent read.
    assert_eq!(names(rows(old, "list")), [("pods".to_owned(), vec![(2, 2)])]);
    assert_eq!(keys_per_list(old), 600.0);
    assert!(rows(old, "consistent-list").is_empty());
    let counted = |v| names(rows(v, "count")).into_iter().map(|(r, _)| r).collect::<Vec<_>>();
    assert_eq!(counted(old), ["events", "leases", "masterleases", "minions", "pods"]);
    // 1.33: the clients' lists from the cache, the first page the cache's, the second (the
    // last 100 pods) from etcd; no checker; every resource counted in etcd.
    assert_eq!(names(rows(between, "consistent-list")), [("pods".to_owned(), vec![(2, 2)])]);
    let consistent = &between["ops"]["k8s-consistent-list"];
    assert_eq!(consistent["keys"].as_u64(), consistent["ok"].as_u64().map(|ok| ok * 100));
    assert!(rows(between, "list").is_empty());
    assert_eq!(counted(between), ["events", "leases", "masterleases", "minions", "pods"]);
    // 1.37: the clients' lists from the cache, one page each (the cache's), after the probe
    // that reads no object; the checker's lists of pods, nodes, leases and master leases,
    // one page of 10,000 each; events alone counted in etcd.
    assert_eq!(names(rows(new, "consistent-list")), [("pods".to_owned(), vec![(1, 1)])]);
    assert_eq!(new["ops"]["k8s-consistent-list"]["keys"].as_u64(), Some(0));
    let checked = names(rows(new, "list"));
    let one_page = |r: &str| (r.to_owned(), vec![(1, 1)]);
    let resources = ["leases", "masterleases", "minions", "pods"];
    assert_eq!(checked, resources.map(one_page));
    assert!(keys_per_list(new) >= 20.0 && keys_per_list(new) <= 600.0, "{}", keys_per_list(new));
    assert_eq!(counted(new), ["events"]);
    // Each list row says the keys etcd sent a list: 1.30's clients' lists every pod, 1.33's
    // consistent lists the continue page's 100, 1.37's none (the cache's page alone); the
    // checker's lists every object of its resource (the 20 node leases and the 3
    // apiservers' identity leases are all leases).
    let keys = |v: &serde_json::Value, resource: &str, verb: &str| {
        let rows = v["kubernetes"]["requests"].as_array().expect("rows");
        let row = rows.iter().find(|r| r["resource"] == resource && r["verb"] == verb);
        row.unwrap_or_else(|| panic!("{resource} {verb}"))["keys_per_list"].as_f64()
    };
    assert_eq!(keys(old, "pods", "list"), Some(600.0));
    assert_eq!(keys(old, "pods", "count"), None, "a count is not a list");
    assert_eq!(keys(between, "pods", "consistent-list"), Some(100.0));
    assert_eq!(keys(new, "pods", "consistent-list"), Some(0.0));
    let checked = ["pods", "minions", "leases", "masterleases"].map(|r| keys(new, r, "list"));
    assert_eq!(checked, [600.0, 20.0, 23.0, 3.0].map(Some));
}
