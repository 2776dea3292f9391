/*
Copyright The kubeinformers Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// shardSetter is client-go v0.38's SharedInformer.SetShardSelector, which
// every informer of the factory has on v0.37 too.
type shardSetter interface {
	SetShardSelector(selector apisharding.Selector) error
}

// TestShardSelectorOnServer: client-go v0.38's sharding API on the real
// server. Two replicas over two namespaces split 600 configmaps:
//   - replica A by WithShardSelector, with a selector of two ranges written
//     high one first (this module's own selector would sort them; the
//     server echoes what it applied, and a difference fails the list);
//   - replica B by SetShardSelector on its informers before Start, with
//     the complementary range.
//
// Both the typed and the metadata informer of each replica hold exactly
// their shard, together every object once; every LIST and WATCH, in each
// namespace, sends the selector as given; the server filtered (each
// replica receives about half); SetShardSelector after Start is refused.
// A selector on two keys is named, with the server's answer, by Ready.
func TestShardSelectorOnServer(t *testing.T) {
	c := setup(t)
	ns1, ns2 := c.ns, c.newNamespace("e2e-shardsel")
	const perNS = 300
	createShardConfigMaps(t, c.ctx, c.client, ns1, "cm", perNS, 6)
	createShardConfigMaps(t, c.ctx, c.client, ns2, "cm", perNS, 6)

	selA := apisharding.NewSelector(
		apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0xc000000000000000", End: "0x10000000000000000"},
		apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x4000000000000000"},
	)
	selB := apisharding.NewSelector(apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0x4000000000000000", End: "0xc000000000000000"})

	type replica struct {
		name    string
		sel     apisharding.Selector
		rec     *recorder
		items   *itemCounter
		factory informers.Factory
		typed   cache.SharedIndexInformer
		meta    cache.SharedIndexInformer
	}
	newReplica := func(name string, sel apisharding.Selector, opts ...informers.SharedInformerOption) *replica {
		r := &replica{name: name, sel: sel, rec: &recorder{label: name}, items: &itemCounter{}}
		cfg := r.items.wrap(r.rec.wrap(rest.CopyConfig(c.cfg)))
		f, err := informers.NewForConfig(cfg, 0, append([]informers.SharedInformerOption{informers.WithNamespaces(ns1, ns2)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		r.factory = f
		r.typed = f.Core().V1().ConfigMaps().Informer()
		gi, err := f.ForMetadata(corev1.SchemeGroupVersion.WithResource("configmaps"))
		if err != nil {
			t.Fatal(err)
		}
		r.meta = gi.Informer()
		return r
	}
	a := newReplica("replica-A", selA, informers.WithShardSelector(selA))
	b := newReplica("replica-B", selB)
	for _, inf := range []cache.SharedIndexInformer{b.typed, b.meta} {
		setter, ok := inf.(shardSetter)
		if !ok {
			t.Fatalf("%T has no SetShardSelector", inf)
		}
		if err := setter.SetShardSelector(selB); err != nil {
			t.Fatalf("SetShardSelector before Start: %v", err)
		}
	}
	start := time.Now()
	for _, r := range []*replica{a, b} {
		fctx, cancel := context.WithCancel(c.ctx)
		r.factory.Start(fctx.Done())
		t.Cleanup(func() { cancel(); r.factory.Shutdown() })
	}
	for _, r := range []*replica{a, b} {
		sctx, cancel := context.WithTimeout(c.ctx, 60*time.Second)
		err := r.factory.WaitForCacheSyncWithContext(sctx).AsError()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	}
	t.Logf("2 replicas x 2 forms x 2 namespaces synced in %v", time.Since(start).Round(time.Millisecond))

	server := map[string]bool{}
	for _, ns := range []string{ns1, ns2} {
		list, err := c.client.CoreV1().ConfigMaps(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			server[string(list.Items[i].UID)] = true
		}
	}
	for _, form := range []string{"typed", "metadata"} {
		owner := map[string]string{}
		for _, r := range []*replica{a, b} {
			inf := r.typed
			if form == "metadata" {
				inf = r.meta
			}
			for _, obj := range inf.GetStore().List() {
				m, err := meta.Accessor(obj)
				if err != nil {
					t.Fatal(err)
				}
				uid := string(m.GetUID())
				if prev, dup := owner[uid]; dup {
					t.Errorf("%s: %s/%s is held by %s and %s", form, m.GetNamespace(), m.GetName(), prev, r.name)
				}
				owner[uid] = r.name
				if ok, err := r.sel.Matches(obj.(runtime.Object)); err != nil || !ok {
					t.Errorf("%s: %s holds %s/%s outside %s (%v)", form, r.name, m.GetNamespace(), m.GetName(), r.sel, err)
				}
				if !server[uid] {
					t.Errorf("%s: %s holds %s/%s, which the server does not have", form, r.name, m.GetNamespace(), m.GetName())
				}
			}
			t.Logf("%s: %s caches %d of %d configmaps", form, r.name, len(inf.GetStore().List()), len(server))
		}
		if len(owner) != len(server) {
			t.Errorf("%s: the replicas hold %d configmaps in all, the server %d", form, len(owner), len(server))
		}
	}

	for _, r := range []*replica{a, b} {
		lists, watches := 0, 0
		namespaces := map[string]bool{}
		for _, q := range r.rec.snapshot() {
			if !strings.HasSuffix(q.Path, "/configmaps") {
				continue
			}
			if got := q.Query.Get("shardSelector"); got != r.sel.String() {
				t.Errorf("%s: %s %s?%s: shardSelector %q, want %q as given", r.name, q.Method, q.Path, q.Query.Encode(), got, r.sel.String())
			}
			namespaces[strings.Split(q.Path, "/")[4]] = true
			if q.isWatch() {
				watches++
			} else {
				lists++
			}
		}
		if !namespaces[ns1] || !namespaces[ns2] || watches < 4 {
			t.Errorf("%s: requests in namespaces %v with %d watches, want both namespaces and a watch per form and namespace", r.name, namespaces, watches)
		}
		// The counter sees the JSON watch streams; whether it also sees the
		// metadata form's depends on its encoding, so accept either. A
		// server that did not filter would send all 600 per form.
		got := r.items.get("configmaps")
		typedN, metaN := len(r.typed.GetStore().List()), len(r.meta.GetStore().List())
		t.Logf("%s: %d LIST and %d WATCH requests, all with shardSelector=%s; received %d objects on the wire, caches %d per form, of %d (%.3f)", r.name, lists, watches, r.sel, got, typedN, len(server), float64(typedN)/float64(len(server)))
		if got != typedN && got != typedN+metaN {
			t.Errorf("%s: received %d objects, want exactly the %d the shard holds (per form): the server did not filter", r.name, got, typedN)
		}
		if n := r.factory.Notices(); len(n) != 0 {
			t.Errorf("%s: notices %q: the server applied the selector", r.name, n)
		}
		if err := r.factory.Ready(); err != nil {
			t.Errorf("%s: Ready: %v", r.name, err)
		}
	}

	before := len(b.typed.GetStore().List())
	if err := b.typed.(shardSetter).SetShardSelector(selA); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("SetShardSelector after Start: %v, want an error saying it has started", err)
	}
	if after := len(b.typed.GetStore().List()); after != before {
		t.Errorf("a refused SetShardSelector changed the cache from %d to %d objects", before, after)
	}

	// A selector on two keys is rejected by the server; Ready names the
	// informer and the server's message, and nothing is cached.
	twoKeys := apisharding.NewSelector(
		apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"},
		apisharding.ShardRangeRequirement{Key: "object.metadata.namespace", Start: "0x8000000000000000", End: "0x10000000000000000"},
	)
	bad, err := informers.NewForConfig(c.cfg, 0, informers.WithNamespace(ns1), informers.WithShardSelector(twoKeys))
	if err != nil {
		t.Fatal(err)
	}
	badInf := bad.Core().V1().ConfigMaps().Informer()
	bctx, cancel := context.WithCancel(c.ctx)
	bad.Start(bctx.Done())
	t.Cleanup(func() { cancel(); bad.Shutdown() })
	var ready error
	// Ready says "not synced: <the last error>" once a list has failed.
	eventually(30*time.Second, 100*time.Millisecond, func() bool {
		ready = bad.Ready()
		return ready != nil && strings.Contains(ready.Error(), ": not synced: ")
	})
	t.Logf("a selector on two keys: Ready: %v", ready)
	if ready == nil || !strings.Contains(ready.Error(), "configmaps (v1)") || !strings.Contains(strings.ToLower(ready.Error()), "shard") {
		t.Errorf("Ready = %v, want it to name configmaps (v1) and the server's message about the shard selector", ready)
	}
	if n := len(badInf.GetStore().List()); n != 0 {
		t.Errorf("the informer with a rejected selector cached %d objects", n)
	}
}
