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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// expectedForResource is the number of GVRs the factory's ForResource accepts.
const expectedForResource = 147

func gvrString(g schema.GroupVersionResource) string {
	if g.Group == "" {
		return "core/" + g.Version + "/" + g.Resource
	}
	return g.Group + "/" + g.Version + "/" + g.Resource
}

// servedListWatchGVRs returns every GVR the server serves with list+watch.
func servedListWatchGVRs(t *testing.T, dc discovery.DiscoveryInterface) sets.Set[schema.GroupVersionResource] {
	t.Helper()
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			t.Fatalf("discovery: %v", err)
		}
		// The server runs no aggregated APIs, so every group is built in
		// and a failed group means its resources would go unchecked.
		t.Errorf("partial discovery: %v", err)
	}
	served := sets.New[schema.GroupVersionResource]()
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatalf("parse %q: %v", l.GroupVersion, err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			verbs := sets.New[string](r.Verbs...)
			if verbs.Has("list") && verbs.Has("watch") {
				served.Insert(gv.WithResource(r.Name))
			}
		}
	}
	return served
}

// schemeGVRs guesses a GVR for every listable kind client-go knows, so that
// ForResource can be probed for GVRs the server does not serve.
func schemeGVRs() sets.Set[schema.GroupVersionResource] {
	out := sets.New[schema.GroupVersionResource]()
	known := scheme.Scheme.AllKnownTypes()
	for gvk := range known {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == "__internal" {
			continue
		}
		if _, ok := known[gvk.GroupVersion().WithKind(gvk.Kind+"List")]; !ok {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		out.Insert(plural)
	}
	return out
}

// TestCoverageAllServedResourcesSync starts an informer through ForResource
// for every GVR that is both served (with all alpha/beta APIs enabled) and
// accepted by the factory, and checks that every one of them syncs.
func TestCoverageAllServedResourcesSync(t *testing.T) {
	c := setup(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(c.cfg)
	if v, err := dc.ServerVersion(); err != nil {
		t.Errorf("/version: %v", err)
	} else if v.GitVersion != "v1.37.2" || v.Major != "1" || v.Minor != "37" {
		t.Errorf("/version = %s (major %q minor %q), want v1.37.2: hack/testenv/build.sh ldflags not applied?", v.GitVersion, v.Major, v.Minor)
	} else {
		t.Logf("kube-apiserver %s (%s)", v.GitVersion, v.GoVersion)
	}
	served := servedListWatchGVRs(t, dc)

	probe := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(c.cfg), 0)
	accepted := sets.New[schema.GroupVersionResource]()
	for gvr := range served.Union(schemeGVRs()) {
		if _, err := probe.ForResource(gvr); err == nil {
			accepted.Insert(gvr)
		}
	}
	probe.Shutdown()
	if accepted.Len() != expectedForResource {
		t.Errorf("ForResource accepted %d GVRs (served or known to the scheme), want %d", accepted.Len(), expectedForResource)
	}

	want := served.Intersection(accepted)
	notServed := sortedGVRs(accepted.Difference(served))
	notAccepted := sortedGVRs(served.Difference(accepted))
	t.Logf("served by kube-apiserver: %d list/watch GVRs; accepted by ForResource: %d; both: %d", served.Len(), accepted.Len(), want.Len())
	t.Logf("accepted but not served (%d): %s", len(notServed), strings.Join(notServed, ", "))
	t.Logf("served but not accepted (%d): %s", len(notAccepted), strings.Join(notAccepted, ", "))

	f := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(c.cfg), 0)
	defer f.Shutdown()
	infs := map[schema.GroupVersionResource]cache.SharedIndexInformer{}
	listers := map[schema.GroupVersionResource]cache.GenericLister{}
	for gvr := range want {
		gi, err := f.ForResource(gvr)
		if err != nil {
			t.Fatalf("ForResource(%s): %v", gvrString(gvr), err)
		}
		infs[gvr] = gi.Informer()
		listers[gvr] = gi.Lister()
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	f.Start(ctx.Done())
	wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
	res := f.WaitForCacheSyncWithContext(wctx)
	wcancel()
	if err := res.AsError(); err != nil {
		t.Errorf("WaitForCacheSyncWithContext: %v", err)
	}
	synced := 0
	var unsynced []string
	for gvr, inf := range infs {
		if inf.HasSynced() {
			synced++
		} else {
			unsynced = append(unsynced, gvrString(gvr))
		}
	}
	slices.Sort(unsynced)
	// Each generic lister must read its own informer's cache: same keys as
	// the informer's indexer, and the namespace this test created (and
	// the system namespaces) visible through the namespaces lister.
	nonEmpty := 0
	for gvr, l := range listers {
		objs, err := l.List(everything())
		if err != nil {
			t.Errorf("ForResource(%s).Lister().List: %v", gvrString(gvr), err)
			continue
		}
		got := make([]string, 0, len(objs))
		for _, o := range objs {
			k, err := cache.MetaNamespaceKeyFunc(o)
			if err != nil {
				t.Fatalf("%s: %v", gvrString(gvr), err)
			}
			got = append(got, k)
		}
		slices.Sort(got)
		want := infs[gvr].GetIndexer().ListKeys()
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("ForResource(%s): lister holds %d objects, its informer %d", gvrString(gvr), len(got), len(want))
		}
		if len(got) > 0 {
			nonEmpty++
		}
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if l, ok := listers[nsGVR]; !ok {
		t.Errorf("%s not among the synced GVRs", gvrString(nsGVR))
	} else if _, err := l.Get(c.ns); err != nil {
		t.Errorf("namespaces lister: Get(%s): %v", c.ns, err)
	}
	t.Logf("%d of %d generic listers hold objects", nonEmpty, len(listers))
	t.Logf("served/synced %d/%d (synced %d of %d served and accepted GVRs)", synced, expectedForResource, synced, want.Len())
	fmt.Printf("COVERAGE: served/synced %d/%d\n", synced, expectedForResource)
	if len(unsynced) > 0 {
		t.Errorf("%d served GVRs did not sync: %s", len(unsynced), strings.Join(unsynced, ", "))
	}
	// kube-apiserver v1.37.2 with AllAlpha/AllBeta and api/all=true serves 90
	// of the 147; the rest are versions removed from the server (apps/v1beta1,
	// extensions/v1beta1, flowcontrol v1beta1-3, ...) or list-only
	// (componentstatuses). A much lower number means the gates did not apply.
	if synced < 85 {
		t.Errorf("only %d GVRs synced; the alpha/beta-enabled v1.37.2 server serves 90 of the %d", synced, expectedForResource)
	}
}

func sortedGVRs(s sets.Set[schema.GroupVersionResource]) []string {
	out := make([]string, 0, s.Len())
	for g := range s {
		out = append(out, gvrString(g))
	}
	slices.Sort(out)
	return out
}
