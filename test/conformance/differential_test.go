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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	upstream "k8s.io/client-go/informers"
)

// TestDifferential runs this library and client-go's informers side by side
// on two identical fake clientsets, for every resource, with and without
// options, and requires the same requests and the same cache contents.
func TestDifferential(t *testing.T) {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "tier in (front,back)" }
	for _, r := range resources {
		t.Run(r.gvr.String(), func(t *testing.T) {
			t.Parallel()
			for _, opts := range []struct {
				name      string
				namespace string
				tweak     func(*metav1.ListOptions)
			}{
				{name: "plain"},
				{name: "namespace+tweak", namespace: "ns-b", tweak: tweak},
			} {
				oursClient, upClient := r.seed(t), r.seed(t)

				ctx, cancel := context.WithCancel(syncCtx(t))
				ours := informers.NewSharedInformerFactoryWithOptions(oursClient, 0,
					informers.WithNamespace(opts.namespace), informers.WithTweakListOptions(opts.tweak))
				up := upstream.NewSharedInformerFactoryWithOptions(upClient, 0,
					upstream.WithNamespace(opts.namespace), upstream.WithTweakListOptions(opts.tweak))
				oa, ua := r.ours(ours), r.upstream(up)
				ours.StartWithContext(ctx)
				up.StartWithContext(ctx)
				mustSync(t, ctx, ours)
				mustSync(t, ctx, up)
				// Both informers watch once they have listed.
				waitFor(t, ctx, func() bool { return watches(oursClient) > 0 && watches(upClient) > 0 })
				cancel()
				ours.Shutdown()
				up.Shutdown()

				if got, want := actions(oursClient), actions(upClient); !slices.Equal(got, want) {
					t.Errorf("%s: requests differ\n ours: %v\n upstream: %v", opts.name, got, want)
				}
				oo, err := oa.list()
				if err != nil {
					t.Fatal(err)
				}
				uo, err := ua.list()
				if err != nil {
					t.Fatal(err)
				}
				if got, want := keys(t, oo), keys(t, uo); !slices.Equal(got, want) || len(got) == 0 {
					t.Errorf("%s: listers differ: ours %v, upstream %v", opts.name, got, want)
				}
				if got, want := indexKeys(t, oa.informer), indexKeys(t, ua.informer); !slices.Equal(got, want) {
					t.Errorf("%s: indexers differ: ours %v, upstream %v", opts.name, got, want)
				}
			}
		})
	}
}

// watches counts the watch requests seen so far.
func watches(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "watch" {
			n++
		}
	}
	return n
}

// actions renders the recorded requests with everything that reaches the
// server: verb, resource, namespace and the list restrictions.
func actions(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		s := fmt.Sprintf("%s %s ns=%q", a.GetVerb(), a.GetResource(), a.GetNamespace())
		switch a := a.(type) {
		case clienttesting.ListAction:
			s += fmt.Sprintf(" labels=%q fields=%q", a.GetListRestrictions().Labels, a.GetListRestrictions().Fields)
		case clienttesting.WatchAction:
			s += fmt.Sprintf(" labels=%q fields=%q", a.GetWatchRestrictions().Labels, a.GetWatchRestrictions().Fields)
		}
		out = append(out, s)
	}
	return out
}

// indexKeys lists the index names and the keys of the namespace index.
func indexKeys(t testing.TB, informer cache.SharedIndexInformer) []string {
	t.Helper()
	idx := informer.GetIndexer()
	var out []string
	for name := range idx.GetIndexers() {
		out = append(out, "index:"+name)
	}
	out = append(out, idx.ListIndexFuncValues(cache.NamespaceIndex)...)
	slices.Sort(out)
	return out
}
