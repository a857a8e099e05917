package main

// The watch cache's consistency checker (1.34 on), as kube-apiserver runs it for every
// cached resource every 5 to 7.5 minutes: k8s.io/apiserver's own Checker over a real
// Cacher built as the apiserver's storage decorator builds it (StorageWithCacher in
// pkg/registry/generic/registry/storage_factory.go) and the etcd3 store beneath it.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/cacher/consistency"
)

// checkerSeeded: objects written beside the earlier steps' (0, 2, 3 and 4) so that the
// checker's list from etcd, in pages of 10,000 (the package's checkerListPageSize, which
// it keeps to itself), takes a page and a continue page.
const checkerSeeded = 10_000

// checkerList runs the step checker-setup (objects 5 to 10,004 written to etcd in
// transactions of 100 puts, a Cacher over store filled and watching, an object created
// and awaited in the cache so that its watch is under way), then checker-list: the
// checker's CalculateDigests, whose digests must agree. It returns what stops the Cacher,
// for after the last step (its watch's cancel would land in checker-list).
func checkerList(ctx context.Context, client *kubernetes.Client, store storage.Interface, codec runtime.Codec,
	newList func() runtime.Object, step func(string) error) (func(), error) {
	if err := step("checker-setup"); err != nil {
		return nil, err
	}
	first := 5
	for o := first; o < first+checkerSeeded; o += 100 {
		var puts []clientv3.Op
		for p := o; p < o+100 && p < first+checkerSeeded; p++ {
			value, err := runtime.Encode(codec, pod(p))
			if err != nil {
				return nil, err
			}
			puts = append(puts, clientv3.OpPut("/registry"+key(p), string(value)))
		}
		if _, err := client.KV.Txn(ctx).Then(puts...).Commit(); err != nil {
			return nil, fmt.Errorf("the checker's objects: %w", err)
		}
	}

	gr := schema.GroupResource{Resource: "pods"}
	c, err := cacher.NewCacherFromConfig(cacher.Config{
		Storage:             store,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       gr,
		EventsHistoryWindow: cacher.DefaultEventFreshDuration,
		ResourcePrefix:      resourcePrefix,
		// The registry's cacheKeyFunc: resourcePrefix/namespace/name.
		KeyFunc:      func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(resourcePrefix+"/", obj) },
		NewFunc:      func() runtime.Object { return &example.Pod{} },
		NewListFunc:  newList,
		GetAttrsFunc: storage.DefaultNamespaceScopedAttr,
		Codec:        codec,
	})
	if err != nil {
		return nil, fmt.Errorf("the cacher: %w", err)
	}
	if err := c.Wait(ctx); err != nil || !c.Ready() {
		c.Stop()
		return nil, fmt.Errorf("the cacher is not ready: %v", err)
	}
	// An object created now reaches the cache only through its watch.
	last := first + checkerSeeded
	created := &example.Pod{}
	if err := store.Create(ctx, key(last), pod(last), created, 0); err != nil {
		c.Stop()
		return nil, err
	}
	if err := awaitCache(ctx, c, created.ResourceVersion); err != nil {
		c.Stop()
		return nil, err
	}

	if err := step("checker-list"); err != nil {
		c.Stop()
		return nil, err
	}
	digests, err := consistency.NewChecker(resourcePrefix, gr, newList, c, store).CalculateDigests(ctx)
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("the checker: %w", err)
	}
	if digests.CacheDigest != digests.EtcdDigest {
		c.Stop()
		return nil, fmt.Errorf("the checker: the cache's digest %s is not etcd's %s at %s: %+v",
			digests.CacheDigest, digests.EtcdDigest, digests.ResourceVersion, digests.DiffDetail)
	}
	// The revision the checker listed etcd at, the cache's, for the test to find in the
	// requests.
	fmt.Println("checker-list resourceVersion", digests.ResourceVersion)
	return c.Stop, nil
}

// awaitCache waits until c's list (from the cache alone: resourceVersion 0) is at rv or
// later, and holds more objects than one checker page.
func awaitCache(ctx context.Context, c *cacher.Cacher, rv string) error {
	want, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		list := &example.PodList{}
		opts := storage.ListOptions{Recursive: true, Predicate: storage.Everything, ResourceVersion: "0",
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
		if err := c.GetList(ctx, resourcePrefix, opts, list); err != nil {
			return fmt.Errorf("the cache's list: %w", err)
		}
		at, err := strconv.ParseUint(list.ResourceVersion, 10, 64)
		if err != nil {
			return err
		}
		if at >= want {
			if n := meta.LenList(list); n <= 10_000 {
				return fmt.Errorf("the cache holds %d objects, not more than one checker page", n)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cache is at %d, not %d, after 20s", at, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
