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
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeinformers/informers/crcache"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// readCaches are the two caches the tests here compare: controller-runtime's
// own and crcache's, built the same way.
var readCaches = []struct {
	name string
	new  cache.NewCacheFunc
}{{"controller-runtime", cache.New}, {"crcache", crcache.New}}

// runCache builds a cache with newCache, starts it and waits for it to
// sync; the test's cleanup stops it and waits for Start to return.
func runCache(t *testing.T, ctx context.Context, newCache cache.NewCacheFunc, cfg *rest.Config, opts cache.Options) cache.Cache {
	t.Helper()
	c, err := newCache(cfg, opts)
	if err != nil {
		t.Fatalf("new cache: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("cache.Start: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("cache.Start did not return 30 s after its context ended")
		}
	})
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	return c
}

// answer is an error's type and text.
func answer(err error) string {
	if err == nil {
		return "no error"
	}
	return fmt.Sprintf("%T %q", err, err.Error())
}

// grant lets the limited user do verbs on resources in ns, and waits
// until it can list the first of them there.
func grant(t *testing.T, c *tcx, ns string, resources ...string) {
	t.Helper()
	rbac := c.client.RbacV1()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-crcache-reads"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: resources, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := rbac.Roles(ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-crcache-reads"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: testenv.LimitedUser}},
	}
	if _, err := rbac.RoleBindings(ns).Create(c.ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	limited := kubernetes.NewForConfigOrDie(env.LimitedConfig())
	if !eventually(30*time.Second, 20*time.Millisecond, func() bool {
		_, err := limited.CoreV1().RESTClient().Get().Namespace(ns).Resource(resources[0]).Param("limit", "1").Do(c.ctx).Raw()
		return err == nil
	}) {
		t.Fatalf("the grant of %v in %s did not take effect within 30 s", resources, ns)
	}
}

// TestCRCacheReadsOutsideNamespaces runs the same reads on
// controller-runtime's cache.New and on crcache.New, as a user who may
// read ConfigMaps in namespace a only, with DefaultNamespaces {a}, with
// and without ReaderFailOnMissingInformer: a Get or List in namespace b,
// of ConfigMaps and of Secrets (which the user may list nowhere), in
// every form, answers controller-runtime's "unknown namespace" error at
// once, the same on both, and crcache builds no informer for them. Before
// the namespace was checked first, crcache built the Secrets informer in
// a, which the server refuses, and waited for it until the read's
// deadline.
func TestCRCacheReadsOutsideNamespaces(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	a, b := c.newNamespace("crread-a"), c.newNamespace("crread-b")
	grant(t, c, a, "configmaps")
	mkConfigMaps(t, c, a, "cm", 1)
	mkConfigMaps(t, c, b, "cm", 1)

	metadataSecret := func() *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return m
	}
	reads := []struct {
		name string
		do   func(context.Context, cache.Cache) error
	}{
		{"Get ConfigMap in a", func(ctx context.Context, r cache.Cache) error {
			return r.Get(ctx, client.ObjectKey{Namespace: a, Name: "cm-0"}, &corev1.ConfigMap{})
		}},
		{"Get ConfigMap in b", func(ctx context.Context, r cache.Cache) error {
			return r.Get(ctx, client.ObjectKey{Namespace: b, Name: "cm-0"}, &corev1.ConfigMap{})
		}},
		{"List ConfigMaps in b", func(ctx context.Context, r cache.Cache) error {
			return r.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(b))
		}},
		{"Get Secret in b", func(ctx context.Context, r cache.Cache) error {
			return r.Get(ctx, client.ObjectKey{Namespace: b, Name: "s"}, &corev1.Secret{})
		}},
		{"List Secrets in b", func(ctx context.Context, r cache.Cache) error {
			return r.List(ctx, &corev1.SecretList{}, client.InNamespace(b))
		}},
		{"Get metadata Secret in b", func(ctx context.Context, r cache.Cache) error {
			return r.Get(ctx, client.ObjectKey{Namespace: b, Name: "s"}, metadataSecret())
		}},
	}
	for _, failOnMissing := range []bool{false, true} {
		answers := map[string][]string{}
		for _, cc := range readCaches {
			ctx, cancel := context.WithCancel(c.ctx)
			r := runCache(t, ctx, cc.new, env.LimitedConfig(), cache.Options{
				DefaultNamespaces:           map[string]cache.Config{a: {}},
				ReaderFailOnMissingInformer: failOnMissing,
			})
			if failOnMissing {
				// The read in a needs the informer.
				if _, err := r.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
					t.Fatalf("%s: GetInformer(ConfigMap): %v", cc.name, err)
				}
			}
			for _, read := range reads[1:] {
				rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
				start := time.Now()
				err := read.do(rctx, r)
				took := time.Since(start)
				rcancel()
				answers[cc.name] = append(answers[cc.name], answer(err))
				if took > 5*time.Second {
					t.Errorf("%s, ReaderFailOnMissingInformer %v: %s took %v", cc.name, failOnMissing, read.name, took.Round(time.Millisecond))
				}
				if err == nil || !strings.Contains(err.Error(), "unknown namespace") {
					t.Errorf("%s, ReaderFailOnMissingInformer %v: %s = %v, want the unknown namespace error", cc.name, failOnMissing, read.name, err)
				}
			}
			if err := reads[0].do(ctx, r); err != nil {
				t.Errorf("%s, ReaderFailOnMissingInformer %v: %s: %v", cc.name, failOnMissing, reads[0].name, err)
			}
			if crc, ok := r.(*crcache.Cache); ok {
				for id := range crc.SyncStatus() {
					if id.Resource.Resource == "secrets" {
						t.Errorf("ReaderFailOnMissingInformer %v: reads outside the namespaces built an informer of %v", failOnMissing, id.Resource)
					}
				}
			}
			cancel()
		}
		for i, read := range reads[1:] {
			if got, want := answers["crcache"][i], answers["controller-runtime"][i]; got != want {
				t.Errorf("ReaderFailOnMissingInformer %v, %s: crcache answers %s, controller-runtime %s", failOnMissing, read.name, got, want)
			}
		}
		t.Logf("ReaderFailOnMissingInformer %v: %q", failOnMissing, answers["crcache"])
	}
}

// TestCRCacheClusterScopedListInNamespace lists Namespaces, a
// cluster-scoped kind, with InNamespace on controller-runtime's cache.New
// and on crcache.New, watching every namespace and with DefaultNamespaces:
// controller-runtime looks the namespace up in the namespace index, where
// no cluster-scoped object is, and returns none; crcache returns the same.
// A List without a namespace and a Get with one find the namespace on
// both.
func TestCRCacheClusterScopedListInNamespace(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	a := c.newNamespace("crscope-a")
	sel := client.MatchingLabelsSelector{Selector: labels.Everything()}
	for _, opts := range []cache.Options{{}, {DefaultNamespaces: map[string]cache.Config{a: {}}}} {
		answers := map[string][]string{}
		for _, cc := range readCaches {
			ctx, cancel := context.WithCancel(c.ctx)
			r := runCache(t, ctx, cc.new, c.cfg, opts)
			found := func(list *corev1.NamespaceList, err error) string {
				if err != nil {
					return answer(err)
				}
				has := slices.ContainsFunc(list.Items, func(ns corev1.Namespace) bool { return ns.Name == a })
				return fmt.Sprintf("%t items, has %s: %t", len(list.Items) > 0, a, has)
			}
			var inNS, inNSLabel, all corev1.NamespaceList
			errInNS := r.List(ctx, &inNS, client.InNamespace(a))
			errInNSLabel := r.List(ctx, &inNSLabel, client.InNamespace(a), sel)
			errAll := r.List(ctx, &all)
			errGet := r.Get(ctx, client.ObjectKey{Namespace: a, Name: a}, &corev1.Namespace{})
			answers[cc.name] = []string{found(&inNS, errInNS), found(&inNSLabel, errInNSLabel), found(&all, errAll), answer(errGet)}
			cancel()
		}
		t.Logf("DefaultNamespaces %v: controller-runtime %q, crcache %q", opts.DefaultNamespaces, answers["controller-runtime"], answers["crcache"])
		if want := []string{"false items, has " + a + ": false", "false items, has " + a + ": false", "true items, has " + a + ": true", "no error"}; !slices.Equal(answers["controller-runtime"], want) {
			t.Errorf("controller-runtime answers %q, the test expects %q", answers["controller-runtime"], want)
		}
		if !slices.Equal(answers["crcache"], answers["controller-runtime"]) {
			t.Errorf("DefaultNamespaces %v: crcache answers %q, controller-runtime %q", opts.DefaultNamespaces, answers["crcache"], answers["controller-runtime"])
		}
	}
}

// TestCRCacheSetNamespacesSynced adds namespace b to a running crcache
// whose requests for b's ConfigMaps the server answers a second late:
// SetNamespaces returns once b has synced, so that a Get and a List in b
// right after see its objects; a read in b answers "unknown namespace"
// before the call, waits while it runs (the informer hands b's objects to
// the handlers before it returns), and is never NotFound or an empty
// list.
func TestCRCacheSetNamespacesSynced(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	a, b := c.newNamespace("crsync-a"), c.newNamespace("crsync-b")
	mkConfigMaps(t, c, a, "seed", 1)
	const seeds = 5
	mkConfigMaps(t, c, b, "seed", seeds)

	cfg := rest.CopyConfig(c.cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			// The first list may be a watch (watch-list): every request.
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/namespaces/"+b+"/configmaps") {
				time.Sleep(time.Second)
			}
			return rt.RoundTrip(r)
		})
	})
	r := runCache(t, c.ctx, crcache.New, cfg, cache.Options{DefaultNamespaces: map[string]cache.Config{a: {}}})
	crc := r.(*crcache.Cache)
	if err := crc.Get(c.ctx, client.ObjectKey{Namespace: a, Name: "seed-0"}, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}

	key := client.ObjectKey{Namespace: b, Name: "seed-0"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int{}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			what := "found"
			if err := crc.Get(c.ctx, key, &corev1.ConfigMap{}); err != nil {
				what = "Get: " + err.Error()
				if apierrors.IsNotFound(err) {
					what = "Get: NotFound"
				}
			}
			var list corev1.ConfigMapList
			var listed string
			if err := crc.List(c.ctx, &list, client.InNamespace(b)); err != nil {
				listed = "List: " + err.Error()
			} else {
				listed = fmt.Sprintf("List: %d items", len(list.Items))
			}
			mu.Lock()
			seen[what]++
			seen[listed]++
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	})
	start := time.Now()
	err := crc.SetNamespaces(a, b)
	took := time.Since(start)
	getErr := crc.Get(c.ctx, key, &corev1.ConfigMap{})
	var list corev1.ConfigMapList
	listErr := crc.List(c.ctx, &list, client.InNamespace(b))
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("SetNamespaces(a, b): %v", err)
	}
	t.Logf("SetNamespaces(a, b) took %v; right after: Get %v, List %d items (%v); reads meanwhile: %v", took.Round(time.Millisecond), getErr, len(list.Items), listErr, seen)
	if getErr != nil || listErr != nil || len(list.Items) != seeds {
		t.Errorf("right after SetNamespaces(a, b): Get = %v, List = %d items, %v; want the object and %d items", getErr, len(list.Items), listErr, seeds)
	}
	for what := range seen {
		if what == "Get: NotFound" || (strings.HasPrefix(what, "List: ") && strings.HasSuffix(what, " items") && what != fmt.Sprintf("List: %d items", seeds)) {
			t.Errorf("a read in b while SetNamespaces ran answered %q (%d times): want unknown namespace, or all of b", what, seen[what])
		}
	}
}

// TestCRCacheSetNamespacesRollback runs crcache as a user who may read
// ConfigMaps and Secrets in a and b, and only ConfigMaps in c, with
// informers of both kinds: SetNamespaces(a, c) adds c to the ConfigMaps
// informer, then fails on the Secrets one; it returns an error naming the
// Secret kind and namespace c with the server's refusal, and takes c out
// of the ConfigMaps informer again: reads in c are outside the cache, a
// List of every namespace has none of c's objects. A later
// SetNamespaces(a, b) works.
func TestCRCacheSetNamespacesRollback(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	a, b, cNS := c.newNamespace("crroll-a"), c.newNamespace("crroll-b"), c.newNamespace("crroll-c")
	grant(t, c, a, "configmaps", "secrets")
	grant(t, c, b, "configmaps", "secrets")
	grant(t, c, cNS, "configmaps")
	for _, ns := range []string{a, b, cNS} {
		mkConfigMaps(t, c, ns, "cm", 2)
	}
	r := runCache(t, c.ctx, crcache.New, env.LimitedConfig(), cache.Options{DefaultNamespaces: map[string]cache.Config{a: {}}})
	crc := r.(*crcache.Cache)
	if err := crc.Get(c.ctx, client.ObjectKey{Namespace: a, Name: "cm-0"}, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if err := crc.List(c.ctx, &corev1.SecretList{}); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- crc.SetNamespaces(a, cNS) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("SetNamespaces(a, c) has not returned within 60 s")
	}
	t.Logf("SetNamespaces(a, c) = %v", err)
	if err == nil || !strings.Contains(err.Error(), "Kind=Secret") || !strings.Contains(err.Error(), "namespace "+cNS) || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("SetNamespaces(a, c) = %v, want an error naming the Secret kind, namespace %s and the refusal", err, cNS)
	}
	getErr := crc.Get(c.ctx, client.ObjectKey{Namespace: cNS, Name: "cm-0"}, &corev1.ConfigMap{})
	if getErr == nil || !strings.Contains(getErr.Error(), "unknown namespace") {
		t.Errorf("after the failed SetNamespaces, Get in c = %v, want the unknown namespace error", getErr)
	}
	var all corev1.ConfigMapList
	if err := crc.List(c.ctx, &all); err != nil {
		t.Fatal(err)
	}
	namespaces := map[string]int{}
	for _, cm := range all.Items {
		namespaces[cm.Namespace]++
	}
	if namespaces[cNS] != 0 || namespaces[a] != 2 {
		t.Errorf("after the failed SetNamespaces, the List of every namespace holds %v, want a's 2 ConfigMaps and none of c's", namespaces)
	}
	if err := crc.SetNamespaces(a, b); err != nil {
		t.Fatalf("SetNamespaces(a, b): %v", err)
	}
	var inB corev1.ConfigMapList
	if err := crc.List(c.ctx, &inB, client.InNamespace(b)); err != nil || len(inB.Items) != 2 {
		t.Errorf("after SetNamespaces(a, b), List in b = %d items, %v; want 2", len(inB.Items), err)
	}
}
