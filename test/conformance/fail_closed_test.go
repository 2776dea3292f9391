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
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// requestLog records every list and watch a fake clientset serves, with
// its namespace and selectors.
type requestLog struct {
	mu   sync.Mutex
	reqs []k8stesting.Action
}

func (l *requestLog) install(c *fake.Clientset) {
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "list" {
			l.mu.Lock()
			l.reqs = append(l.reqs, a)
			l.mu.Unlock()
		}
		return false, nil, nil
	})
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, a)
		l.mu.Unlock()
		return false, nil, nil
	})
}

func (l *requestLog) of(resource string) []k8stesting.Action {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []k8stesting.Action
	for _, a := range l.reqs {
		if a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

// TestFailClosed: through the client-go compatible constructor, which
// cannot return an error, an invalid value of an option that narrows what
// is listed never widens it: the informers it was meant for make no
// request at all (no cluster-wide, unfiltered or unsharded LIST or WATCH),
// WaitForCacheSync reports them as not synced without waiting, and Ready
// names them with the option's error. Informers the option does not
// concern run as usual. New returns the same mistakes as an error.
func TestFailClosed(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, tc := range []struct {
		name string
		opts []informers.SharedInformerOption
		// refused and running are resources; nodes are cluster-scoped.
		refused, running []string
		want             string
	}{
		{"WithNamespaces with a bad name", []informers.SharedInformerOption{informers.WithNamespaces("a", "Not_A_Namespace")}, []string{"pods", "configmaps"}, []string{"nodes"}, "Not_A_Namespace"},
		{"WithNamespaces with none", []informers.SharedInformerOption{informers.WithNamespaces()}, []string{"pods", "configmaps"}, []string{"nodes"}, "no namespace given"},
		{"WithNamespace and WithNamespaces", []informers.SharedInformerOption{informers.WithNamespace("a"), informers.WithNamespaces("b")}, []string{"pods", "configmaps"}, []string{"nodes"}, "both given"},
		{"a bad label selector", []informers.SharedInformerOption{informers.WithResourceOptions(pods, informers.ResourceOptions{LabelSelector: "app in (", Namespaces: []string{"a"}})}, []string{"pods"}, []string{"configmaps", "nodes"}, "LabelSelector"},
		{"resource options given twice", []informers.SharedInformerOption{informers.WithResourceOptions(pods, informers.ResourceOptions{LabelSelector: "app=web"}), informers.WithResourceOptions(pods, informers.ResourceOptions{LabelSelector: "app=db"})}, []string{"pods"}, []string{"configmaps", "nodes"}, "given twice"},
		{"WithShard(sharding.FieldUID, 3, 3)", []informers.SharedInformerOption{informers.WithShard(sharding.FieldUID, 3, 3)}, []string{"pods", "configmaps", "nodes"}, nil, "WithShard(sharding.FieldUID, 3, 3)"},
		{"WithShard(sharding.FieldNamespace, 0, 0)", []informers.SharedInformerOption{informers.WithShard(sharding.FieldNamespace, 0, 0)}, []string{"pods", "configmaps"}, []string{"nodes"}, "WithShard(sharding.FieldNamespace, 0, 0)"},
		{"a nil membership", []informers.SharedInformerOption{informers.WithShardMembership(nil, "object.metadata.uid")}, []string{"pods", "configmaps", "nodes"}, nil, "Membership is nil"},
		{"two shard options", []informers.SharedInformerOption{informers.WithShard(sharding.FieldUID, 0, 2), informers.WithShardSelector(twoRanges())}, []string{"pods", "configmaps", "nodes"}, nil, "already sharded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := informers.New(fake.NewClientset(), 0, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error mentioning %q", err, tc.want)
			}
			ctx, cancel := context.WithCancel(syncCtx(t))
			client := fake.NewClientset(pod("a", "p1"), pod("b", "p2"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
			log := &requestLog{}
			log.install(client)
			f := informers.NewSharedInformerFactoryWithOptions(client, 0, tc.opts...).(informers.Factory)
			defer func() { cancel(); f.Shutdown() }()
			stores := map[string]cache.Store{
				"pods":       f.Core().V1().Pods().Informer().GetStore(),
				"configmaps": f.Core().V1().ConfigMaps().Informer().GetStore(),
				"nodes":      f.Core().V1().Nodes().Informer().GetStore(),
			}
			f.Start(ctx.Done())
			// Returns without waiting for the refused informers: the
			// context here is never cancelled before it returns.
			res := f.WaitForCacheSyncWithContext(ctx)
			if ctx.Err() != nil {
				t.Fatal("WaitForCacheSync waited for informers that never run")
			}
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.want) {
				t.Errorf("WaitForCacheSync: %v, want it to name %q", res.Err, tc.want)
			}
			ready := f.Ready()
			for _, r := range tc.refused {
				if n := len(log.of(r)); n != 0 {
					t.Errorf("%s: %d requests, want none (first: %v)", r, n, log.of(r)[0])
				}
				if n := len(stores[r].List()); n != 0 {
					t.Errorf("%s: cached %d objects", r, n)
				}
				if ready == nil || !strings.Contains(ready.Error(), r) || !strings.Contains(ready.Error(), tc.want) {
					t.Errorf("Ready: %v, want it to name %s and %q", ready, r, tc.want)
				}
			}
			for _, r := range tc.running {
				if len(log.of(r)) == 0 || len(stores[r].List()) == 0 {
					t.Errorf("%s: %d requests and %d objects, want it to run", r, len(log.of(r)), len(stores[r].List()))
				}
			}
		})
	}
}

// TestWatchForbiddenReported: a user who may list but not watch. The
// informer's cache fills, but its first watch fails for good; "synced"
// waits for that watch, so WaitForCacheSync reports the informer as not
// synced with the watch's error, at once rather than for ever, and Ready
// names it.
func TestWatchForbiddenReported(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	client := fake.NewClientset(pod("a", "p1"))
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "lister" cannot watch resource "pods"`))
	})
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	res := f.WaitForCacheSyncWithContext(ctx)
	if ctx.Err() != nil {
		t.Fatal("WaitForCacheSync hung on a forbidden watch")
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "pods (v1)") || !strings.Contains(res.Err.Error(), "cannot watch") {
		t.Errorf("WaitForCacheSync: %v, want it to name pods and the forbidden watch", res.Err)
	}
	for typ, ok := range res.Synced {
		if ok {
			t.Errorf("%v reported synced", typ)
		}
	}
	if err := f.Ready(); err == nil || !strings.Contains(err.Error(), "cannot watch") {
		t.Errorf("Ready: %v, want the forbidden watch", err)
	}
}
