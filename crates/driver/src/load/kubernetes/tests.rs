//! The runners' unit tests: writer groups, the shared caches, a life's kinds and rows.

use super::*;

fn plan(objects: u64, groups: u64) -> Workload {
    Workload {
        action: Action::Verb(Verb::Update),
        layout: Layout {
            prefix: "/registry/pods/".into(),
            namespaces: 1,
            name_prefix: "object-".into(),
        },
        objects,
        cached_objects: objects,
        value: Bytes::new(),
        groups,
        single_writer: groups > 1,
        page_size: 0,
        lease: None,
        slot: 0,
        renews: false,
        turns: None,
        watch_slot: 1,
        life: None,
    }
}

fn runner(objects: u64, groups: u64) -> Runner {
    Runner::new(Arc::new(plan(objects, groups)), &Shared::default(), 0)
}

/// The run's operations on one resource share one cache whatever worker runs them, as
/// one apiserver's requests share its watch cache: a write through one worker's
/// runner is what another's reads, and etcd is asked for one watch.
#[test]
fn every_worker_reads_and_writes_through_one_cache_per_resource() {
    let update = plan(10, 10);
    let delete = Workload { action: Action::Verb(Verb::Delete), ..plan(10, 10) };
    let other = Workload {
        layout: Layout { prefix: "/registry/minions/".into(), ..update.layout.clone() },
        ..plan(10, 10)
    };
    let shared = Shared::new([&update, &delete, &other]);
    assert_eq!(shared.caches.len(), 2, "one per resource");
    let update = Arc::new(update);
    let (w0, w1) =
        (Runner::new(Arc::clone(&update), &shared, 0), Runner::new(Arc::new(delete), &shared, 1));
    w0.cache.as_ref().expect("a cache").wrote(3, 42, false);
    assert_eq!(w1.cache.as_ref().expect("the same cache").revision_of(3), Some(42));
    let w2 = Runner::new(update, &shared, 2);
    assert!(Arc::ptr_eq(w0.cache.as_ref().unwrap(), w2.cache.as_ref().unwrap()));
}

/// A lifecycle's request is reported by the client's place in its current life: the
/// create, each update, the delete, then the next life's create; its objects' names
/// are the run's and the worker's, in no cache's slots.
#[test]
fn a_life_is_reported_as_its_create_updates_and_delete() {
    let mut slots = Vec::new();
    let short = LifecycleOp { updates: 2, ..LifecycleOp::default() };
    let life = Workload::lives(&short, 7, &mut slots, 0);
    let runner = Runner::new(Arc::new(life), &Shared::default(), 1);
    assert_eq!(runner.name_prefix, "object-0000000000000007-0000000000000001-");
    let reported = |state: Option<&ClientState>| {
        let slot = runner.request(state).slot;
        (runner.kind(state), slots[slot].resource.as_str(), slots[slot].verb)
    };
    assert_eq!(reported(None), (OpKind::K8sCreate, "pods", Verb::Create));
    let places = [
        (OpKind::K8sCreate, Verb::Create),
        (OpKind::K8sUpdate, Verb::Update),
        (OpKind::K8sUpdate, Verb::Update),
        (OpKind::K8sDelete, Verb::Delete),
    ];
    for (step, (kind, verb)) in places.into_iter().enumerate() {
        let state = ClientState {
            lives: vec![Life { step: step as u64, ..Life::default() }],
            ..ClientState::default()
        };
        assert_eq!(reported(Some(&state)), (kind, "pods", verb), "step {step}");
    }

    // Its resource's cache: one of its own that holds no object, or another
    // operation's, whose slots its writes leave alone.
    let life = Workload::lives(&LifecycleOp::default(), 7, &mut Vec::new(), 0);
    let alone = Shared::new([&life]);
    assert_eq!(alone.caches.values().map(|c| c.revision_of(0)).collect::<Vec<_>>(), [None]);
    let update = plan(10, 10);
    let beside = Shared::new([&update, &life]);
    assert_eq!(beside.caches.len(), 1, "one cache of pods");
    let runner = Runner::new(Arc::new(life), &beside, 0);
    let cache = runner.cache.as_ref().expect("the pods' cache");
    assert!(Arc::ptr_eq(cache, &beside.caches[&update.layout]));
    runner.written(3, 42, false);
    assert_eq!(cache.revision_of(3), None, "object 3 of the cache is not the life's");
}

/// With one writer per object each client's objects are its own; with `w` writers per
/// object each object is written by `w` clients.
#[test]
fn writer_groups_share_objects_as_asked() {
    let writers_of = |objects: u64, clients: u32, groups: u64| {
        let r = runner(objects, groups);
        let mut writers = vec![std::collections::BTreeSet::new(); objects as usize];
        for id in 0..clients {
            let mut state = ClientState::default();
            for _ in 0..3 * objects {
                writers[r.owned(id, &mut state) as usize].insert(id);
            }
        }
        writers.iter().map(std::collections::BTreeSet::len).collect::<Vec<_>>()
    };
    assert!(writers_of(10, 10, 10).iter().all(|&n| n == 1));
    assert!(writers_of(100, 10, 10).iter().all(|&n| n == 1));
    assert!(writers_of(10, 10, 5).iter().all(|&n| n == 2));
    assert!(writers_of(7, 12, 3).iter().all(|&n| n == 4));
}
