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
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"

	informers "github.com/kubeinformers/informers"
)

const paginationObjects = 3000

// createConfigMaps creates n configmaps with bounded parallelism.
func createConfigMaps(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, prefix string, n, workers int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i)},
					Data:       map[string]string{"i": strconv.FormatInt(i, 10)},
				}
				if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("create configmaps: %v", err)
	}
}

// serverState is name -> resourceVersion from a fresh (quorum) List.
func serverConfigMaps(ctx context.Context, client kubernetes.Interface, ns string) (map[string]string, error) {
	l, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(l.Items))
	for _, o := range l.Items {
		out[o.Name] = o.ResourceVersion
	}
	return out, nil
}

func diffState(cache, server map[string]string) (missing, extra, stale []string) {
	for n, rv := range server {
		crv, ok := cache[n]
		switch {
		case !ok:
			missing = append(missing, n)
		case crv != rv:
			stale = append(stale, fmt.Sprintf("%s(cache %s, server %s)", n, crv, rv))
		}
	}
	for n := range cache {
		if _, ok := server[n]; !ok {
			extra = append(extra, n)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(stale)
	return
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... (%d more)", len(s)-n))
	}
	return s
}

func TestPaginationLargeList(t *testing.T) {
	c := setup(t)
	start := time.Now()
	createConfigMaps(t, c.ctx, c.client, c.ns, "page", paginationObjects, 16)
	t.Logf("created %d configmaps in %v", paginationObjects, time.Since(start).Round(time.Millisecond))

	run := func(t *testing.T) *recorder {
		rec := &recorder{label: "admin"}
		client := kubernetes.NewForConfigOrDie(rec.wrap(env.AdminConfig()))
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(c.ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.Limit = 500 }))
		defer f.Shutdown()
		lister := f.Core().V1().ConfigMaps().Lister()
		ctx, cancel := context.WithCancel(c.ctx)
		defer cancel()
		t0 := time.Now()
		syncFactory(t, ctx, f)
		t.Logf("synced %d objects in %v", paginationObjects, time.Since(t0).Round(time.Millisecond))
		server, err := serverConfigMaps(c.ctx, c.client, c.ns)
		if err != nil {
			t.Fatal(err)
		}
		if len(server) < paginationObjects {
			t.Fatalf("server has %d configmaps, want >= %d", len(server), paginationObjects)
		}
		cached, _ := lister.List(labels.Everything())
		got := make(map[string]string, len(cached))
		for _, o := range cached {
			got[o.Name] = o.ResourceVersion
		}
		missing, extra, stale := diffState(got, server)
		if len(missing)+len(extra)+len(stale) > 0 {
			t.Errorf("cache != server: missing %v, extra %v, stale %v", head(missing, 5), head(extra, 5), head(stale, 5))
		}
		return rec
	}

	t.Run("paged LIST (WatchListClient off)", func(t *testing.T) {
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
		rec := run(t)
		lists := rec.filter(func(q request) bool { return q.isList() && q.Path == "/api/v1/namespaces/"+c.ns+"/configmaps" })
		pages := 0
		for _, q := range lists {
			if q.Query.Get("limit") != "500" {
				t.Errorf("LIST without limit=500: %s", q.Query.Encode())
			}
			if q.Query.Get("continue") != "" {
				pages++
			}
		}
		t.Logf("%d LIST requests, %d with a continue token", len(lists), pages)
		if pages < paginationObjects/500-1 {
			t.Errorf("got %d continuation pages, want >= %d: the server did not page", pages, paginationObjects/500-1)
		}
	})

	// client-go enables WatchListClient by default since v1.35; set it
	// explicitly so that the test checks the stream whatever the
	// environment (KUBE_FEATURE_WatchListClient) says.
	t.Run("watch-list stream (WatchListClient on)", func(t *testing.T) {
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, true)
		rec := run(t)
		var streams, lists []request
		for _, q := range rec.filter(func(q request) bool { return q.Path == "/api/v1/namespaces/"+c.ns+"/configmaps" }) {
			switch {
			case q.isWatch() && q.Query.Get("sendInitialEvents") == "true":
				streams = append(streams, q)
			case q.isList():
				lists = append(lists, q)
			}
		}
		t.Logf("%d watch-list streams, %d LIST requests", len(streams), len(lists))
		// The cache was checked against the server in run; here: it was
		// filled by a successful stream, and the reflector did not fall
		// back to a LIST (which it does silently when the stream fails).
		if len(streams) == 0 {
			t.Error("no watch request with sendInitialEvents=true: the informer did not use a watch-list stream")
		}
		for _, q := range streams {
			if q.Status != http.StatusOK || q.Err != nil {
				t.Errorf("watch-list stream %s?%s: status %d, err %v", q.Path, q.Query.Encode(), q.Status, q.Err)
			}
			if q.Query.Get("resourceVersionMatch") != "NotOlderThan" || q.Query.Get("allowWatchBookmarks") != "true" {
				t.Errorf("watch-list stream without resourceVersionMatch=NotOlderThan and bookmarks: %s", q.Query.Encode())
			}
		}
		if len(lists) > 0 {
			t.Errorf("%d LIST requests besides the stream (reflector fell back to LIST): first %s", len(lists), lists[0].Query.Encode())
		}
	})
}
