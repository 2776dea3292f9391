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

package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	upstreamcorev1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// shardSetter is client-go v0.38's SharedInformer.SetShardSelector, which
// every informer of the factory has on v0.37 too.
type shardSetter interface {
	SetShardSelector(selector apisharding.Selector) error
}

// twoRanges is a selector of two ranges written high one first: this
// module's own sharding.Selector would sort them, and the server echoes
// what it was sent, so the factory must send this string as given.
func twoRanges() apisharding.Selector {
	return apisharding.NewSelector(
		apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0xc000000000000000", End: "0x10000000000000000"},
		apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x4000000000000000"},
	)
}

// podsIn returns n pods spread over namespaces, each with its own UID.
func podsIn(n int, namespaces ...string) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: namespaces[i%len(namespaces)], Name: fmt.Sprintf("p%02d", i),
			UID: types.UID(fmt.Sprintf("9e2a%04x-0000-4000-8000-%012x", i, i*104729)),
		}})
	}
	return out
}

// widgetsWithUID returns n widgets in namespace ns, each with its own UID.
func widgetsWithUID(n int, ns string) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		w := widget(ns, fmt.Sprintf("w%02d", i), "Widget")
		w.SetUID(types.UID(fmt.Sprintf("3f7c%04x-0000-4000-8000-%012x", i, i*7919)))
		out = append(out, w)
	}
	return out
}

// matching returns the keys of the objects sel matches, sorted.
func matching(t *testing.T, sel apisharding.Selector, objs []runtime.Object) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		ok, err := sel.Matches(o)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			k, _ := cache.MetaNamespaceKeyFunc(o)
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// shardSelectors returns the ShardSelector of every list and watch the
// fake recorded for resource.
func shardSelectors(actions []k8stesting.Action, resource string) []string {
	var out []string
	for _, a := range actions {
		if a.GetResource().Resource != resource {
			continue
		}
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			out = append(out, "list "+a.ListOptions.ShardSelector)
		case k8stesting.WatchActionImpl:
			out = append(out, "watch "+a.ListOptions.ShardSelector)
		}
	}
	return out
}

// TestWithShardSelector: WithShardSelector, given a selector of two ranges
// in descending order, reaches every informer of the factory, typed and
// dynamic, in each of several namespaces: each list and watch sends the
// selector's String exactly, and each cache holds exactly the objects the
// selector matches (the fakes ignore the selector, so this is the
// client-side filter). The ignored selector is a notice, not an error.
func TestWithShardSelector(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	sel := twoRanges()
	if ours, _ := sharding.NewSelector(sharding.FieldUID, sharding.Range{Start: 0xc000000000000000}, sharding.Range{End: 0x4000000000000000}); ours.String() == sel.String() {
		t.Fatalf("the selector %q is already in this module's sorted form; the test needs one that is not", sel)
	}
	pods := podsIn(40, "a", "b")
	widgets := widgetsWithUID(40, "a")
	client := fake.NewClientset(pods...)
	dyn := newDynamic(widgets...)
	f, err := informers.New(client, 0, informers.WithNamespaces("a", "b"), informers.WithShardSelector(sel), informers.WithDynamicClient(dyn))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	podInf := f.Core().V1().Pods().Informer()
	gi, err := f.ForResource(widgetsGVR)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	mustSync(t, ctx, f)

	if got, want := storeKeys(podInf.GetStore()), matching(t, sel, pods); !slices.Equal(got, want) || len(want) == 0 || len(want) == len(pods) {
		t.Errorf("pods cached %q, want the %d of %d the selector matches: %q", got, len(want), len(pods), want)
	}
	if got, want := storeKeys(gi.Informer().GetStore()), matching(t, sel, widgets); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("widgets cached %q, want %q", got, want)
	}
	// Each namespace's reflector watches after its list.
	waitFor(t, ctx, func() bool {
		n := 0
		for _, s := range shardSelectors(client.Actions(), "pods") {
			if strings.HasPrefix(s, "watch ") {
				n++
			}
		}
		return n == 2
	})
	for what, seen := range map[string][]string{"pods": shardSelectors(client.Actions(), "pods"), "widgets": shardSelectors(dyn.Actions(), "widgets")} {
		if len(seen) == 0 {
			t.Errorf("%s: no list or watch recorded", what)
		}
		for _, s := range seen {
			if _, got, _ := strings.Cut(s, " "); got != sel.String() {
				t.Errorf("%s: %q, want the selector as given, %q", what, s, sel.String())
			}
		}
	}
	if n := len(f.Notices()); n != 2 {
		t.Errorf("notices %q: want one per informer (pods, widgets)", f.Notices())
	}
}

// TestShardSelectorNilOrEmptyIsNoSharding: as in client-go, a nil selector
// and apimachinery's Everything() shard nothing: no ShardSelector is sent
// and every object is cached.
func TestShardSelectorNilOrEmptyIsNoSharding(t *testing.T) {
	for name, sel := range map[string]apisharding.Selector{"nil": nil, "Everything": apisharding.Everything()} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(syncCtx(t))
			pods := podsIn(10, "a")
			client := fake.NewClientset(pods...)
			f, err := informers.New(client, 0, informers.WithShardSelector(sel))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); f.Shutdown() }()
			inf := f.Core().V1().Pods().Informer()
			f.Start(ctx.Done())
			mustSync(t, ctx, f)
			if n := len(inf.GetStore().List()); n != len(pods) {
				t.Errorf("cached %d pods, want all %d", n, len(pods))
			}
			for _, s := range shardSelectors(client.Actions(), "pods") {
				if _, got, _ := strings.Cut(s, " "); got != "" {
					t.Errorf("%q sent a shard selector", s)
				}
			}
		})
	}
}

// TestSetShardSelector: SetShardSelector on a factory informer (the typed
// accessor's, under two namespaces) before Start applies in every
// namespace and replaces the factory's shard; after Start it is an error
// and changes nothing.
func TestSetShardSelector(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	pods := podsIn(40, "a", "b")
	client := fake.NewClientset(pods...)
	f, err := informers.New(client, 0, informers.WithNamespaces("a", "b"), informers.WithShard(sharding.FieldUID, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	inf := f.Core().V1().Pods().Informer()
	setter, ok := inf.(shardSetter)
	if !ok {
		t.Fatalf("the pods informer %T has no SetShardSelector", inf)
	}
	sel := twoRanges()
	if err := setter.SetShardSelector(sel); err != nil {
		t.Fatalf("SetShardSelector before Start: %v", err)
	}
	// The typed form is the same informer, with the same method.
	if _, ok := f.Core().V1().Pods().TypedInformer().(shardSetter); !ok {
		t.Errorf("the typed pods informer has no SetShardSelector")
	}
	f.Start(ctx.Done())
	mustSync(t, ctx, f)
	want := matching(t, sel, pods)
	if got := storeKeys(inf.GetStore()); !slices.Equal(got, want) {
		t.Errorf("cached %q, want %q", got, want)
	}
	nsSeen := map[string]bool{}
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListActionImpl); ok && l.Resource.Resource == "pods" {
			nsSeen[l.Namespace] = true
			if l.ListOptions.ShardSelector != sel.String() {
				t.Errorf("list of namespace %q sent %q, want %q", l.Namespace, l.ListOptions.ShardSelector, sel)
			}
		}
	}
	if !nsSeen["a"] || !nsSeen["b"] || len(nsSeen) != 2 {
		t.Errorf("lists in namespaces %v, want a and b", nsSeen)
	}

	other, _ := sharding.ForShard(sharding.FieldUID, 0, 2)
	err = setter.SetShardSelector(other.APISelector())
	if err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("SetShardSelector after Start: %v, want an error saying it has started", err)
	}
	if got := storeKeys(inf.GetStore()); !slices.Equal(got, want) {
		t.Errorf("after the refused SetShardSelector the cache holds %q, want %q", got, want)
	}
}

// TestShardSelectorEcho: a server that says it applied another selector
// than the one sent (ListMeta.ShardInfo) returned another shard; as in
// client-go v0.38, the list fails, and Ready names the resource and both
// selectors. A matching echo is accepted.
func TestShardSelectorEcho(t *testing.T) {
	sel := twoRanges()
	for _, tc := range []struct {
		name, echo string
		ok         bool
	}{
		{"same", sel.String(), true},
		{"different", "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(syncCtx(t))
			pods := podsIn(10, "a")
			client := fake.NewClientset(pods...)
			client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1", ShardInfo: &metav1.ShardInfo{Selector: tc.echo}}}
				for _, p := range pods {
					if ok, _ := sel.Matches(p); ok {
						list.Items = append(list.Items, *p.(*corev1.Pod))
					}
				}
				return true, list, nil
			})
			// The fake's own watch would send every object: a server
			// that applied the selector sends only the shard's.
			client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
				return true, watch.NewFake(), nil
			})
			f, err := informers.New(client, 0, informers.WithShardSelector(sel))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); f.Shutdown() }()
			inf := f.Core().V1().Pods().Informer()
			f.Start(ctx.Done())
			if tc.ok {
				mustSync(t, ctx, f)
				if n, want := len(inf.GetStore().List()), len(matching(t, sel, pods)); n != want {
					t.Errorf("cached %d pods, want %d", n, want)
				}
				if n := len(f.Notices()); n != 0 {
					t.Errorf("notices %q for a server that applied the selector", f.Notices())
				}
				return
			}
			waitFor(t, ctx, func() bool {
				return f.Ready() != nil && strings.Contains(f.Ready().Error(), "applied the shard selector")
			})
			err = f.Ready()
			for _, w := range []string{"pods (v1)", tc.echo, sel.String()} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Ready: %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestShardSelectorBadInput: the shard options exclude each other.
func TestShardSelectorBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []informers.SharedInformerOption
		want []string
	}{
		{"selector then WithShard", []informers.SharedInformerOption{informers.WithShardSelector(twoRanges()), informers.WithShard(sharding.FieldUID, 0, 2)}, []string{"WithShard(sharding.FieldUID, 0, 2)", "already sharded by WithShardSelector", "0xc000000000000000"}},
		{"WithShard then selector", []informers.SharedInformerOption{informers.WithShard(sharding.FieldUID, 0, 2), informers.WithShardSelector(twoRanges())}, []string{"WithShardSelector", "already sharded by WithShard(sharding.FieldUID, 0, 2)"}},
		{"nil selector then WithShard by namespace", []informers.SharedInformerOption{informers.WithShardSelector(nil), informers.WithShard(sharding.FieldNamespace, 0, 2)}, []string{"WithShard(sharding.FieldNamespace, 0, 2)", "WithShardSelector(nil)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := informers.New(fake.NewClientset(), 0, tc.opts...)
			if err == nil {
				f.Shutdown()
				t.Fatal("New accepted the options")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestResourceShardSelector: a resource's ShardSelector replaces the
// factory's shard for that resource only, and an empty one unshards it.
func TestResourceShardSelector(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	pods := podsIn(30, "a")
	cms := []runtime.Object{}
	for i := range 30 {
		cms = append(cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("c%02d", i), UID: types.UID(fmt.Sprintf("c0ffee%02d-0000-4000-8000-%012x", i, i*31337))}})
	}
	client := fake.NewClientset(append(pods, cms...)...)
	sel := twoRanges()
	f, err := informers.New(client, 0, informers.WithShard(sharding.FieldUID, 0, 2),
		informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("pods"), informers.ResourceOptions{ShardSelector: sel}),
		informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("configmaps"), informers.ResourceOptions{ShardSelector: apisharding.Everything()}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	podInf, cmInf := f.Core().V1().Pods().Informer(), f.Core().V1().ConfigMaps().Informer()
	f.Start(ctx.Done())
	mustSync(t, ctx, f)
	if got, want := storeKeys(podInf.GetStore()), matching(t, sel, pods); !slices.Equal(got, want) {
		t.Errorf("pods cached %q, want %q", got, want)
	}
	if n := len(cmInf.GetStore().List()); n != len(cms) {
		t.Errorf("configmaps cached %d, want all %d (an empty ShardSelector unshards the resource)", n, len(cms))
	}
}

// TestInformerForCannotShard: an informer built by InformerFor's newFunc
// has its own list/watch. client-go v0.37's informers cannot take a shard
// selector, so under a shard option it fails closed: it makes no request,
// and Ready names it with the reason. (From client-go v0.38 on, the
// factory gives it the selector through its SetShardSelector.)
func TestInformerForCannotShard(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	client := fake.NewClientset(podsIn(4, "a")...)
	f, err := informers.New(client, 0, informers.WithShard(sharding.FieldUID, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	inf := f.InformerFor(&corev1.Secret{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return upstreamcorev1.NewSecretInformer(c, metav1.NamespaceAll, resync, cache.Indexers{})
	})
	if _, ok := inf.(shardSetter); ok {
		t.Skip("client-go's informers take a shard selector (client-go v0.38 or later): covered by the next lane")
	}
	f.Start(ctx.Done())
	short, stop := context.WithTimeout(ctx, 0)
	defer stop()
	res := f.WaitForCacheSyncWithContext(short)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "cannot be sharded") {
		t.Errorf("WaitForCacheSync: %v, want it to name the informer that cannot be sharded", res.Err)
	}
	err = f.Ready()
	if err == nil || !strings.Contains(err.Error(), "WithShard(sharding.FieldUID, 0, 2)") || !strings.Contains(err.Error(), "SetShardSelector") {
		t.Errorf("Ready: %v, want it to name the option and the missing SetShardSelector", err)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "secrets" {
			t.Errorf("the refused informer made a request: %s %s", a.GetVerb(), a.GetResource())
		}
	}
}
