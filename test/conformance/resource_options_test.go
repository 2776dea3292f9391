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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	upstream "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

var (
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

func labelledPod(ns, name, app string) *corev1.Pod {
	p := pod(ns, name)
	p.Labels = map[string]string{"app": app}
	return p
}

// TestResourceOptionsBadInput: every bad value is an error from New that
// names the resource and the value; the client-go compatible constructor
// logs and goes on.
func TestResourceOptionsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []informers.SharedInformerOption
		want []string
	}{
		{"label selector", []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{LabelSelector: "app in (web"})}, []string{"pods", `LabelSelector "app in (web"`}},
		{"field selector", []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{FieldSelector: "spec.nodeName"})}, []string{"pods", `FieldSelector "spec.nodeName"`}},
		{"namespace name", []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{Namespaces: []string{"Bad_NS"}})}, []string{"pods", `"Bad_NS" is not a valid namespace name`}},
		{"duplicate namespace", []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{Namespaces: []string{"a", "a"}})}, []string{"pods", `namespace "a" is given twice`}},
		{"cluster-scoped", []informers.SharedInformerOption{informers.WithResourceOptions(nodesGVR, informers.ResourceOptions{Namespaces: []string{"a"}})}, []string{"nodes", "cluster-scoped"}},
		{"typo", []informers.SharedInformerOption{informers.WithResourceOptions(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployment"}, informers.ResourceOptions{})}, []string{"deployment", `did you mean "deployments"`}},
		{"negative resync", []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{ResyncPeriod: -time.Second})}, []string{"pods", "ResyncPeriod -1s is negative"}},
		{"twice", []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{}), informers.WithResourceOptions(podsGVR, informers.ResourceOptions{})}, []string{"pods", "given twice"}},
		{"namespace index", []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})}, []string{"pods", `"namespace" is the namespace index`}},
		{"both namespace options", []informers.SharedInformerOption{informers.WithNamespace("a"), informers.WithNamespaces("b", "c")}, []string{`WithNamespace("a")`, `WithNamespaces(["b" "c"])`}},
		{"WithNamespaces bad", []informers.SharedInformerOption{informers.WithNamespaces("a", "a", "B")}, []string{"WithNamespaces", `"a" is given twice`, `"B" is not a valid`}},
		{"WithNamespaces empty", []informers.SharedInformerOption{informers.WithNamespaces()}, []string{"WithNamespaces([]): no namespace given"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := informers.New(fake.NewClientset(), 0, tc.opts...)
			if err == nil {
				t.Fatal("New returned no error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New: %v\nwant it to contain %q", err, want)
				}
			}
			// The compatible constructor logs and returns a usable factory.
			f := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, tc.opts...)
			if f.Core().V1().Pods().Informer() == nil {
				t.Fatal("NewSharedInformerFactoryWithOptions returned a factory without informers")
			}
		})
	}
	// A custom resource with a dynamic client is servable.
	if _, err := informers.New(fake.NewClientset(), 0, informers.WithDynamicClient(newDynamic()),
		informers.WithResourceOptions(widgetsGVR, informers.ResourceOptions{Namespaces: []string{"a", "b"}})); err != nil {
		t.Errorf("options for a custom resource with a dynamic client: %v", err)
	}
	// Without one, a typed binding (gensupport.Bind, after New) may serve
	// it, so New accepts it; Notices names it while nothing does.
	f, err := informers.New(fake.NewClientset(), 0, informers.WithResourceOptions(widgetsGVR, informers.ResourceOptions{LabelSelector: "a=b"}))
	if err != nil {
		t.Fatalf("options for a custom resource without a dynamic client: %v", err)
	}
	if n := f.Notices(); len(n) != 1 || !strings.Contains(n[0], "widgets") || !strings.Contains(n[0], "no informer serves it") {
		t.Errorf("Notices() = %q, want one naming widgets as served by no informer", n)
	}
}

// listRecorder records the list options of every list and watch request.
type listRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *listRecorder) install(c *fake.Clientset) {
	react := func(a k8stesting.Action) {
		var o metav1.ListOptions
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			o = a.ListOptions
		case k8stesting.WatchActionImpl:
			o = a.ListOptions
		default:
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen = append(r.seen, fmt.Sprintf("%s %s ns=%q labels=%q fields=%q", a.GetVerb(), a.GetResource().Resource, a.GetNamespace(), o.LabelSelector, o.FieldSelector))
	}
	c.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) { react(a); return false, nil, nil })
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watchIface, error) { react(a); return false, nil, nil })
}

func (r *listRecorder) requests(resource string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.seen {
		if strings.Contains(s, " "+resource+" ") {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestResourceOptionsPrecedence checks each precedence rule of
// ResourceOptions on the requests sent and on what is cached.
func TestResourceOptionsPrecedence(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	client := fake.NewClientset(labelledPod("a", "web", "web"), labelledPod("a", "db", "db"), labelledPod("b", "web2", "web"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"}})
	rec := &listRecorder{}
	rec.install(client)
	factoryTransform := func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			o.SetAnnotations(map[string]string{"by": "factory"})
		}
		return obj, nil
	}
	podTransform := func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			o.SetAnnotations(map[string]string{"by": "pods"})
		}
		return obj, nil
	}
	byApp := cache.Indexers{"app": func(obj any) ([]string, error) { return []string{obj.(metav1.Object).GetLabels()["app"]}, nil }}
	f, err := informers.New(client, 0,
		informers.WithNamespace("a"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "tier!=cache" }),
		informers.WithTransform(factoryTransform),
		informers.WithResourceOptions(podsGVR, informers.ResourceOptions{
			Namespaces:    []string{"a", "b"},
			LabelSelector: "app=web",
			Transform:     podTransform,
			Indexers:      byApp,
		}),
		informers.WithResourceOptions(configMapsGVR, informers.ResourceOptions{
			FieldSelector: "metadata.name=cm",
			// Runs last: sees the factory tweak and the field selector.
			TweakListOptions: func(o *metav1.ListOptions) { o.LabelSelector += ",seen-by=tweak"; o.FieldSelector += ",seen=1" },
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	defer cancel()
	pods := f.Core().V1().Pods()
	pods.Informer()
	f.Core().V1().ConfigMaps().Informer()
	secrets := f.Core().V1().Secrets().Informer()
	f.StartWithContext(ctx)
	mustSync(t, ctx, f)

	// Namespaces replace WithNamespace; selectors AND the factory tweak.
	wantPods := []string{
		`list pods ns="a" labels="tier!=cache,app=web" fields=""`, `list pods ns="b" labels="tier!=cache,app=web" fields=""`,
		`watch pods ns="a" labels="tier!=cache,app=web" fields=""`, `watch pods ns="b" labels="tier!=cache,app=web" fields=""`,
	}
	settle(t, ctx, f) // every watch has started
	if got := rec.requests("pods"); !slices.Equal(got, wantPods) {
		t.Errorf("pods requests:\n got  %q\n want %q", got, wantPods)
	}
	// The per-resource tweak runs last.
	wantCMs := []string{`list configmaps ns="a" labels="tier!=cache,seen-by=tweak" fields="metadata.name=cm,seen=1"`, `watch configmaps ns="a" labels="tier!=cache,seen-by=tweak" fields="metadata.name=cm,seen=1"`}
	if got := rec.requests("configmaps"); !slices.Equal(got, wantCMs) {
		t.Errorf("configmaps requests:\n got  %q\n want %q", got, wantCMs)
	}
	// Everything else keeps the factory's settings.
	wantSecrets := []string{`list secrets ns="a" labels="tier!=cache" fields=""`, `watch secrets ns="a" labels="tier!=cache" fields=""`}
	if got := rec.requests("secrets"); !slices.Equal(got, wantSecrets) {
		t.Errorf("secrets requests:\n got  %q\n want %q", got, wantSecrets)
	}
	// The lister sees the union of namespaces, filtered by the selector.
	all, err := pods.Lister().List(everything())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range all {
		names = append(names, p.Namespace+"/"+p.Name)
		if p.Annotations["by"] != "pods" {
			t.Errorf("pod %s/%s: transform %q ran, want the per-resource one", p.Namespace, p.Name, p.Annotations["by"])
		}
	}
	slices.Sort(names)
	if want := []string{"a/web", "b/web2"}; !slices.Equal(names, want) {
		t.Errorf("pods lister = %v, want %v", names, want)
	}
	if inB, _ := pods.Lister().Pods("b").List(everything()); len(inB) != 1 {
		t.Errorf("pods lister in namespace b = %d objects, want 1", len(inB))
	}
	byIndex, err := pods.Informer().GetIndexer().ByIndex("app", "web")
	if err != nil || len(byIndex) != 2 {
		t.Errorf("ByIndex(app, web) = %d objects, %v; want 2", len(byIndex), err)
	}
	s, _, _ := secrets.GetStore().GetByKey("a/s")
	if s.(*corev1.Secret).Annotations["by"] != "factory" {
		t.Errorf("secret transform = %q, want the factory's", s.(*corev1.Secret).Annotations["by"])
	}
}

// TestResourceOptionsResyncAndInformerFor: the per-resource resync period
// beats WithCustomResyncConfig and the default, and per-resource resync
// and transform reach types requested through InformerFor with a custom
// NewInformerFunc.
func TestResourceOptionsResyncAndInformerFor(t *testing.T) {
	var mu sync.Mutex
	got := map[string]time.Duration{}
	capture := func(name string) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		return func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			mu.Lock()
			got[name] = resync
			mu.Unlock()
			return cache.NewSharedIndexInformer(cache.NewListWatchFromClient(c.CoreV1().RESTClient(), name, "", everythingFields()), &corev1.Pod{}, resync, cache.Indexers{})
		}
	}
	f, err := informers.New(fake.NewClientset(), time.Hour,
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: 2 * time.Hour, &corev1.Secret{}: 3 * time.Hour}),
		informers.WithResourceOptions(podsGVR, informers.ResourceOptions{ResyncPeriod: 5 * time.Minute}),
	)
	if err != nil {
		t.Fatal(err)
	}
	pods := f.InformerFor(&corev1.Pod{}, capture("pods"))
	f.InformerFor(&corev1.Secret{}, capture("secrets"))
	f.InformerFor(&corev1.ConfigMap{}, capture("configmaps"))
	want := map[string]time.Duration{"pods": 5 * time.Minute, "secrets": 3 * time.Hour, "configmaps": time.Hour}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("resync of %s = %v, want %v", k, got[k], v)
		}
	}
	// The accessor shares what InformerFor built.
	if f.Core().V1().Pods().Informer() != pods {
		t.Error("the pods accessor did not share the InformerFor informer")
	}
	// The per-resource transform reaches an InformerFor informer too.
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer cancel()
	client := fake.NewClientset(pod("a", "p"))
	var calls atomic.Int32
	f2, err := informers.New(client, 0, informers.WithResourceOptions(podsGVR, informers.ResourceOptions{Transform: func(o any) (any, error) {
		calls.Add(1)
		return o, nil
	}}))
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Shutdown()
	defer cancel()
	f2.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.CoreV1().Pods("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watchIface, error) {
				return c.CoreV1().Pods("").Watch(ctx, o)
			},
		}
		return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c), &corev1.Pod{}, resync, cache.Indexers{})
	})
	f2.StartWithContext(ctx)
	mustSync(t, ctx, f2)
	if calls.Load() == 0 {
		t.Error("the per-resource transform did not run on an InformerFor informer")
	}
}

// TestSeveralNamespaces: WithNamespaces lists and watches each namespace,
// never the whole cluster; listers, the namespace index, HasSynced and
// handlers behave as on one informer; cluster-scoped resources are
// unaffected; the composite goes away cleanly.
func TestSeveralNamespaces(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(syncCtx(t))
	client := fake.NewClientset(pod("a", "p1"), pod("b", "p2"), pod("c", "p3"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	rec := &listRecorder{}
	rec.install(client)
	f, err := informers.New(client, 0, informers.WithNamespaces("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods()
	var mu sync.Mutex
	var events []string
	reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, "add "+obj.(*corev1.Pod).Namespace+"/"+obj.(*corev1.Pod).Name)
		},
		DeleteFunc: func(obj any) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, "delete "+obj.(*corev1.Pod).Name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	nodes := f.Core().V1().Nodes().Informer()
	f.StartWithContext(ctx)
	mustSync(t, ctx, f)
	if !pods.Informer().HasSynced() {
		t.Fatal("HasSynced is false after WaitForCacheSync")
	}
	// A handler's registration syncs once it has seen the initial list.
	waitFor(t, ctx, reg.HasSynced)
	for _, r := range rec.requests("pods") {
		if strings.Contains(r, `ns=""`) {
			t.Errorf("cluster-wide request for pods: %s", r)
		}
	}
	if got := rec.requests("nodes"); len(got) == 0 || !strings.Contains(got[0], `ns=""`) {
		t.Errorf("nodes requests = %q; want cluster-wide", got)
	}
	if n := len(nodes.GetStore().List()); n != 1 {
		t.Errorf("nodes cached = %d, want 1", n)
	}
	all, _ := pods.Lister().List(everything())
	if len(all) != 2 {
		t.Errorf("lister over a and b = %d pods, want 2", len(all))
	}
	if _, err := pods.Lister().Pods("c").Get("p3"); err == nil {
		t.Error("a pod of namespace c is in the cache")
	}
	if _, err := pods.Lister().Pods("b").Get("p2"); err != nil {
		t.Errorf("Get(b/p2): %v", err)
	}
	if objs, _ := pods.Informer().GetIndexer().ByIndex(cache.NamespaceIndex, "a"); len(objs) != 1 {
		t.Errorf("namespace index for a = %d, want 1", len(objs))
	}
	if _, err := client.CoreV1().Pods("b").Create(ctx, pod("b", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("c").Create(ctx, pod("c", "ignored"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("a").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, f)
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	slices.Sort(got)
	if want := []string{"add a/p1", "add b/new", "add b/p2", "delete p1"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if !f.RemoveInformer(podsGVR) {
		t.Error("RemoveInformer of the several-namespace pods informer = false")
	}
	cancel()
	f.Shutdown()
}

// TestDifferentialPerResourceOptions: one factory with per-resource options
// makes the same requests and caches the same objects as one client-go
// factory per resource, each configured for that resource.
func TestDifferentialPerResourceOptions(t *testing.T) {
	objs := func() []runtime.Object {
		return []runtime.Object{labelledPod("a", "web", "web"), labelledPod("a", "db", "db"), labelledPod("b", "web2", "web"),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm", Labels: map[string]string{"app": "web"}}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "cm2"}}}
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer cancel()
	oursClient := fake.NewClientset(objs()...)
	ours, err := informers.New(oursClient, 0,
		informers.WithResourceOptions(podsGVR, informers.ResourceOptions{Namespaces: []string{"a"}, LabelSelector: "app=web"}),
		informers.WithResourceOptions(configMapsGVR, informers.ResourceOptions{FieldSelector: "metadata.namespace=b"}))
	if err != nil {
		t.Fatal(err)
	}
	upPodsClient, upCMClient := fake.NewClientset(objs()...), fake.NewClientset(objs()...)
	upPods := upstream.NewSharedInformerFactoryWithOptions(upPodsClient, 0, upstream.WithNamespace("a"),
		upstream.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }))
	upCMs := upstream.NewSharedInformerFactoryWithOptions(upCMClient, 0,
		upstream.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.namespace=b" }))
	// Shutdown waits for the informers to stop, so cancel first: otherwise
	// each Shutdown waits for syncCtx's deadline.
	defer func() {
		cancel()
		ours.Shutdown()
		upPods.Shutdown()
		upCMs.Shutdown()
	}()

	oursP, oursC := ours.Core().V1().Pods().Informer(), ours.Core().V1().ConfigMaps().Informer()
	upP, upC := upPods.Core().V1().Pods().Informer(), upCMs.Core().V1().ConfigMaps().Informer()
	ours.StartWithContext(ctx)
	upPods.Start(ctx.Done())
	upCMs.Start(ctx.Done())
	mustSync(t, ctx, ours)
	upPods.WaitForCacheSync(ctx.Done())
	upCMs.WaitForCacheSync(ctx.Done())
	// Every informer has listed and started its watch: ours has two.
	waitFor(t, ctx, func() bool {
		return watches(oursClient) == 2 && watches(upPodsClient) == 1 && watches(upCMClient) == 1
	})

	only := func(c *fake.Clientset, resource string) []string {
		var out []string
		for _, a := range actions(c) {
			if strings.Contains(a, "Resource="+resource) {
				out = append(out, a)
			}
		}
		return out
	}
	if got, want := only(oursClient, "pods"), only(upPodsClient, "pods"); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("pods requests:\n ours     %q\n upstream %q", got, want)
	}
	if got, want := only(oursClient, "configmaps"), only(upCMClient, "configmaps"); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("configmaps requests:\n ours     %q\n upstream %q", got, want)
	}
	for _, pair := range []struct {
		what     string
		ours, up cache.SharedIndexInformer
	}{{"pods", oursP, upP}, {"configmaps", oursC, upC}} {
		if got, want := storeKeys(pair.ours.GetStore()), storeKeys(pair.up.GetStore()); !slices.Equal(got, want) {
			t.Errorf("%s cache: ours %v, upstream %v", pair.what, got, want)
		}
	}
}

type watchIface = watch.Interface

func everythingFields() fields.Selector { return fields.Everything() }
