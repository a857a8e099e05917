// Command apishape drives k8s.io/apiserver's own etcd3 storage (the store kube-apiserver
// keeps every resource in, the lister-watcher its watch cache fills and feeds itself
// through, and the cache's consistency checker over a real Cacher) against the etcd at the endpoint it is given, one step at a time, for the
// driver's `apiserver` test (crates/driver/tests/it/apiserver.rs): the test puts a
// wiretap in front of etcd, records every request sent, and compares them with
// etcdlat's requests for the same operations.
//
// Before each step it reads the key /etcdlat-apishape/STEP, outside /registry, where the
// test splits the recording into steps. Objects are pods of k8s.io/apiserver's
// example API at /registry/pods/ns-0/object-0000000N, etcdlat's layout. It prints one
// line per step done and exits 0, or prints what failed and exits 1.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
)

// The resource prefix of pods as kube-apiserver's registry gives it to the storage
// (genericregistry.Store: "/" + the resource, no trailing slash), under its default
// storage prefix /registry.
const resourcePrefix = "/pods"

func key(o int) string { return fmt.Sprintf("%s/ns-0/object-%08d", resourcePrefix, o) }

func pod(o int) *example.Pod {
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("object-%08d", o), Namespace: "ns-0"}}
}

// touch changes a pod, as every update does.
func touch(obj runtime.Object) (runtime.Object, *uint64, error) {
	p := obj.(*example.Pod)
	p.Spec.NodeName += "x"
	return p, nil, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: apishape http://HOST:PORT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "apishape:", err)
		os.Exit(1)
	}
}

func run(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := kubernetes.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer client.Close()

	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	if err := example.AddToScheme(scheme); err != nil {
		return err
	}
	if err := examplev1.AddToScheme(scheme); err != nil {
		return err
	}
	codec := serializer.NewCodecFactory(scheme).LegacyCodec(examplev1.SchemeGroupVersion)
	versioner := storage.APIObjectVersioner{}
	newList := func() runtime.Object { return &example.PodList{} }
	store, err := etcd3.New(client, nil, codec, func() runtime.Object { return &example.Pod{} }, newList,
		"/registry", resourcePrefix, schema.GroupResource{Resource: "pods"},
		identity.NewEncryptCheckTransformer(), etcd3.NewDefaultLeaseManagerConfig(),
		etcd3.NewDefaultDecoder(codec, versioner), versioner)
	if err != nil {
		return err
	}
	defer store.Close()

	step := func(name string) error {
		_, err := client.KV.Get(ctx, "/etcdlat-apishape/"+name)
		return err
	}
	done := func(name string) { fmt.Println("done", name) }
	get := func(o int) (*example.Pod, error) {
		out := &example.Pod{}
		return out, store.Get(ctx, key(o), storage.GetOptions{}, out)
	}

	// Creates of three names, then of one with a time to live (a lease granted first).
	if err := step("create"); err != nil {
		return err
	}
	for o := 0; o < 3; o++ {
		if err := store.Create(ctx, key(o), pod(o), &example.Pod{}, 0); err != nil {
			return fmt.Errorf("create %d: %w", o, err)
		}
	}
	done("create")
	if err := step("create-ttl"); err != nil {
		return err
	}
	if err := store.Create(ctx, key(3), pod(3), &example.Pod{}, 3600); err != nil {
		return fmt.Errorf("create with a ttl: %w", err)
	}
	done("create-ttl")

	if err := step("get"); err != nil {
		return err
	}
	stale, err := get(0)
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	done("get")

	// An update with no cached object (the apiserver reads etcd first), then one from a
	// cached object that is stale by then, as a watch cache behind etcd hands it over:
	// its compare fails and it retries on what the failed transaction's Else read.
	if err := step("update"); err != nil {
		return err
	}
	if err := store.GuaranteedUpdate(ctx, key(0), &example.Pod{}, false, nil, touchFunc, nil); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	done("update")
	if err := step("update-conflict"); err != nil {
		return err
	}
	if err := store.GuaranteedUpdate(ctx, key(0), &example.Pod{}, false, nil, touchFunc, stale); err != nil {
		return fmt.Errorf("update from a stale object: %w", err)
	}
	done("update-conflict")

	// A delete of an object the cache holds as it is (read in a step of its own, which
	// the test passes over).
	if err := step("setup-delete"); err != nil {
		return err
	}
	current, err := get(1)
	if err != nil {
		return err
	}
	if err := step("delete"); err != nil {
		return err
	}
	if err := store.Delete(ctx, key(1), &example.Pod{}, nil, storage.ValidateAllObjectFunc, current, storage.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	done("delete")

	// A client's list in pages of 2 that bypasses the watch cache: the first page, then
	// the next from its continue token.
	if err := step("list"); err != nil {
		return err
	}
	everything := storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field}
	page := everything
	page.Limit = 2
	first := &example.PodList{}
	if err := store.GetList(ctx, resourcePrefix, storage.ListOptions{Recursive: true, Predicate: page}, first); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if first.Continue == "" {
		return fmt.Errorf("list: the first page of 2 of 3 objects has no continue token")
	}
	page.Continue = first.Continue
	second := &example.PodList{}
	if err := store.GetList(ctx, resourcePrefix, storage.ListOptions{Recursive: true, Predicate: page}, second); err != nil {
		return fmt.Errorf("list's second page: %w", err)
	}
	if n := len(first.Items) + len(second.Items); n != 3 {
		return fmt.Errorf("list: %d objects in its pages, not 3", n)
	}
	done("list")

	if err := step("count"); err != nil {
		return err
	}
	stats, err := store.Stats(ctx)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	if stats.ObjectCount != 3 {
		return fmt.Errorf("count: %d objects, not 3", stats.ObjectCount)
	}
	done("count")

	// The watch cache's list and watch, through the lister-watcher the cacher's
	// reflector uses, with the reflector's options (pages of 10,000, bookmarks).
	lw := cacher.NewListerWatcher(store, resourcePrefix, newList, nil)
	if err := step("cache-list"); err != nil {
		return err
	}
	listed, err := lw.List(metav1.ListOptions{ResourceVersion: "0", Limit: 10000})
	if err != nil {
		return fmt.Errorf("the cache's list: %w", err)
	}
	rv := listed.(*example.PodList).ResourceVersion
	done("cache-list")
	if err := step("watch"); err != nil {
		return err
	}
	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		return fmt.Errorf("the cache's watch: %w", err)
	}
	defer w.Stop()
	// A create, whose event says that the watch is under way.
	if err := store.Create(ctx, key(4), pod(4), &example.Pod{}, 0); err != nil {
		return err
	}
	if err := await(w, watch.Added); err != nil {
		return err
	}
	done("watch")

	// A consistent read from the cache: the current revision from etcd, then a progress
	// request on the cache's watch, answered by a bookmark.
	if err := step("consistent-read"); err != nil {
		return err
	}
	if _, err := store.GetCurrentResourceVersion(ctx); err != nil {
		return fmt.Errorf("the consistent read's revision: %w", err)
	}
	if err := store.RequestWatchProgress(context.Background()); err != nil {
		return fmt.Errorf("the progress request: %w", err)
	}
	if err := await(w, watch.Bookmark); err != nil {
		return err
	}
	done("consistent-read")

	// The watch cache's consistency checker: its list of the cache, then of etcd at the
	// cache's revision in pages of 10,000 (checker.go).
	stopCacher, err := checkerList(ctx, client, store, codec, newList, step)
	if err != nil {
		return err
	}
	defer stopCacher()
	done("checker-list")
	return step("end")
}

var touchFunc = func(obj runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
	return touch(obj)
}

// await waits for an event of type t on w.
func await(w watch.Interface, t watch.EventType) error {
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the watch ended waiting for %s", t)
			}
			if e.Type == watch.Error {
				return fmt.Errorf("the watch failed: %v", e.Object)
			}
			if e.Type == t {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no %s event in 20s", t)
		}
	}
}
