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

package informers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	upstreamcorev1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// versioned is a Pod that carries a resource version, as a real server's
// do: client-go's fake clientset keeps the objects it is given as they
// are, so a test sets the version itself.
func versioned(ns, name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// startFactory starts f and waits for its caches; it stops them at the end
// of the test.
func startFactory(t *testing.T, f informers.Factory) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	f.StartWithContext(ctx)
	t.Cleanup(func() { cancel(); f.Shutdown() })
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func TestWaitForResourceVersionErrors(t *testing.T) {
	f, err := informers.New(fake.NewClientset(), 0, informers.WithNamespaces("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// No informer at all.
	err = f.WaitForResourceVersion(ctx, podsResource, "a", "10")
	if !errors.Is(err, informers.ErrUnknownResource) || !strings.Contains(err.Error(), "pods") {
		t.Fatalf("no informer: %v, want ErrUnknownResource naming pods", err)
	}
	// Requested, not started.
	f.Core().V1().Pods().Informer()
	err = f.WaitForResourceVersion(ctx, podsResource, "a", "10")
	if err == nil || !strings.Contains(err.Error(), "pods (v1): not started") {
		t.Fatalf("not started: %v", err)
	}
	// A version that cannot be ordered is refused before anything else.
	for _, rv := range []string{"", "abc", "0"} {
		if err := f.WaitForResourceVersion(ctx, podsResource, "a", rv); !errors.Is(err, informers.ErrResourceVersionNotComparable) {
			t.Errorf("version %q: %v, want ErrResourceVersionNotComparable", rv, err)
		}
	}
	startFactory(t, f)
	// A namespace none of the informers watches.
	err = f.WaitForResourceVersion(ctx, podsResource, "c", "10")
	if err == nil || !strings.Contains(err.Error(), `namespace "c"`) || !strings.Contains(err.Error(), "they watch a, b") {
		t.Fatalf("unwatched namespace: %v", err)
	}
}

// TestWaitForResourceVersionFakes is the documented behaviour with
// client-go's fake clientsets, which set no resource version on objects.
func TestWaitForResourceVersionFakes(t *testing.T) {
	client := fake.NewClientset()
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods()
	pods.Informer()
	ctx := startFactory(t, f)
	created, err := client.CoreV1().Pods("a").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.ResourceVersion != "" {
		t.Fatalf("the fake set resource version %q; this test documents that it sets none", created.ResourceVersion)
	}
	err = f.WaitForResourceVersion(ctx, podsResource, "a", created.ResourceVersion)
	if !errors.Is(err, informers.ErrResourceVersionNotComparable) || !strings.Contains(err.Error(), "fake") {
		t.Fatalf("wait for a fake's write: %v, want ErrResourceVersionNotComparable naming the fakes", err)
	}
	// Once the cache has applied an object without a version it holds
	// none either, and a version from elsewhere cannot be waited for.
	for {
		if _, err := pods.Lister().Pods("a").Get("p"); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.WaitForResourceVersion(short, podsResource, "a", "5"); !errors.Is(err, informers.ErrResourceVersionNotComparable) {
		t.Fatalf("wait on a cache without versions: %v, want ErrResourceVersionNotComparable", err)
	}
}

// TestWaitForResourceVersionEveryFormAndNamespace: the typed and the
// metadata informer of pods, each over two namespaces, are all waited
// for, each only on its watch of the namespace asked.
func TestWaitForResourceVersionEveryFormAndNamespace(t *testing.T) {
	client := fake.NewClientset()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme)
	f, err := informers.New(client, 0, informers.WithMetadataClient(meta), informers.WithNamespaces("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods()
	pods.Informer()
	metaPods, err := f.ForMetadata(podsResource)
	if err != nil {
		t.Fatal(err)
	}
	ctx := startFactory(t, f)

	if _, err := client.CoreV1().Pods("a").Create(ctx, versioned("a", "p", "100"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The metadata informer has a client of its own, which has not seen
	// the write: the wait names it, with what it wanted and saw.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err = f.WaitForResourceVersion(short, podsResource, "a", "100")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "pods (v1) [metadata] in namespace a") || !strings.Contains(err.Error(), "resource version 100 not reached, newest seen") {
		t.Fatalf("wait with the metadata informer behind: %v", err)
	}
	// The typed one has it by now.
	if _, err := pods.Lister().Pods("a").Get("p"); err != nil {
		t.Fatalf("typed lister: %v", err)
	}

	pm := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", ResourceVersion: "100"},
	}
	if err := meta.Tracker().Create(podsResource, pm, "a"); err != nil {
		t.Fatal(err)
	}
	ctx10, cancel10 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel10()
	if err := f.WaitForResourceVersion(ctx10, podsResource, "a", "100"); err != nil {
		t.Fatalf("wait once both have the write: %v", err)
	}
	// What the wait promises: every lister has it.
	if _, err := pods.Lister().Pods("a").Get("p"); err != nil {
		t.Fatalf("typed lister after the wait: %v", err)
	}
	if _, err := metaPods.Lister().ByNamespace("a").Get("p"); err != nil {
		t.Fatalf("metadata lister after the wait: %v", err)
	}
	// "" means every namespace: b's watch has seen nothing past its list,
	// and with a fake no bookmark ever comes.
	err = f.WaitForResourceVersion(short, podsResource, "", "100")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "in namespace b") {
		t.Fatalf("wait on every namespace: %v, want namespace b named", err)
	}
}

// TestWaitMetrics: a wait is observed, and a failed one counted, on each
// informer it reached, under a provider that takes wait metrics.
func TestWaitMetrics(t *testing.T) {
	p := newMemProvider()
	withProvider(t, p)
	name, err := cache.NewInformerName("rvwait-metrics")
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	f, err := informers.New(client, 0, informers.WithInformerName(name))
	if err != nil {
		t.Fatal(err)
	}
	f.Core().V1().Pods().Informer()
	ctx := startFactory(t, f)
	if _, err := client.CoreV1().Pods("a").Create(ctx, versioned("a", "p", "100"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx10, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.WaitForResourceVersion(ctx10, podsResource, "a", "100"); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if err := f.WaitForResourceVersion(short, podsResource, "a", "200"); err == nil {
		t.Fatal("a wait for a version never written returned nil")
	}
	id := informers.MetricsID{Factory: "rvwait-metrics", Form: informers.FormTyped, Resource: podsResource}
	if got := p.get("rv_wait", id, ""); got != 2 {
		t.Errorf("wait durations observed: %v, want 2", got)
	}
	if got := p.get("rv_wait_errors", id, ""); got != 1 {
		t.Errorf("failed waits counted: %v, want 1", got)
	}
}

func (p *memProvider) NewResourceVersionWaitMetric(id informers.MetricsID) informers.HistogramMetric {
	return p.metric("rv_wait", id, "")
}

func (p *memProvider) NewResourceVersionWaitErrorsMetric(id informers.MetricsID) informers.CounterMetric {
	return p.metric("rv_wait_errors", id, "")
}

var _ informers.ResourceVersionMetricsProvider = &memProvider{}

// TestHotPathAllocatesNothingAfterWait: a wait adds a handler to the
// informer and nothing to its accessors: Informer() and Lister() still
// allocate nothing.
func TestHotPathAllocatesNothingAfterWait(t *testing.T) {
	client := fake.NewClientset(versioned("a", "p", "7"))
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Core().V1().Pods().Informer()
	ctx := startFactory(t, f)
	if err := f.WaitForResourceVersion(ctx, podsResource, "a", "1"); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(){
		"Informer": func() { sink = f.Core().V1().Pods().Informer() },
		"Lister":   func() { sink = f.Core().V1().Pods().Lister() },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("after a wait, factory.Core().V1().Pods().%s() allocates %v times per call", name, n)
		}
	}
}

// TestWaitInformerFor: an informer built by InformerFor's newFunc is
// waited on as one cache, whatever the namespace.
func TestWaitInformerFor(t *testing.T) {
	client := fake.NewClientset()
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return upstreamcorev1.NewPodInformer(c, "", resync, cache.Indexers{})
	})
	ctx := startFactory(t, f)
	if _, err := client.CoreV1().Pods("a").Create(ctx, versioned("a", "p", "50"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx10, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.WaitForResourceVersion(ctx10, podsResource, "a", "50"); err != nil {
		t.Fatalf("wait on an InformerFor informer: %v", err)
	}
}
