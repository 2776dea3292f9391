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
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	informers "github.com/kubeinformers/informers"
	corev1informers "github.com/kubeinformers/informers/core/v1"
)

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}}
}

// TestShutdownLeavesNoGoroutines starts informers, shuts down, and checks
// that nothing of the factory keeps running.
func TestShutdownLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(syncCtx(t))
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(pod("a", "p")), 0)
	factory.Core().V1().Pods().Informer()
	factory.Apps().V1().Deployments().Informer()
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)
	cancel()
	factory.Shutdown()
}

// TestStartIsIncremental: Start runs only informers that are not running,
// and an informer requested after Start needs another Start.
func TestStartIsIncremental(t *testing.T) {
	// A second Start must not run a started informer again; client-go's
	// informer would only log that (not fail), so capture the log.
	var logMu sync.Mutex
	var logged []string
	logger := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		logged = append(logged, prefix+" "+args)
	}, funcr.Options{})
	klog.SetLogger(logger)
	defer klog.ClearLogger()

	ctx, cancel := context.WithCancel(klog.NewContext(syncCtx(t), logger))
	defer cancel()
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	defer factory.Shutdown()

	pods := factory.Core().V1().Pods().Informer()
	factory.StartWithContext(ctx)
	factory.StartWithContext(ctx)
	cms := factory.Core().V1().ConfigMaps().Informer()
	if got := factory.WaitForCacheSyncWithContext(ctx); len(got.Synced) != 1 || !got.Synced[reflect.TypeOf(&corev1.Pod{})] {
		t.Fatalf("WaitForCacheSync before the second Start = %v, want only pods", got.Synced)
	}
	if cms.HasSynced() {
		t.Fatal("an informer requested after Start ran without another Start")
	}
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)
	if !pods.HasSynced() || !cms.HasSynced() {
		t.Fatal("not every informer synced after the second Start")
	}
	// Shutdown waits for every informer goroutine, so all they log is in.
	cancel()
	factory.Shutdown()
	logMu.Lock()
	defer logMu.Unlock()
	for _, l := range logged {
		if strings.Contains(l, "run more than once") {
			t.Errorf("an informer was run twice: %s", l)
		}
	}
}

// TestStartAfterShutdown: Start does nothing once Shutdown has been called,
// and InformerFor still hands out (unstarted) informers, as in client-go.
func TestStartAfterShutdown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	factory.Shutdown()
	informer := factory.Core().V1().Pods().Informer()
	if informer == nil {
		t.Fatal("InformerFor after Shutdown returned nil")
	}
	factory.Start(make(chan struct{}))
	if res := factory.WaitForCacheSync(make(chan struct{})); len(res) != 0 {
		t.Fatalf("Start after Shutdown started %v", res)
	}
	factory.Shutdown() // again: must not block or panic
}

// TestConcurrentLifecycle races Start, Shutdown, InformerFor and the
// accessors; -race and goleak judge the outcome.
func TestConcurrentLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(pod("a", "p")), 0)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				switch (i + j) % 4 {
				case 0:
					factory.Core().V1().Pods().Lister()
				case 1:
					factory.StartWithContext(ctx)
				case 2:
					if _, err := factory.ForResource(resources[(i*20+j)%len(resources)].gvr); err != nil {
						t.Error(err)
					}
				case 3:
					factory.InformerFor(&corev1.Secret{}, func(c kubernetes.Interface, d time.Duration) cache.SharedIndexInformer {
						return corev1informers.NewSecretInformer(c, "", d, nil)
					})
				}
			}
		})
	}
	shutdownDone := make(chan struct{})
	go func() {
		time.Sleep(time.Millisecond)
		cancel()
		factory.Shutdown()
		close(shutdownDone)
	}()
	wg.Wait()
	<-shutdownDone
	factory.Shutdown()
	if a, b := factory.Core().V1().Pods().Informer(), factory.Core().V1().Pods().Informer(); a != b {
		t.Fatal("racing accessors produced two pod informers")
	}
}

func TestForResourceUnknown(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		hint string
	}{
		{schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, ""},
		{schema.GroupVersionResource{Version: "v1", Resource: "pod"}, `did you mean "pods"`},
		{schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicy"}, `"networkpolicies"`},
		{schema.GroupVersionResource{Group: "apps", Version: "v2", Resource: "deployments"}, "served in version v1"},
	} {
		inf, err := factory.ForResource(tc.gvr)
		if err == nil || inf != nil {
			t.Fatalf("ForResource(%v) = %v, %v; want an error", tc.gvr, inf, err)
		}
		if !errors.Is(err, informers.ErrUnknownResource) {
			t.Errorf("ForResource(%v): %v does not wrap ErrUnknownResource", tc.gvr, err)
		}
		for _, want := range []string{"no informer found for " + tc.gvr.String(), tc.hint} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ForResource(%v): error %q lacks %q", tc.gvr, err, want)
			}
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	client := fake.NewSimpleClientset()
	for _, tc := range []struct {
		name   string
		client kubernetes.Interface
		resync time.Duration
		opts   []informers.SharedInformerOption
		want   string
	}{
		{"nil client", nil, 0, nil, "kubernetes.Interface is nil"},
		{"negative resync", client, -time.Second, nil, "resync period -1s is negative"},
		{"nil resync key", client, 0, []informers.SharedInformerOption{informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{nil: time.Second})}, "WithCustomResyncConfig: a nil key"},
		{"negative custom resync", client, 0, []informers.SharedInformerOption{informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: -time.Second})}, "for *v1.Pod is negative"},
		{"bad namespace", client, 0, []informers.SharedInformerOption{informers.WithNamespace("Not_A_Namespace")}, `WithNamespace: "Not_A_Namespace"`},
		{"nil option", client, 0, []informers.SharedInformerOption{nil}, "option 0 is nil"},
	} {
		f, err := informers.New(tc.client, tc.resync, tc.opts...)
		if err == nil || f != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, %v; want an error containing %q", tc.name, f, err, tc.want)
		}
	}
	f, err := informers.New(client, time.Minute, informers.WithNamespace("default"),
		informers.WithTweakListOptions(nil), informers.WithTransform(nil))
	if err != nil || f == nil {
		t.Fatalf("New with valid options: %v", err)
	}
}

// TestNilTweakAndTransform: nil functions mean "none", as in client-go, and
// a nil resync key is ignored by the compatible constructor.
func TestNilTweakAndTransform(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	factory := informers.NewSharedInformerFactoryWithOptions(fake.NewSimpleClientset(pod("a", "p")), 0,
		informers.WithTweakListOptions(nil), informers.WithTransform(nil),
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{nil: time.Second}))
	defer factory.Shutdown()
	defer cancel()
	lister := factory.Core().V1().Pods().Lister()
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)
	p, err := lister.Pods("a").Get("p")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ManagedFields) != 1 {
		t.Errorf("a nil transform changed the object: %v", p.ManagedFields)
	}
}

// TestNilClient: a factory built around a nil clientset does not crash in
// an informer goroutine; the informer reports an error and never syncs.
func TestNilClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	factory := informers.NewSharedInformerFactory(nil, 0)
	factory.Core().V1().Pods().Informer()
	factory.StartWithContext(ctx)
	res := factory.WaitForCacheSyncWithContext(ctx)
	if res.Err == nil || res.Synced[reflect.TypeOf(&corev1.Pod{})] {
		t.Errorf("a nil client synced: %+v", res)
	}
	cancel()
	factory.Shutdown()
}

func TestTransform(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	var calls atomic.Int32
	strip := func(obj any) (any, error) {
		calls.Add(1)
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}
	factory := informers.NewSharedInformerFactoryWithOptions(fake.NewSimpleClientset(pod("a", "p"), pod("b", "q")), 0, informers.WithTransform(strip))
	defer factory.Shutdown()
	defer cancel()
	lister := factory.Core().V1().Pods().Lister()
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)
	pods, err := lister.List(labels.Everything())
	if err != nil || len(pods) != 2 {
		t.Fatalf("lister: %v, %v", pods, err)
	}
	for _, p := range pods {
		if p.ManagedFields != nil {
			t.Errorf("%s/%s kept its managedFields", p.Namespace, p.Name)
		}
	}
	if calls.Load() < 2 {
		t.Errorf("transform ran %d times, want at least once per object", calls.Load())
	}
}

// TestCustomResync: the type listed in WithCustomResyncConfig resyncs with
// its own period, other types keep the factory default. The periods are far
// apart (1 s configured, 1 h default) and handlers are added without a
// period of their own, so they inherit the informer's period: client-go
// raises handler periods under 1 s to 1 s and lowers the informer's check
// period to a handler's, so a period requested per handler, or one under
// 1 s, could not tell a configured period from any other.
func TestCustomResync(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	client := fake.NewSimpleClientset(pod("a", "p"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c", ResourceVersion: "1"}})
	factory := informers.NewSharedInformerFactoryWithOptions(client, time.Hour,
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: time.Second}))
	defer factory.Shutdown()
	defer cancel()

	// A resync delivers an update whose old and new objects are the same
	// version; nothing writes to the fake clientset, so every update is one.
	var podResyncs, cmResyncs atomic.Int32
	countResync := func(n *atomic.Int32) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
			if oldObj.(metav1.Object).GetResourceVersion() == newObj.(metav1.Object).GetResourceVersion() {
				n.Add(1)
			}
		}}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(countResync(&podResyncs)); err != nil {
		t.Fatal(err)
	}
	if _, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(countResync(&cmResyncs)); err != nil {
		t.Fatal(err)
	}
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)
	// Two pod resyncs take at least 2 s, in which a configmap informer on
	// the 1 s period (instead of the 1 h default) would have resynced too.
	waitFor(t, ctx, func() bool { return podResyncs.Load() >= 2 })
	if n := cmResyncs.Load(); n != 0 {
		t.Errorf("configmaps resynced %d times while pods resynced %d times; their period is the 1h default", n, podResyncs.Load())
	}
}
