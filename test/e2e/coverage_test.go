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
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	upstream "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// wantServerVersion is the kube-apiserver version the suite must run
// against: the one of the client-go this module builds with (client-go
// v0.Y.Z ships with Kubernetes v1.Y.Z), which hack/testenv/go.mod pins in
// step. Derived, so that a bump edits go.mod files only. The go command
// resolves it (test binaries carry no dependency versions); the suite is
// always run by go test, so it is on PATH.
func wantServerVersion(t *testing.T) (gitVersion, minor string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}", "k8s.io/client-go").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/client-go: %v", err)
	}
	v := strings.TrimSpace(string(out))
	parts := strings.SplitN(strings.TrimPrefix(v, "v0."), ".", 2)
	if !strings.HasPrefix(v, "v0.") || len(parts) != 2 {
		t.Fatalf("client-go version %q is not v0.Y.Z", v)
	}
	return "v1." + parts[0] + "." + parts[1], parts[0]
}

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
	wantVersion, wantMinor := wantServerVersion(t)
	if v, err := dc.ServerVersion(); err != nil {
		t.Errorf("/version: %v", err)
	} else if v.GitVersion != wantVersion || v.Major != "1" || v.Minor != wantMinor {
		t.Errorf("/version = %s (major %q minor %q), want %s (client-go's): hack/testenv/go.mod not bumped with client-go, or build.sh ldflags not applied?", v.GitVersion, v.Major, v.Minor, wantVersion)
	} else {
		t.Logf("kube-apiserver %s (%s)", v.GitVersion, v.GoVersion)
	}
	served := servedListWatchGVRs(t, dc)

	// client-go's own factory is the oracle for which GVRs ForResource
	// accepts: the same set, derived rather than counted by hand.
	client := kubernetes.NewForConfigOrDie(c.cfg)
	probe := informers.NewSharedInformerFactory(client, 0)
	oracle := upstream.NewSharedInformerFactory(client, 0)
	accepted := sets.New[schema.GroupVersionResource]()
	upstreamAccepted := sets.New[schema.GroupVersionResource]()
	for gvr := range served.Union(schemeGVRs()) {
		if _, err := probe.ForResource(gvr); err == nil {
			accepted.Insert(gvr)
		}
		if _, err := oracle.ForResource(gvr); err == nil {
			upstreamAccepted.Insert(gvr)
		}
	}
	probe.Shutdown()
	oracle.Shutdown()
	if !accepted.Equal(upstreamAccepted) {
		t.Errorf("ForResource accepts %d GVRs (served or known to the scheme), client-go's %d: only ours %v, only client-go's %v",
			accepted.Len(), upstreamAccepted.Len(), sortedGVRs(accepted.Difference(upstreamAccepted)), sortedGVRs(upstreamAccepted.Difference(accepted)))
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
	t.Logf("served/synced %d/%d (synced %d of %d served and accepted GVRs)", synced, accepted.Len(), synced, want.Len())
	fmt.Printf("COVERAGE: served/synced %d/%d\n", synced, accepted.Len())
	if len(unsynced) > 0 {
		t.Errorf("%d served GVRs did not sync: %s", len(unsynced), strings.Join(unsynced, ", "))
	}
	// The server runs with AllAlpha/AllBeta and api/all=true, which is what
	// brings the alpha and beta versions into this check. A server without
	// them still passes the checks above with fewer GVRs, so require both.
	var alpha, beta int
	for gvr := range want {
		switch {
		case strings.Contains(gvr.Version, "alpha"):
			alpha++
		case strings.Contains(gvr.Version, "beta"):
			beta++
		}
	}
	t.Logf("served and accepted: %d alpha and %d beta GVRs", alpha, beta)
	if alpha == 0 || beta == 0 {
		t.Errorf("served and accepted: %d alpha and %d beta GVRs; the alpha/beta gates or --runtime-config=api/all=true did not apply", alpha, beta)
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
