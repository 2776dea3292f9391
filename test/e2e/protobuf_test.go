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
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/listwatch"
)

const (
	e2eContentJSON   = "application/json"
	e2eContentProto  = "application/vnd.kubernetes.protobuf"
	e2eAcceptProto   = e2eContentProto + ",application/json"
	protobufVariants = 3
)

// wire records, per request to a built-in API group, what the client
// asked for (Accept) and what the server answered in (Content-Type).
type wire struct {
	mu      sync.Mutex
	asked   map[string]int // Accept header → requests
	got     map[string]int // response media type → responses
	samples map[string]string
}

func (w *wire) wrap(cfg *rest.Config) *rest.Config {
	w.asked, w.got, w.samples = map[string]int{}, map[string]int{}, map[string]string{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if req.Method != http.MethodGet || (!strings.HasPrefix(req.URL.Path, "/api/") && !strings.HasPrefix(req.URL.Path, "/apis/")) {
				return resp, err
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.asked[req.Header.Get("Accept")]++
			if resp != nil && resp.StatusCode == http.StatusOK {
				media, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
				w.got[media]++
				w.samples[media] = req.URL.Path
			}
			return resp, err
		})
	})
	return cfg
}

func (w *wire) summary() (asked, got map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	asked, got = map[string]int{}, map[string]int{}
	for k, v := range w.asked {
		asked[k] = v
	}
	for k, v := range w.got {
		got[k] = v
	}
	return asked, got
}

// TestProtobufDifferential runs three factories side by side over
// clientsets built for JSON, each with an informer (through ForResource)
// for every built-in resource the server serves: one without options
// (JSON on the wire), one with WithProtobuf (the watch-list stream in
// protobuf), and one with WithProtobuf and ListModeConsistentList (LIST
// pages in protobuf). It drives the CRUD kinds through create, update and
// delete, and checks that the three deliver the same events with the same
// resource versions and end with the same caches, object for object; and,
// from the requests recorded on the wire, that the first sent and got
// only JSON and the others asked for and got protobuf.
func TestProtobufDifferential(t *testing.T) {
	c := setup(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(c.cfg)
	served := servedListWatchGVRs(t, dc)

	names := []string{"json", "protobuf stream", "protobuf list"}
	wires := make([]*wire, protobufVariants)
	factories := make([]informers.Factory, protobufVariants)
	for i := range protobufVariants {
		cfg := rest.CopyConfig(c.cfg)
		cfg.ContentType, cfg.AcceptContentTypes = e2eContentJSON, e2eContentJSON
		wires[i] = &wire{}
		var opts []informers.SharedInformerOption
		switch i {
		case 1:
			opts = append(opts, informers.WithProtobuf())
		case 2:
			opts = append(opts, informers.WithProtobuf(), informers.WithListMode(informers.ListModeConsistentList))
		}
		f, err := informers.New(kubernetes.NewForConfigOrDie(wires[i].wrap(cfg)), 0, opts...)
		if err != nil {
			t.Fatal(err)
		}
		factories[i] = f
		t.Cleanup(f.Shutdown) // after sideBySide's cancel of their Start
	}

	informersOf := sideBySide(t, c, served, names, factories, nil, 3)
	// What was on the wire.
	for i, w := range wires {
		asked, got := w.summary()
		t.Logf("%s: asked %v, got %v", names[i], asked, got)
		wantAccept, wantMedia := e2eContentJSON, e2eContentJSON
		if i > 0 {
			wantAccept, wantMedia = e2eAcceptProto, e2eContentProto
		}
		for a, n := range asked {
			if a != wantAccept {
				t.Errorf("%s: %d requests asked for %q, want %q", names[i], n, a, wantAccept)
			}
		}
		for m, n := range got {
			if m != wantMedia {
				t.Errorf("%s: %d responses in %q (e.g. %s), want %q", names[i], n, m, w.samples[m], wantMedia)
			}
		}
		if got[wantMedia] < len(informersOf[i]) {
			t.Errorf("%s: %d responses in %s, want at least one per informer (%d)", names[i], got[wantMedia], wantMedia, len(informersOf[i]))
		}
	}
}

// diffStores describes how two caches differ, or returns "".
func diffStores(a, b cache.Store) string {
	ka, kb := a.ListKeys(), b.ListKeys()
	slices.Sort(ka)
	slices.Sort(kb)
	if !slices.Equal(ka, kb) {
		return fmt.Sprintf("keys %v against %v", kb, ka)
	}
	for _, k := range ka {
		oa, _, _ := a.GetByKey(k)
		ob, _, _ := b.GetByKey(k)
		ma, _ := meta.Accessor(oa)
		mb, _ := meta.Accessor(ob)
		if ma.GetResourceVersion() != mb.GetResourceVersion() {
			return fmt.Sprintf("%s at resourceVersion %s against %s", k, mb.GetResourceVersion(), ma.GetResourceVersion())
		}
		if !apiequality.Semantic.DeepEqual(oa, ob) {
			return fmt.Sprintf("%s (resourceVersion %s) differs: %+v against %+v", k, ma.GetResourceVersion(), ob, oa)
		}
	}
	return ""
}

// TestProtobufLeanStrip checks that a lean factory which leaves
// managedFields and the last-applied annotation out while decoding
// protobuf (WithLeanMemory without a transform of the user's) caches and
// delivers what decoding everything and then stripping does. Four
// factories with WithLeanMemory(LeanDropLastApplied()) run side by side
// over the same server, each with an informer (through ForResource) for
// every built-in resource: one with an identity transform of the user's,
// which makes the lean transform strip after a full decode; one over a
// default clientset (the watch-list stream in protobuf, stripped while
// decoding); one that also lists in consistent pages (LIST pages in
// protobuf, stripped); and one over a clientset built for JSON (the same
// requests, answered in JSON and decoded by client-go). The CRUD kinds
// are driven through create, update and delete, and a ConfigMap is
// written as kubectl apply writes it. The four must deliver the same
// events and end with the same caches, object for object, and the
// process must have decoded at least as many objects stripped as the two
// protobuf factories cache.
func TestProtobufLeanStrip(t *testing.T) {
	c := setup(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(c.cfg)
	served := servedListWatchGVRs(t, dc)

	names := []string{"decode then strip", "stripped stream", "stripped pages", "json"}
	lean := informers.WithLeanMemory(informers.LeanDropLastApplied())
	factories := make([]informers.Factory, len(names))
	for i := range names {
		cfg := rest.CopyConfig(c.cfg)
		opts := []informers.SharedInformerOption{lean}
		switch i {
		case 0:
			opts = append(opts, informers.WithTransform(func(o any) (any, error) { return o, nil }))
		case 2:
			opts = append(opts, informers.WithListMode(informers.ListModeConsistentList))
		case 3:
			cfg.ContentType, cfg.AcceptContentTypes = e2eContentJSON, e2eContentJSON
		}
		f, err := informers.New(kubernetes.NewForConfigOrDie(cfg), 0, opts...)
		if err != nil {
			t.Fatal(err)
		}
		factories[i] = f
		t.Cleanup(f.Shutdown) // after sideBySide's cancel of their Start
	}
	// A ConfigMap as kubectl apply leaves it, before the factories start.
	applied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "applied", Annotations: map[string]string{
		corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"}}`,
		"example.com/kept":                 "yes",
	}}}
	if _, err := c.client.CoreV1().ConfigMaps(c.ns).Create(c.ctx, applied, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	before := listwatch.StrippedObjects()
	var objects int
	informersOf := sideBySide(t, c, served, names, factories, &objects, 2)
	stripped := listwatch.StrippedObjects() - before
	t.Logf("%d objects decoded stripped", stripped)
	if stripped < int64(2*objects) {
		t.Errorf("%d objects were decoded stripped, want at least %d (the two protobuf factories' caches)", stripped, 2*objects)
	}

	// What every factory caches of the applied ConfigMap.
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	for i := range names {
		obj, exists, err := informersOf[i][gvr].GetStore().GetByKey(c.ns + "/applied")
		if err != nil || !exists {
			t.Fatalf("%s: the applied ConfigMap is not cached (%v)", names[i], err)
		}
		cm := obj.(*corev1.ConfigMap)
		if cm.ManagedFields != nil || cm.Annotations[corev1.LastAppliedConfigAnnotation] != "" || cm.Annotations["example.com/kept"] != "yes" {
			t.Errorf("%s: the applied ConfigMap is cached with managedFields %v and annotations %v, want none and only example.com/kept", names[i], cm.ManagedFields, cm.Annotations)
		}
	}
}

// sideBySide runs factories side by side on one server: each gets an
// informer (through ForResource) for every built-in resource of served
// and an event log on each CRUD kind; they start and sync; every CRUD kind
// is created, updated updates times and deleted. Each factory must see
// every write in order, with the resource versions written, all must
// deliver the same events, and their caches must end equal, object for
// object (the server changes a few objects on its own, such as leases:
// it waits up to a minute for them to agree). It returns each factory's
// informers, and in objects, if set, how many objects each cache holds.
func sideBySide(t *testing.T, c *tcx, served sets.Set[schema.GroupVersionResource], names []string, factories []informers.Factory, objects *int, updates int) []map[schema.GroupVersionResource]cache.SharedIndexInformer {
	t.Helper()
	informersOf := make([]map[schema.GroupVersionResource]cache.SharedIndexInformer, len(factories))
	for i, f := range factories {
		informersOf[i] = map[schema.GroupVersionResource]cache.SharedIndexInformer{}
		for gvr := range served {
			gi, err := f.ForResource(gvr)
			if err != nil {
				continue // not built in
			}
			informersOf[i][gvr] = gi.Informer()
		}
	}
	kinds := crudKinds()
	logs := make([][]*eventLog, len(factories))
	for i, f := range factories {
		for _, k := range kinds {
			l := &eventLog{}
			if _, err := k.informer(f).AddEventHandler(l.handler()); err != nil {
				t.Fatalf("%s %s: AddEventHandler: %v", names[i], k.name, err)
			}
			logs[i] = append(logs[i], l)
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	t.Cleanup(cancel) // before the factories' Shutdown, which the caller registers with t.Cleanup first
	start := time.Now()
	for i, f := range factories {
		f.Start(ctx.Done())
		wctx, wcancel := context.WithTimeout(ctx, 120*time.Second)
		err := f.WaitForCacheSyncWithContext(wctx).AsError()
		wcancel()
		if err != nil {
			t.Fatalf("%s: sync: %v", names[i], err)
		}
	}
	t.Logf("%d built-in resources, %d factories synced in %v", len(informersOf[0]), len(factories), time.Since(start).Round(time.Millisecond))

	var want [][]string // per kind: the resource versions written
	for _, k := range kinds {
		var rvs []string
		o, err := k.create(ctx, c.client, c.ns, "side")
		if err != nil {
			t.Fatalf("%s: create: %v", k.name, err)
		}
		rvs = append(rvs, o.GetResourceVersion())
		for step := 1; step <= updates; step++ {
			if o, err = k.relabel(ctx, c.client, c.ns, "side", fmt.Sprint(step)); err != nil {
				t.Fatalf("%s: update %d: %v", k.name, step, err)
			}
			rvs = append(rvs, o.GetResourceVersion())
		}
		if err := k.delete(ctx, c.client, c.ns, "side"); err != nil {
			t.Fatalf("%s: delete: %v", k.name, err)
		}
		want = append(want, rvs)
	}
	key := c.ns + "/side"
	for j, k := range kinds {
		seqs := make([]string, len(factories))
		for i := range factories {
			checkSequence(t, logs[i][j], key, want[j])
			seqs[i] = fmt.Sprint(logs[i][j].forName(key))
		}
		for i := 1; i < len(factories); i++ {
			if seqs[i] != seqs[0] {
				t.Errorf("%s: events differ:\n%s: %s\n%s: %s", k.name, names[0], seqs[0], names[i], seqs[i])
			}
		}
	}

	var diffs []string
	compared, n := 0, 0
	ok := eventually(60*time.Second, 200*time.Millisecond, func() bool {
		diffs, compared, n = nil, 0, 0
		for gvr, inf := range informersOf[0] {
			a := inf.GetStore()
			for i := 1; i < len(factories); i++ {
				if d := diffStores(a, informersOf[i][gvr].GetStore()); d != "" {
					diffs = append(diffs, fmt.Sprintf("%s: %s against %s: %s", gvrString(gvr), names[i], names[0], d))
				}
			}
			compared++
			n += len(a.ListKeys())
		}
		return len(diffs) == 0
	})
	if !ok {
		slices.Sort(diffs)
		t.Errorf("caches differ:\n%s", strings.Join(diffs, "\n"))
	}
	t.Logf("caches equal for %d built-in resources (%d objects each)", compared, n)
	if objects != nil {
		*objects = n
	}
	return informersOf
}
