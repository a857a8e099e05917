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
        sizes: SizeDistribution::Fixed(0),
        groups,
        single_writer: groups > 1,
        page_size: 0,
        lease: None,
        slot: 0,
        renews: false,
        turns: None,
        watch_slot: 1,
        life: None,
        at_cache_revision: false,
    }
}

/// A scenario of `apiservers` apiservers (a `[kubernetes]` model), or of one (none).
fn scenario(apiservers: u64) -> Scenario {
    let toml = match apiservers {
        1 => "[load]\ntotal = 1\n[op.put]\n".to_owned(),
        n => format!("[load]\nduration = \"1s\"\n[kubernetes]\nnodes = 10\napiservers = {n}\n"),
    };
    Scenario::from_toml_str(&toml).expect("a scenario")
}

/// Each object's value is a slice of the plan's one buffer, of the size its number and names
/// draw: the same in every write and on every worker (the preload's, the history's and the
/// run's write the same sizes), spread over the distribution; new names draw their own.
#[test]
fn an_objects_size_is_drawn_once_for_every_write() {
    let sizes: SizeDistribution = toml::from_str::<ObjectOp>(
        "object-size = [{ min = 100, max = 200, weight = 9 }, { min = 1000, max = 2000 }]",
    )
    .expect("a distribution")
    .object_size;
    let with_sizes = |action| Workload {
        action,
        value: Bytes::from(vec![7; 2000]),
        sizes: sizes.clone(),
        ..plan(1000, 1)
    };
    let shared = Shared::new([], &scenario(1), &Arc::default());
    let (one, other) = (
        Runner::new(Arc::new(with_sizes(Action::Verb(Verb::Update))), &shared, 1),
        Runner::new(Arc::new(with_sizes(Action::Verb(Verb::Create))), &shared, 2),
    );
    let lengths: Vec<usize> = (0..1000).map(|o| one.value(o).len()).collect();
    assert!(lengths.iter().all(|&n| (100..=200).contains(&n) || (1000..=2000).contains(&n)));
    let large = lengths.iter().filter(|&&n| n >= 1000).count();
    assert!((60..=140).contains(&large), "a tenth of 1000 drawn large: {large}");
    assert!((0..1000).all(|o| other.value(o).len() == lengths[o as usize]), "one size per object");
    assert!((0..1000).all(|o| one.value(o).len() == lengths[o as usize]), "in every write");
    // Events and lives are named by their worker too: another worker's differ.
    let events = |worker| Runner::new(Arc::new(with_sizes(Action::Event)), &shared, worker);
    let (a, b) = (events(1), events(2));
    assert!((0..100).any(|o| a.value(o).len() != b.value(o).len()));
}

fn runner(objects: u64, groups: u64) -> Runner {
    Runner::new(Arc::new(plan(objects, groups)), &Shared::new([], &scenario(1), &Arc::default()), 0)
}

/// Each apiserver has one cache per resource, which every worker's requests of the
/// clients it serves share (client `c` is served by apiserver `c % apiservers`), and
/// etcd is asked for one watch per cache; a write answered does not write through: the
/// cache learns of it from its watch only.
#[test]
fn each_apiserver_has_one_cache_per_resource_fed_by_its_watch_alone() {
    let update = plan(10, 10);
    let delete = Workload { action: Action::Verb(Verb::Delete), ..plan(10, 10) };
    let other = Workload {
        layout: Layout { prefix: "/registry/minions/".into(), ..update.layout.clone() },
        ..plan(10, 10)
    };
    let one = Shared::new([&update, &delete, &other], &scenario(1), &Arc::default());
    assert_eq!(one.caches.len(), 2, "one per resource");
    let shared = Shared::new([&update, &delete, &other], &scenario(3), &Arc::default());
    assert_eq!(shared.caches.len(), 6, "one per resource per apiserver");
    let update = Arc::new(update);
    let (w0, w1) =
        (Runner::new(Arc::clone(&update), &shared, 0), Runner::new(Arc::new(delete), &shared, 1));
    w0.written(0, 42);
    assert_eq!(w1.cache(3).expect("the same cache").revision_of(3), None, "no write-through");
    let w2 = Runner::new(update, &shared, 2);
    assert!(Arc::ptr_eq(w0.cache(0).unwrap(), w2.cache(3).unwrap()), "apiserver 0's");
    assert!(Arc::ptr_eq(w0.cache(0).unwrap(), w1.cache(0).unwrap()), "of one resource");
    assert!(!Arc::ptr_eq(w0.cache(0).unwrap(), w2.cache(1).unwrap()), "apiserver 1's");
}

/// A lifecycle's request is reported by the client's place in its current life: the
/// create, each update, the delete, then the next life's create; its objects' names
/// are the run's and the worker's, in no cache's slots.
#[test]
fn a_life_is_reported_as_its_create_updates_and_delete() {
    let mut slots = Vec::new();
    let short = LifecycleOp { updates: 2, ..LifecycleOp::default() };
    let life = Workload::lives(&short, 7, &mut slots, 0);
    let runner = Runner::new(Arc::new(life), &Shared::new([], &scenario(1), &Arc::default()), 1);
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
    let alone = Shared::new([&life], &scenario(1), &Arc::default());
    assert_eq!(alone.caches.values().map(|c| c.revision_of(0)).collect::<Vec<_>>(), [None]);
    let update = plan(10, 10);
    let beside = Shared::new([&update, &life], &scenario(1), &Arc::default());
    assert_eq!(beside.caches.len(), 1, "one cache of pods");
    let runner = Runner::new(Arc::new(life), &beside, 0);
    let cache = runner.cache(0).expect("the pods' cache");
    assert!(Arc::ptr_eq(cache, &beside.caches[&(0, update.layout.clone())]));
    runner.written(0, 42);
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
