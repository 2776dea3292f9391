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
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/dynamicinformer"
)

const (
	e2eContentCBOR    = "application/cbor"
	e2eContentCBORSeq = "application/cbor-seq"
	// What client-go's dynamic client asks for with ClientsAllowCBOR on.
	e2eAcceptCBOR = "application/json;q=0.9,application/cbor;q=1"
)

// mediaWire records, per request for one API group, what the client asked
// for (Accept) and in which media type the server answered, with the
// bytes of the answers, for LISTs and WATCHes apart.
type mediaWire struct {
	prefix  string
	mu      sync.Mutex
	asked   map[string]int
	answers map[string]int // "list application/cbor" → responses
	bytes   map[string]*atomic.Int64
}

func (w *mediaWire) wrap(cfg *rest.Config) *rest.Config {
	w.asked, w.answers, w.bytes = map[string]int{}, map[string]int{}, map[string]*atomic.Int64{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if req.Method != http.MethodGet || !strings.HasPrefix(req.URL.Path, w.prefix) || err != nil || resp.StatusCode != http.StatusOK {
				return resp, err
			}
			verb := "list"
			if q := req.URL.Query().Get("watch"); q == "true" || q == "1" {
				verb = "watch"
			}
			media, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
			k := verb + " " + media
			w.mu.Lock()
			defer w.mu.Unlock()
			w.asked[req.Header.Get("Accept")]++
			w.answers[k]++
			if w.bytes[k] == nil {
				w.bytes[k] = &atomic.Int64{}
			}
			resp.Body = &countingBody{ReadCloser: resp.Body, n: w.bytes[k]}
			return resp, err
		})
	})
	return cfg
}

func (w *mediaWire) summary() (asked, answers map[string]int, bytes map[string]int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	asked, answers, bytes = map[string]int{}, map[string]int{}, map[string]int64{}
	for k, v := range w.asked {
		asked[k] = v
	}
	for k, v := range w.answers {
		answers[k] = v
		bytes[k] = w.bytes[k].Load()
	}
	return asked, answers, bytes
}

// countingBody counts the bytes read from a response body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestCBORDynamicInformers runs dynamic informers for a custom resource
// over JSON and over CBOR side by side, on a server with
// CBORServingAndStorage (alpha in v1.37, on in the suite's
// AllAlpha=true): one factory from NewForConfig built before client-go's
// ClientsAllowCBOR and ClientsPreferCBOR gates are turned on (JSON), and,
// after, one from NewForConfig in the default list mode, one from
// NewForConfig with ListModeConsistentList (LIST pages), and the
// dynamicinformer drop-in over dynamic.NewForConfig. The library changes
// no content type: the dynamic clients choose theirs. It writes the
// resource through create, updates and delete, checks that the four
// deliver the same events with the same resource versions and end with
// the same caches, that a LIST in CBOR decodes to the objects a LIST in
// JSON does, and, from the responses recorded on the wire, that the first
// got only JSON and the others only CBOR.
func TestCBORDynamicInformers(t *testing.T) {
	c := setup(t)
	installExampleCRDs(t, c)
	gvr := exampleGadgetsGVR
	prefix := "/apis/" + gvr.Group + "/"

	// Writes go through a dynamic client built while the gates are off:
	// it sends and accepts JSON whatever the gates say later.
	writeWire := &mediaWire{prefix: prefix}
	writer := dynamic.NewForConfigOrDie(writeWire.wrap(c.cfg)).Resource(gvr).Namespace(c.ns)
	const preexisting = 12
	for i := range preexisting {
		if _, err := writer.Create(c.ctx, cborGadget(c.ns, fmt.Sprintf("pre-%02d", i), i), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create gadget %d: %v", i, err)
		}
	}

	names := []string{"json", "cbor", "cbor consistent list", "cbor dynamicinformer"}
	wires := make([]*mediaWire, len(names))
	for i := range wires {
		wires[i] = &mediaWire{prefix: prefix}
	}
	inf := make([]cache.SharedIndexInformer, len(names))
	var starts []func(stop <-chan struct{})
	forConfig := func(i int, opts ...informers.SharedInformerOption) {
		f, err := informers.NewForConfig(wires[i].wrap(c.cfg), 0, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Shutdown)
		gi, err := f.ForResource(gvr)
		if err != nil {
			t.Fatalf("%s: ForResource: %v", names[i], err)
		}
		inf[i] = gi.Informer()
		starts = append(starts, f.Start)
	}
	forConfig(0)
	// From here on the process's client-go clients may speak CBOR, as under
	// KUBE_FEATURE_ClientsAllowCBOR=true KUBE_FEATURE_ClientsPreferCBOR=true,
	// until the gates' cleanups; cleanups run last in, first out, so the
	// CBOR factories, whose Shutdown is registered after, stop first.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, true)
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsPreferCBOR, true)
	forConfig(1)
	forConfig(2, informers.WithListMode(informers.ListModeConsistentList))
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(wires[3].wrap(c.cfg)), 0)
	t.Cleanup(dyn.Shutdown)
	inf[3] = dyn.ForResource(gvr).Informer()
	starts = append(starts, dyn.Start)

	logs := make([]*eventLog, len(names))
	for i := range inf {
		logs[i] = &eventLog{}
		if _, err := inf[i].AddEventHandler(logs[i].handler()); err != nil {
			t.Fatalf("%s: AddEventHandler: %v", names[i], err)
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	start := time.Now()
	for i, s := range starts {
		s(ctx.Done())
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		ok := cache.WaitForCacheSync(wctx.Done(), inf[i].HasSynced)
		wcancel()
		if !ok {
			t.Fatalf("%s: not synced after 60s", names[i])
		}
	}
	t.Logf("%d informers synced on %d gadgets in %v", len(inf), preexisting, time.Since(start).Round(time.Millisecond))

	// The same writes, seen by all four.
	const name = "cbor-w"
	o, err := writer.Create(ctx, cborGadget(c.ns, name, 100), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	rvs := []string{o.GetResourceVersion()}
	for step := 1; step <= 3; step++ {
		o.SetLabels(map[string]string{"step": fmt.Sprint(step)})
		if err := unstructured.SetNestedField(o.Object, int64(step), "spec", "replicas"); err != nil {
			t.Fatal(err)
		}
		if o, err = writer.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %d: %v", step, err)
		}
		rvs = append(rvs, o.GetResourceVersion())
	}
	if err := writer.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	key := c.ns + "/" + name
	seqs := make([]string, len(names))
	for i := range inf {
		checkSequence(t, logs[i], key, rvs)
		seqs[i] = fmt.Sprint(logs[i].forName(key))
	}
	for i := 1; i < len(names); i++ {
		if seqs[i] != seqs[0] {
			t.Errorf("events differ:\n%s: %s\n%s: %s", names[0], seqs[0], names[i], seqs[i])
		}
	}
	// Every variant added each preexisting gadget once, at the resource
	// version it was created with.
	for i := range inf {
		adds := 0
		for _, e := range logs[i].all() {
			if e.Type == "add" && strings.HasPrefix(e.Name, c.ns+"/pre-") {
				adds++
			}
		}
		if adds != preexisting {
			t.Errorf("%s: %d adds of the preexisting gadgets, want %d", names[i], adds, preexisting)
		}
	}

	// The caches end equal, object for object.
	var diffs []string
	if !eventually(30*time.Second, 100*time.Millisecond, func() bool {
		diffs = nil
		for i := 1; i < len(names); i++ {
			if d := diffStores(inf[0].GetStore(), inf[i].GetStore()); d != "" {
				diffs = append(diffs, fmt.Sprintf("%s against %s: %s", names[i], names[0], d))
			}
		}
		return len(diffs) == 0
	}) {
		t.Errorf("caches differ:\n%s", strings.Join(diffs, "\n"))
	}
	if n := len(inf[0].GetStore().ListKeys()); n != preexisting {
		t.Errorf("the caches hold %d gadgets, want %d", n, preexisting)
	}

	// A LIST in CBOR decodes to what a LIST in JSON does.
	viaJSON, err := writer.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("LIST in JSON: %v", err)
	}
	cborWire := &mediaWire{prefix: prefix}
	viaCBOR, err := dynamic.NewForConfigOrDie(cborWire.wrap(c.cfg)).Resource(gvr).Namespace(c.ns).List(ctx, metav1.ListOptions{ResourceVersion: viaJSON.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatalf("LIST in CBOR: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(viaJSON.Items, viaCBOR.Items) {
		t.Errorf("a LIST at resourceVersion %s differs in CBOR:\n%v\nin JSON:\n%v", viaJSON.GetResourceVersion(), viaCBOR.Items, viaJSON.Items)
	}
	_, jsonAnswers, jsonBytes := writeWire.summary()
	_, cborAnswers, cborBytes := cborWire.summary()
	if jsonAnswers["list "+e2eContentJSON] != 1 || len(jsonAnswers) != 1 {
		t.Errorf("the JSON LIST was answered %v, want once in %s", jsonAnswers, e2eContentJSON)
	}
	if cborAnswers["list "+e2eContentCBOR] != 1 || len(cborAnswers) != 1 {
		t.Errorf("the CBOR LIST was answered %v, want once in %s", cborAnswers, e2eContentCBOR)
	}
	if n := int64(len(viaJSON.Items)); n > 0 {
		t.Logf("LIST of %d gadgets: %d B/object in JSON, %d B/object in CBOR", n, jsonBytes["list "+e2eContentJSON]/n, cborBytes["list "+e2eContentCBOR]/n)
	}

	// What was on the wire.
	for i, w := range wires {
		asked, answers, bytes := w.summary()
		t.Logf("%s: asked %v, answered %v, bytes %v", names[i], asked, answers, bytes)
		wantAccept, wantMedia := e2eContentJSON, []string{e2eContentJSON}
		if i > 0 {
			wantAccept, wantMedia = e2eAcceptCBOR, []string{e2eContentCBOR, e2eContentCBORSeq}
		}
		for a, n := range asked {
			if a != wantAccept {
				t.Errorf("%s: %d requests asked for %q, want %q", names[i], n, a, wantAccept)
			}
		}
		total := 0
		for k, n := range answers {
			verb, media, _ := strings.Cut(k, " ")
			if !slices.Contains(wantMedia, media) {
				t.Errorf("%s: %d %s responses in %q, want %v (a server without the CBORServingAndStorage gate answers in JSON)", names[i], n, verb, media, wantMedia)
			}
			total += n
		}
		if total == 0 {
			t.Errorf("%s: no response recorded for %s", names[i], prefix)
		}
	}
	// The consistent-list variant read its initial state from LIST pages:
	// those were CBOR, not only the watch.
	if _, answers, _ := wires[2].summary(); answers["list "+e2eContentCBOR] == 0 {
		t.Errorf("%s: no LIST answered in %s: %v", names[2], e2eContentCBOR, answers)
	}
}

// cborGadget is a gadget with labels, an annotation and a spec.
func cborGadget(ns, name string, i int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"className": "kitchen", "replicas": int64(i%5 + 1), "paused": i%2 == 0},
	}}
	u.SetAPIVersion(exampleGadgetsGVR.GroupVersion().String())
	u.SetKind("Gadget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(map[string]string{"app.kubernetes.io/name": "gadget", "index": fmt.Sprint(i)})
	u.SetAnnotations(map[string]string{"example.com/note": "written in JSON, read in JSON and in CBOR"})
	return u
}
