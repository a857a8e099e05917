//! etcdlat's apiserver requests against the real thing: k8s.io/apiserver's own etcd3 storage
//! (the Go program in `tests/apiserver`, built against the k8s.io/apiserver release its
//! go.mod names) and etcdlat's `k8s-*` operations each run create, create with a TTL, get,
//! update (from etcd and from a stale cached object), delete, a paginated list, count, the
//! watch cache's list and watch, a consistent read, and the consistency checker's list of
//! etcd at its cache's revision (1.34 on), through a wiretap in front of one
//! etcd that records every message each sends. Each request is reduced to its shape (method,
//! the kind of key and range end, every option set, compares, the operations of a
//! transaction, revisions as 0 or pinned), and the shapes are compared operation by
//! operation, on every etcd version: 1.37's lists go through RangeStream on etcd 3.7, and on
//! an older etcd the first is a refused RangeStream and the others Range, for etcdlat's
//! model of 1.37 as for the apiserver. A release that changes a shape fails here.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use etcd_client::proto::{
    PbCompare, PbCompareTarget, PbDeleteRequest, PbLeaseGrantRequest, PbPutRequest, PbRangeRequest,
    PbTargetUnion, PbTxnOpRequest, PbTxnRequest, PbWatchRequest, PbWatchRequestUnion,
};
use etcd_client::{DeleteOptions, GetOptions, Txn, TxnOp};
use etcdlat_core::scenario::Kubernetes;
use etcdlat_core::workload::apiserver::CHECK_PAGE;
use etcdlat_core::workload::{ObjectOp, Operation};
use etcdlat_core::{OpKind, Report};
use etcdlat_driver::Driver;
use etcdlat_testkit::{Etcd, Tapped, Wiretap, etcd_version, skip};
use prost::Message;

use crate::scenario;

/// Where both keep pods, as the apiserver does with its default storage prefix.
const PREFIX: &str = "/registry/pods/";

/// What the Go program reads before each step: the recording splits there.
const STEP: &str = "/etcdlat-apishape/";

/// The Go program, built from `tests/apiserver` with Go's own caches (the build of
/// `.ci/deps --tests` fills them), offline: nothing is fetched here.
fn apishape() -> PathBuf {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/apiserver");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("apishape");
    let go = ["go", "/usr/local/go/bin/go"]
        .into_iter()
        .find(|go| Command::new(go).arg("version").output().is_ok_and(|o| o.status.success()))
        .unwrap_or_else(|| {
            panic!("no Go toolchain to build {}: run .ci/deps --tests", source.display())
        });
    let built = Command::new(go)
        .args(["build", "-mod=readonly", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(&source)
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "0")
        .output()
        .expect("running go build");
    assert!(
        built.status.success(),
        "building {} failed; .ci/deps --tests downloads its modules and builds it once:\n{}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

/// A recorded message's shape: its method and what it asks for, keys named by kind, values
/// and lease ids by whether they are set, revisions as `rev` (pinned) when set. Every field
/// of each message is named (its fields are destructured whole), so one a release starts
/// setting shows up.
fn shape(tapped: &Tapped) -> String {
    let method = tapped.method.trim_start_matches("/etcdserverpb.");
    let m = &tapped.message;
    match method {
        "KV/Range" | "KV/RangeStream" => {
            format!("{method} {}", range(&PbRangeRequest::decode(m.clone()).expect("a Range")))
        }
        "KV/Txn" => format!("KV/Txn {}", txn(&PbTxnRequest::decode(m.clone()).expect("a Txn"))),
        "KV/Put" => format!("KV/Put {}", put(&PbPutRequest::decode(m.clone()).expect("a Put"))),
        "KV/DeleteRange" => {
            format!(
                "KV/DeleteRange {}",
                delete(&PbDeleteRequest::decode(m.clone()).expect("a Delete"))
            )
        }
        "Lease/LeaseGrant" => {
            let PbLeaseGrantRequest { ttl, id } =
                PbLeaseGrantRequest::decode(m.clone()).expect("a LeaseGrant");
            format!("Lease/LeaseGrant ttl={ttl}{}", flag(id != 0, " id"))
        }
        "Watch/Watch" => watch(&PbWatchRequest::decode(m.clone()).expect("a WatchRequest")),
        other => other.to_owned(),
    }
}

fn flag(set: bool, name: &str) -> &str {
    if set { name } else { "" }
}

/// A key by kind: the resource's prefix, the single key of its name (the apiserver's
/// consistent-read probe), an object, a continue key (an object's + `\0`), else as it is.
fn key(k: &[u8]) -> String {
    let text = String::from_utf8_lossy(k);
    match text.strip_prefix(PREFIX) {
        Some("") => "prefix".to_owned(),
        Some(rest) if rest.ends_with('\0') => "object+\\0".to_owned(),
        Some(_) => "object".to_owned(),
        None => text.into_owned(),
    }
}

/// A range end by kind: none, the end of the resource's prefix, the prefix end of `k`.
fn end(k: &[u8], range_end: &[u8]) -> String {
    let prefix_end = |p: &[u8]| etcdlat_core::workload::prefix_end(p);
    match range_end {
        [] => String::new(),
        e if e == prefix_end(PREFIX.as_bytes()) => " end=prefix-end".to_owned(),
        e if e == prefix_end(k) => " end=prefix-end(key)".to_owned(),
        [0] => " end=\\0".to_owned(),
        e => format!(" end={}", String::from_utf8_lossy(e)),
    }
}

fn rev(name: &str, r: i64) -> String {
    if r == 0 { String::new() } else { format!(" {name}=rev") }
}

fn range(r: &PbRangeRequest) -> String {
    let PbRangeRequest {
        key: k,
        range_end,
        limit,
        revision,
        sort_order,
        sort_target,
        serializable,
        keys_only,
        count_only,
        min_mod_revision,
        max_mod_revision,
        min_create_revision,
        max_create_revision,
    } = r;
    let mut s = format!("key={}{}", key(k), end(k, range_end));
    if *limit != 0 {
        s += &format!(" limit={limit}");
    }
    s += &rev("revision", *revision);
    if *sort_order != 0 || *sort_target != 0 {
        s += &format!(" sort={sort_target}/{sort_order}");
    }
    s += flag(*serializable, " serializable");
    s += flag(*keys_only, " keys_only");
    s += flag(*count_only, " count_only");
    for (name, r) in [
        ("min_mod", min_mod_revision),
        ("max_mod", max_mod_revision),
        ("min_create", min_create_revision),
        ("max_create", max_create_revision),
    ] {
        s += &rev(name, *r);
    }
    s
}

fn put(p: &PbPutRequest) -> String {
    let PbPutRequest { key: k, value, lease, prev_kv, ignore_value, ignore_lease } = p;
    format!(
        "key={}{}{}{}{}{}",
        key(k),
        flag(!value.is_empty(), " value"),
        flag(*lease != 0, " lease"),
        flag(*prev_kv, " prev_kv"),
        flag(*ignore_value, " ignore_value"),
        flag(*ignore_lease, " ignore_lease")
    )
}

fn delete(d: &PbDeleteRequest) -> String {
    let PbDeleteRequest { key: k, range_end, prev_kv } = d;
    format!("key={}{}{}", key(k), end(k, range_end), flag(*prev_kv, " prev_kv"))
}

fn compare(c: &PbCompare) -> String {
    let PbCompare { result, target, key: k, range_end, target_union } = c;
    let result = ["==", ">", "<", "!="].get(*result as usize).copied().unwrap_or("?");
    let target = PbCompareTarget::try_from(*target).map_or("?".to_owned(), |t| format!("{t:?}"));
    let value = match target_union {
        Some(PbTargetUnion::ModRevision(r) | PbTargetUnion::CreateRevision(r)) => {
            if *r == 0 {
                "0".to_owned()
            } else {
                "rev".to_owned()
            }
        }
        Some(PbTargetUnion::Version(v)) => v.to_string(),
        Some(PbTargetUnion::Value(_)) => "value".to_owned(),
        Some(PbTargetUnion::Lease(l)) => l.to_string(),
        None => "none".to_owned(),
    };
    format!("{target}({}{}) {result} {value}", key(k), end(k, range_end))
}

fn txn(t: &PbTxnRequest) -> String {
    let PbTxnRequest { compare: compares, success, failure } = t;
    let ops = |ops: &[etcd_client::proto::PbTxnRequestOp]| {
        ops.iter()
            .map(|op| match &op.request {
                Some(PbTxnOpRequest::RequestRange(r)) => format!("Range {}", range(r)),
                Some(PbTxnOpRequest::RequestPut(p)) => format!("Put {}", put(p)),
                Some(PbTxnOpRequest::RequestDeleteRange(d)) => format!("DeleteRange {}", delete(d)),
                Some(PbTxnOpRequest::RequestTxn(t)) => format!("Txn {}", txn(t)),
                None => "none".to_owned(),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let compares = compares.iter().map(compare).collect::<Vec<_>>().join(" && ");
    format!("if {compares} then [{}] else [{}]", ops(success), ops(failure))
}

fn watch(w: &PbWatchRequest) -> String {
    match &w.request_union {
        Some(PbWatchRequestUnion::CreateRequest(c)) => {
            // Its type is not exported to destructure: its fields are taken one by one, and
            // what is left must be nothing.
            let mut rest = c.clone();
            let k = std::mem::take(&mut rest.key);
            let range_end = std::mem::take(&mut rest.range_end);
            let start_revision = std::mem::take(&mut rest.start_revision);
            let progress_notify = std::mem::take(&mut rest.progress_notify);
            let filters = std::mem::take(&mut rest.filters);
            let prev_kv = std::mem::take(&mut rest.prev_kv);
            let watch_id = std::mem::take(&mut rest.watch_id);
            let fragment = std::mem::take(&mut rest.fragment);
            assert_eq!(rest, Default::default(), "a field of WatchCreateRequest not named here");
            format!(
                "Watch/create key={}{}{}{}{}{}{}{}",
                key(&k),
                end(&k, &range_end),
                rev("start", start_revision),
                flag(progress_notify, " progress_notify"),
                if filters.is_empty() { String::new() } else { format!(" filters={filters:?}") },
                flag(prev_kv, " prev_kv"),
                if watch_id == 0 { String::new() } else { format!(" watch_id={watch_id}") },
                flag(fragment, " fragment")
            )
        }
        Some(PbWatchRequestUnion::CancelRequest(_)) => "Watch/cancel".to_owned(),
        Some(PbWatchRequestUnion::ProgressRequest(_)) => "Watch/progress".to_owned(),
        None => "Watch/none".to_owned(),
    }
}

/// What reached etcd's KV, Lease and Watch services (not Status or MemberList, which each
/// client sends as it connects): each message's shape, in order.
fn shapes(log: &[Tapped]) -> Vec<String> {
    log.iter()
        .filter(|t| ["KV/", "Lease/", "Watch/"].iter().any(|s| t.method.contains(&format!(".{s}"))))
        .map(shape)
        .collect()
}

/// The Go program's recording, split at its steps: (step, its requests as sent).
fn split_steps(log: &[Tapped]) -> Vec<(String, Vec<Tapped>)> {
    let mut steps = vec![("new".to_owned(), Vec::new())];
    for t in log {
        if t.method.ends_with("KV/Range") {
            let r = PbRangeRequest::decode(t.message.clone()).expect("a Range");
            if let Some(step) = String::from_utf8_lossy(&r.key).strip_prefix(STEP) {
                steps.push((step.to_owned(), Vec::new()));
                continue;
            }
        }
        steps.last_mut().expect("one step at least").1.push(t.clone());
    }
    steps
}

/// The Go program's recording, split at its steps: (step, shapes of its requests).
fn steps(log: &[Tapped]) -> Vec<(String, Vec<String>)> {
    split_steps(log).into_iter().map(|(step, sent)| (step, shapes(&sent))).collect()
}

/// The shapes of the apiserver's step `name`.
fn step<'a>(steps: &'a [(String, Vec<String>)], name: &str) -> &'a [String] {
    &steps.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no step {name}: {steps:?}")).1
}

/// The distinct shapes among `shapes` of the requests sent by `method` (`KV/Txn`).
fn distinct(shapes: &[String], method: &str) -> BTreeSet<String> {
    shapes.iter().filter(|s| s.starts_with(method)).cloned().collect()
}

/// etcdlat's own check of its watch caches as a run ends (a Range for the current
/// revision, then the keys under the prefix at the cache's revision): no apiserver request.
fn without_end_check(mut shapes: Vec<String>) -> Vec<String> {
    let pages = shapes.iter().rev().take_while(|s| s.ends_with(" revision=rev keys_only")).count();
    let at = shapes.len() - pages;
    if pages > 0 && at > 0 && shapes[at - 1] == "KV/Range key=prefix end=prefix-end limit=1" {
        shapes.truncate(at - 1);
    }
    shapes
}

/// Runs `op` with `params` for `total` requests of `clients` clients and returns its report
/// and the shapes of what it sent.
async fn etcdlat(
    driver: &Driver,
    tap: &Wiretap,
    clients: u32,
    total: u64,
    op: &str,
    params: &str,
) -> (Report, Vec<String>) {
    let toml = format!("[load]\nclients = {clients}\ntotal = {total}\n[op.{op}]\n{params}\n");
    let (report, log) = tapped_run(driver, tap, &toml).await;
    (report, without_end_check(shapes(&log)))
}

/// Runs the scenario `toml` and returns its report and what it sent through `tap`, as sent.
async fn tapped_run(driver: &Driver, tap: &Wiretap, toml: &str) -> (Report, Vec<Tapped>) {
    let _ = tap.take();
    let report = driver.run(&scenario(toml)).await.expect("a run");
    (report, tap.take())
}

/// What the Go program sent in its step `name`, as sent.
fn step_log(log: &[Tapped], name: &str) -> Vec<Tapped> {
    let mut steps = split_steps(log).into_iter();
    steps.find(|(step, _)| step == name).unwrap_or_else(|| panic!("no step {name}")).1
}

/// The pages of `limit` keys among `log` that read values (not etcdlat's end check, a
/// probe of limit 1 and keys-only pages), as sent: each Range or RangeStream with a range
/// end.
fn list_pages(log: &[Tapped], limit: u64) -> Vec<PbRangeRequest> {
    log.iter()
        .filter(|t| t.method.ends_with("KV/Range") || t.method.ends_with("KV/RangeStream"))
        .map(|t| PbRangeRequest::decode(t.message.clone()).expect("a Range"))
        .filter(|r| !r.range_end.is_empty() && !r.keys_only && !r.count_only)
        .filter(|r| u64::try_from(r.limit) == Ok(limit))
        .collect()
}

/// Checks a checker's two pages of the pods (`pages`, the last two of its list) against
/// what etcd holds: the first from the prefix at a pinned revision, the continue page from
/// the key after the first page's last at that same revision, as a keys-only list of etcd
/// at that revision finds it. Returns the revision.
async fn check_checker_pages(client: &mut etcd_client::Client, pages: &[PbRangeRequest]) -> i64 {
    let [first, next] = pages else { panic!("not two pages: {pages:?}") };
    assert_eq!(first.key, PREFIX.as_bytes(), "the first page from the prefix");
    assert!(first.revision > 0, "the first page pinned to the cache's revision");
    assert_eq!(next.revision, first.revision, "the continue page at the first's revision");
    let at = GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_limit(first.limit)
        .with_revision(first.revision);
    let read = client.get(PREFIX, Some(at)).await.expect("the first page's keys");
    let last = read.kvs().last().expect("a first page").key();
    assert_eq!(next.key, [last, b"\0"].concat(), "the continue page from after the first's last");
    first.revision
}

/// Writes `op`'s objects to etcd directly (not through the wiretap), 100 to a transaction.
async fn seed(client: &mut etcd_client::Client, op: &ObjectOp) {
    let objects: Vec<u64> = (0..op.objects).collect();
    for some in objects.chunks(100) {
        let puts: Vec<_> = some.iter().map(|&o| TxnOp::put(op.key(o), "{}", None)).collect();
        client.txn(Txn::new().and_then(puts)).await.expect("seeding the checker's objects");
    }
}

/// etcdlat's model's checker list of pods (the current release's, as `[kubernetes]` runs
/// it) over `objects` objects, and a scenario of one such list.
fn checker_op(objects: u64) -> (ObjectOp, String) {
    let flows = Kubernetes::with_nodes(100).flows();
    let op = flows
        .iter()
        .find_map(|f| match &f.op {
            Operation::K8sList(o) if o.at_cache_revision && o.resource == "pods" => Some(o),
            _ => None,
        })
        .expect("the current release's model has a checker list of pods");
    let op = ObjectOp { objects, ..op.clone() };
    // Written as a whole document, so that a table inside it (the pods' size ranges, an
    // array of tables) lands under `op.k8s-list`, not at the top.
    let mut ops = toml::Table::new();
    ops.insert("k8s-list".into(), toml::Value::try_from(&op).expect("an operation's parameters"));
    let mut doc = toml::Table::new();
    doc.insert("op".into(), ops.into());
    let params = toml::to_string(&doc).expect("an operation's parameters");
    (op, format!("[load]\nclients = 1\ntotal = 1\n{params}"))
}

#[tokio::test]
async fn etcdlat_asks_etcd_what_the_apiservers_own_storage_asks() {
    if skip() {
        return;
    }
    let program = apishape();
    let etcd = Etcd::start().await;
    let tap = Wiretap::start(&etcd.endpoint());

    // The apiserver's storage, step by step.
    let ran = tokio::process::Command::new(&program)
        .arg(tap.endpoint())
        .output()
        .await
        .expect("running the apiserver's storage program");
    let said =
        String::from_utf8_lossy(&ran.stdout).into_owned() + &String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{} failed:\n{said}", program.display());
    let go_log = tap.take();
    let go = steps(&go_log);
    let mut client = etcd.client().await;
    client.delete(PREFIX, Some(DeleteOptions::new().with_prefix())).await.expect("emptying");

    // etcdlat's, the same operations on the same names, through the same wiretap.
    let driver =
        Driver::builder().endpoints([tap.endpoint()]).conns(1).connect().await.expect("a driver");
    let pods = "objects = 3";
    let (_, create) = etcdlat(&driver, &tap, 1, 3, "k8s-create", pods).await;
    let (_, create_ttl) = etcdlat(
        &driver,
        &tap,
        1,
        1,
        "k8s-create",
        "objects = 1\nname-prefix = \"ttl-\"\nttl = \"1h\"",
    )
    .await;
    let (_, get) = etcdlat(&driver, &tap, 1, 3, "k8s-get", pods).await;
    // The first list of each, as the apiserver's program lists before its cache does: on
    // an etcd before 3.7 both are refused RangeStream there, and list through Range after.
    let (_, list) = etcdlat(&driver, &tap, 1, 1, "k8s-list", "objects = 3\npage-size = 2").await;
    let (_, update) = etcdlat(&driver, &tap, 1, 3, "k8s-update", pods).await;
    let (raced, race) =
        etcdlat(&driver, &tap, 4, 200, "k8s-update", "objects = 1\nwriters-per-object = 4").await;
    let (_, delete) = etcdlat(&driver, &tap, 1, 1, "k8s-delete", pods).await;
    let (_, count) = etcdlat(&driver, &tap, 1, 1, "k8s-count", pods).await;
    let (_, consistent) = etcdlat(&driver, &tap, 1, 1, "k8s-consistent-list", pods).await;
    // The consistency checker's list of pods, over more objects than one of its pages.
    let (checked, checker_run) = checker_op(CHECK_PAGE + 1);
    seed(&mut client, &checked).await;
    let (_, checker_log) = tapped_run(&driver, &tap, &checker_run).await;
    let checker = without_end_check(shapes(&checker_log));

    // k8s.io/apiserver 1.37 reads lists through RangeStream where etcd has it (3.7 on).
    let streams =
        !["3.4.", "3.5.", "3.6."].iter().any(|v| etcd_version().starts_with(&format!("etcd {v}")));

    // Making the store sends nothing to KV, Lease or Watch (only Status, which checks the
    // server for progress requests).
    assert!(step(&go, "new").is_empty(), "{go:?}");

    // Creates: If mod_revision(key) == 0 Then Put, nothing on failure; with a TTL, a lease
    // granted for the TTL and the reuse time (5% of it, at most 60 s) first.
    let created = "KV/Txn if Mod(object) == 0 then [Put key=object value] else []";
    assert_eq!(step(&go, "create"), [created; 3]);
    assert_eq!(create, [created; 3]);
    let with_lease = "KV/Txn if Mod(object) == 0 then [Put key=object value lease] else []";
    assert_eq!(step(&go, "create-ttl"), ["Lease/LeaseGrant ttl=3660", with_lease]);
    assert_eq!(create_ttl, ["Lease/LeaseGrant ttl=3660", with_lease]);

    // A get is a Range of the key with limit 1 (kubernetes.Client.Get's), linearizable.
    let got = "KV/Range key=object limit=1";
    assert_eq!(step(&go, "get"), [got]);
    assert_eq!(get, [got; 3]);

    // The watch cache, which updates, deletes and consistent reads go through: its list in
    // pages of 10,000 (RangeStream where etcd has it), then a watch of the prefix from the
    // revision after the list's, with the previous values and progress notifications.
    let cache_list = "KV/Range key=prefix end=prefix-end limit=10000";
    let streamed = cache_list.replace("KV/Range", "KV/RangeStream");
    assert_eq!(step(&go, "cache-list"), [if streams { &streamed } else { cache_list }]);
    let watched = "Watch/create key=prefix end=prefix-end start=rev progress_notify prev_kv";
    // (Beside the watch, the create whose event shows that the watch is under way.)
    let watch_step = BTreeSet::from([created.to_owned(), watched.to_owned()]);
    assert_eq!(distinct(step(&go, "watch"), ""), watch_step);
    let cache = [if streams { &streamed } else { cache_list }, watched];

    // An update: If mod_revision(key) == r Then Put Else Get; without a cached object it
    // reads etcd first (the same Get); a stale cached object's compare fails and the retry
    // compares what the Else read, with nothing in between.
    let updated =
        "KV/Txn if Mod(object) == rev then [Put key=object value] else [Range key=object]";
    assert_eq!(step(&go, "update"), [got, updated]);
    assert_eq!(step(&go, "update-conflict"), [updated; 2]);
    assert_eq!(update, [cache[0], cache[1], updated, updated, updated]);
    let raced_update = raced.op(OpKind::K8sUpdate);
    assert!(raced_update.conflicts > 0, "4 writers of one object never conflicted");
    assert_eq!(race[..2], cache);
    assert_eq!(distinct(&race[2..], ""), BTreeSet::from([updated.to_owned()]), "retries too");

    // A delete of a cached object: If mod_revision(key) == r Then DeleteRange Else Get.
    let deleted =
        "KV/Txn if Mod(object) == rev then [DeleteRange key=object] else [Range key=object]";
    assert_eq!(step(&go, "delete"), [deleted]);
    assert_eq!(delete, [cache[0], cache[1], deleted]);

    // A paginated list: the first page at the current revision, the next from the last
    // key + \0 pinned to the first's revision, each counting the rest of the range.
    // k8s.io/apiserver 1.37 sends them as RangeStream where etcd has it (3.7 and later),
    // else falls back to Range for ten minutes after one refused RangeStream; so does
    // etcdlat's model of 1.37 (a client's list that bypasses the cache, `k8s-list`): the
    // same requests, the refusal among them.
    let pages = [
        "KV/Range key=prefix end=prefix-end limit=2",
        "KV/Range key=object+\\0 end=prefix-end limit=2 revision=rev",
    ];
    let go_list = step(&go, "list");
    assert_eq!(list, go_list, "etcdlat's list is the apiserver's");
    if streams {
        assert!(go_list.iter().all(|s| s.starts_with("KV/RangeStream ")), "{go_list:?}");
        let as_range: Vec<_> =
            go_list.iter().map(|s| s.replace("KV/RangeStream", "KV/Range")).collect();
        assert_eq!(as_range, pages);
    } else {
        assert_eq!(go_list[0], pages[0].replace("KV/Range", "KV/RangeStream"), "refused first");
        assert_eq!(go_list[1..], pages);
    }

    // A count: a count-only Range of the resource's prefix.
    let counted = "KV/Range key=prefix end=prefix-end count_only";
    assert_eq!(step(&go, "count"), [counted]);
    assert_eq!(count, [counted]);

    // A consistent read from the cache: the current revision from a Get of the resource's
    // own key (one key, which etcd finds without counting the prefix's), then progress
    // requests on the cache's watch until it has caught up (none when it already has).
    let probe = "KV/Range key=/registry/pods limit=1";
    assert_eq!(step(&go, "consistent-read"), [probe, "Watch/progress"]);
    let (filled, read) = consistent.split_at(2);
    assert_eq!(filled, cache);
    assert_eq!(read[0], probe, "{consistent:?}");
    assert!(read[1..].iter().all(|s| s == "Watch/progress"), "{consistent:?}");

    // The cache's consistency checker (1.34 on, every 5 to 7.5 minutes per cached resource,
    // k8s.io/apiserver's own Checker over a real Cacher): its list of the cache sends
    // nothing; its list of etcd is at the cache's revision in pages of 10,000, the
    // continue page from the key after the first page's last at the same revision; Range
    // pages, or RangeStream where etcd has it. etcdlat's model's, after its cache's fill (the
    // same pages, the first at etcd's current revision) and watch, is the same.
    let checker_pages = [
        format!("KV/Range key=prefix end=prefix-end limit={CHECK_PAGE} revision=rev"),
        format!("KV/Range key=object+\\0 end=prefix-end limit={CHECK_PAGE} revision=rev"),
    ]
    .map(|s| if streams { s.replace("KV/Range", "KV/RangeStream") } else { s });
    assert_eq!(step(&go, "checker-list"), checker_pages);
    let (filled, listed) = checker.split_at(checker.len().saturating_sub(2));
    assert_eq!(listed, checker_pages, "etcdlat's checker list is the apiserver's: {checker:?}");
    let fill = [cache[0].to_owned(), checker_pages[1].clone(), watched.to_owned()];
    assert_eq!(filled, fill, "{checker:?}");
    // The pages' keys and revisions as sent: the apiserver's at the revision its checker
    // names as its cache's, etcdlat's at its cache's fill's.
    let go_revision = check_checker_pages(
        &mut client,
        &list_pages(&step_log(&go_log, "checker-list"), CHECK_PAGE),
    )
    .await;
    let at = said.lines().find_map(|l| l.strip_prefix("checker-list resourceVersion "));
    assert_eq!(at, Some(go_revision.to_string().as_str()), "{said}");
    let ours = list_pages(&checker_log, CHECK_PAGE);
    let revision = check_checker_pages(&mut client, &ours[ours.len() - 2..]).await;
    assert_eq!(revision, ours[1].revision, "etcdlat's checker at its cache's revision");
}
