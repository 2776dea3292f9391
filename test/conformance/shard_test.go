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
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

func shardPods(n int) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("p%02d", i),
			UID: types.UID(fmt.Sprintf("6b1c%04x-0000-4000-8000-%012x", i, i*7919)),
		}})
	}
	return out
}

// selectorLog records the ShardSelector of every list and watch of pods.
type selectorLog struct {
	mu   sync.Mutex
	seen []string // verb + " " + selector
}

func (l *selectorLog) install(c *fake.Clientset) {
	record := func(verb string) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			var sel string
			switch a := a.(type) {
			case k8stesting.ListActionImpl:
				sel = a.ListOptions.ShardSelector
			case k8stesting.WatchActionImpl:
				sel = a.ListOptions.ShardSelector
			default:
				sel = fmt.Sprintf("<%T>", a)
			}
			l.mu.Lock()
			l.seen = append(l.seen, verb+" "+sel)
			l.mu.Unlock()
			return false, nil, nil
		}
	}
	c.PrependReactor("list", "pods", record("list"))
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		_, _, _ = record("watch")(a)
		return false, nil, nil
	})
}

func (l *selectorLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// TestShardStaticPartition: three factories WithShard(field, i, 3) over 60 pods of
// a fake clientset, which ignores the selector, hold pairwise disjoint
// caches whose union is all 60: the client-side filter does the work. Every
// list and watch carries the canonical selector, and each factory reports
// the ignored selector once.
func TestShardStaticPartition(t *testing.T) {
	ctx := syncCtx(t)
	pods := shardPods(60)
	owner := map[string]int{}
	for i := range 3 {
		client := fake.NewClientset(pods...)
		log := &selectorLog{}
		log.install(client)
		f, err := informers.New(client, 0, informers.WithShard(sharding.FieldUID, i, 3))
		if err != nil {
			t.Fatal(err)
		}
		inf := f.Core().V1().Pods().Informer()
		fctx, cancel := context.WithCancel(ctx)
		f.Start(fctx.Done())
		mustSync(t, ctx, f)
		want, _ := sharding.ForShard(sharding.FieldUID, i, 3)
		for _, k := range inf.GetStore().ListKeys() {
			if j, dup := owner[k]; dup {
				t.Errorf("%s is in shards %d and %d", k, j, i)
			}
			owner[k] = i
		}
		for _, obj := range inf.GetStore().List() {
			if !want.Matches(obj.(runtime.Object)) {
				t.Errorf("shard %d holds %s outside %s", i, obj.(*corev1.Pod).Name, want)
			}
		}
		// The reflector watches after the list that synced the cache.
		waitFor(t, ctx, func() bool {
			return slices.ContainsFunc(log.snapshot(), func(s string) bool { return strings.HasPrefix(s, "watch ") })
		})
		seen := log.snapshot()
		for _, s := range seen {
			_, sel, _ := strings.Cut(s, " ")
			if sel != want.String() {
				t.Errorf("shard %d: %q, want the selector %q", i, s, want.String())
			}
		}
		notices := f.Notices()
		if len(notices) != 1 || !strings.Contains(notices[0], want.String()) || !strings.Contains(notices[0], "ignored") {
			t.Errorf("shard %d: notices %q, want one naming %s", i, notices, want)
		}
		cancel()
		f.Shutdown()
	}
	if len(owner) != len(pods) {
		t.Errorf("the shards hold %d distinct pods, want all %d", len(owner), len(pods))
	}
}

func TestShardBadInput(t *testing.T) {
	client := fake.NewClientset()
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	nsSel, err := sharding.ForShard(sharding.FieldNamespace, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []informers.SharedInformerOption
		want []string
	}{
		{"count 0", []informers.SharedInformerOption{informers.WithShard(sharding.FieldUID, 0, 0)}, []string{"WithShard(sharding.FieldUID, 0, 0)"}},
		{"negative index", []informers.SharedInformerOption{informers.WithShard(sharding.FieldUID, -1, 3)}, []string{"WithShard(sharding.FieldUID, -1, 3)"}},
		{"index = count", []informers.SharedInformerOption{informers.WithShard(sharding.FieldUID, 3, 3)}, []string{"WithShard(sharding.FieldUID, 3, 3)", "out of range"}},
		{"two shard options", []informers.SharedInformerOption{informers.WithShard(sharding.FieldUID, 0, 2), informers.WithShard(sharding.FieldNamespace, 1, 2)}, []string{"WithShard(sharding.FieldNamespace, 1, 2)", "already sharded", "WithShard(sharding.FieldUID, 0, 2)"}},
		{"nil membership", []informers.SharedInformerOption{informers.WithShardMembership(nil, sharding.FieldUID)}, []string{"WithShardMembership", "nil"}},
		{"namespace shard on nodes", []informers.SharedInformerOption{informers.WithResourceOptions(nodes, informers.ResourceOptions{ShardSelector: nsSel.APISelector()})}, []string{"nodes", "cluster-scoped", "object.metadata.namespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := informers.New(client, 0, tc.opts...)
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

// podView is the set of pods an event handler reconstructs, with counts.
type podView struct {
	mu               sync.Mutex
	present          map[string]bool
	adds, tombstones int
}

func (v *podView) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			v.mu.Lock()
			v.present[obj.(*corev1.Pod).Name] = true
			v.adds++
			v.mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			v.mu.Lock()
			defer v.mu.Unlock()
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				v.tombstones++
				obj = d.Obj
			}
			delete(v.present, obj.(*corev1.Pod).Name)
		},
	}
}

func (v *podView) names() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Sorted(maps.Keys(v.present))
}

// TestShardMembershipSwitch: a factory following a Membership on a fake
// clientset switches its informers when a second member joins (objects that
// left arrive as DeletedFinalStateUnknown) and when it leaves gracefully
// (objects that joined arrive as adds), and no object is lost.
func TestShardMembershipSwitch(t *testing.T) {
	ctx := syncCtx(t)
	pods := shardPods(60)
	client := fake.NewClientset(pods...)
	member := func(id string) *sharding.Membership {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: client, Namespace: "leases", Controller: "ctl", Identity: id,
			// Long enough that nothing expires during the test: members
			// change only by Lease creation and deletion.
			LeaseDuration: time.Hour, RenewInterval: 20 * time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := member("a"), member("b")
	f, err := informers.New(client, 0, informers.WithShardMembership(a, sharding.FieldUID))
	if err != nil {
		t.Fatal(err)
	}
	view := &podView{present: map[string]bool{}}
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(view.handler()); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := a.Start(mctx); err != nil {
		t.Fatal(err)
	}
	f.Start(mctx.Done())
	defer func() { cancel(); f.Shutdown(); _ = a.Stop(context.Background()) }()

	expect := func(r sharding.Range) []string {
		var out []string
		for _, p := range pods {
			pod := p.(*corev1.Pod)
			if r.Contains(sharding.Hash(string(pod.UID))) {
				out = append(out, pod.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	all := expect(sharding.Full)
	waitFor(t, ctx, func() bool { return slices.Equal(view.names(), all) })

	// b joins: a keeps the lower half.
	if err := b.Start(mctx); err != nil {
		t.Fatal(err)
	}
	half := expect(sharding.Assign([]string{"a", "b"})["a"])
	if len(half) == 0 || len(half) == len(all) {
		t.Fatalf("degenerate split: %d of %d", len(half), len(all))
	}
	waitFor(t, ctx, func() bool { return slices.Equal(view.names(), half) })
	view.mu.Lock()
	tombstones := view.tombstones
	view.mu.Unlock()
	if tombstones != len(all)-len(half) {
		t.Errorf("after b joined: %d DeletedFinalStateUnknown, want %d (the pods that left)", tombstones, len(all)-len(half))
	}

	// b leaves gracefully: a takes everything back as adds.
	addsBefore := func() int { view.mu.Lock(); defer view.mu.Unlock(); return view.adds }()
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { return slices.Equal(view.names(), all) })
	view.mu.Lock()
	added := view.adds - addsBefore
	view.mu.Unlock()
	if added != len(all)-len(half) {
		t.Errorf("after b left: %d adds, want %d (the pods that joined)", added, len(all)-len(half))
	}
	if got := inf.GetStore().ListKeys(); len(got) != len(all) {
		t.Errorf("cache holds %d pods, want %d", len(got), len(all))
	}
}

// TestShardIgnoredReportedOncePerInformer: under WithNamespaces an informer
// is one informer per namespace, and a server that ignores the selector is
// still reported once for it: one notice and one log line, not one per
// namespace.
func TestShardIgnoredReportedOncePerInformer(t *testing.T) {
	// klog's output is swapped under its own lock (klog.SetLogger is not
	// safe while informers of other tests may still be logging).
	out := &lockedBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(out)
	defer func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()

	var pods []runtime.Object
	for _, ns := range []string{"a", "b", "c"} {
		for i := range 20 {
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("p%02d", i),
				UID: types.UID(fmt.Sprintf("%x%03x-0000-4000-8000-%012x", ns[0], i, i*7919)),
			}})
		}
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	// The fake clientset ignores shard selectors, as a server without the
	// ShardedListAndWatch feature does.
	f, err := informers.New(fake.NewClientset(pods...), 0, informers.WithNamespaces("a", "b", "c"), informers.WithShard(sharding.FieldUID, 0, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	inf := f.Core().V1().Pods().Informer()
	f.StartWithContext(ctx)
	mustSync(t, ctx, f)

	want, _ := sharding.ForShard(sharding.FieldUID, 0, 3)
	for _, obj := range inf.GetStore().List() {
		if !want.Matches(obj.(runtime.Object)) {
			t.Errorf("holds %s outside %s", obj.(*corev1.Pod).Name, want)
		}
	}
	if n := len(inf.GetStore().ListKeys()); n == 0 || n == len(pods) {
		t.Fatalf("holds %d of %d pods: not a shard", n, len(pods))
	}
	if notices := f.Notices(); len(notices) != 1 || !strings.Contains(notices[0], "ignored") {
		t.Errorf("notices %q, want exactly one", notices)
	}
	logged := out.String()
	if n := strings.Count(logged, "Shard selector ignored by the server"); n != 1 {
		t.Errorf("%d log lines report the ignored selector, want 1:\n%s", n, logged)
	}
}

// lockedBuffer is an io.Writer safe for klog's concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
