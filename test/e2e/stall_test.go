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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	informers "github.com/kubeinformers/informers"
)

// bookmarkStripper is a reverse proxy in front of the real API server that
// drops the "k8s.io/initial-events-end" bookmark from every watch-list
// stream, as some proxies and managed control planes do; everything else
// passes through. It authenticates upstream with the admin config, so its
// clients need no credentials.
type bookmarkStripper struct {
	stripped atomic.Int64
	streams  atomic.Int64
	lastErr  atomic.Pointer[string]
}

func (b *bookmarkStripper) start(t *testing.T, upstream *rest.Config) *httptest.Server {
	t.Helper()
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if isStream(r.Out.URL.Query()) {
				// A JSON stream, uncompressed, which the proxy can read; the client
				// decodes by the response's Content-Type.
				r.Out.Header.Set("Accept", "application/json")
				r.Out.Header.Del("Accept-Encoding")
			}
		},
		Transport:     rt,
		FlushInterval: -1, // pass each event on at once
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode != http.StatusOK || !isStream(resp.Request.URL.Query()) {
				return nil
			}
			b.streams.Add(1)
			pr, pw := io.Pipe()
			in := resp.Body
			go func() {
				defer func() { _ = in.Close() }()
				err := b.filter(in, pw)
				msg := fmt.Sprintf("%v (Content-Type %s)", err, resp.Header.Get("Content-Type"))
				b.lastErr.Store(&msg)
				pw.CloseWithError(err)
			}()
			resp.Body = pr
			return nil
		},
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

func isStream(q url.Values) bool {
	return (q.Get("watch") == "true" || q.Get("watch") == "1") && q.Get("sendInitialEvents") == "true"
}

// filter copies the watch events of in to out, except the end bookmark.
func (b *bookmarkStripper) filter(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(in)
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return err
		}
		if ev.Type == "BOOKMARK" {
			var obj struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if json.Unmarshal(ev.Object, &obj) == nil && obj.Metadata.Annotations["k8s.io/initial-events-end"] == "true" {
				b.stripped.Add(1)
				continue
			}
		}
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if _, err := out.Write(append(line, '\n')); err != nil {
			return err
		}
	}
}

// TestStalledStreamFallsBack: behind a proxy that strips the end bookmark
// of every watch-list stream, a factory with default options is not stuck:
// the stream is abandoned after listwatch.StallTimeout (10 s), the
// informer syncs from a consistent LIST, then follows writes through a
// plain watch. Ready names the waiting stream, Notices the fallback.
func TestStalledStreamFallsBack(t *testing.T) {
	c := setup(t)
	for i := range 3 {
		mkCM(t, c, c.ns, fmt.Sprintf("stall-%d", i), nil)
	}
	proxy := &bookmarkStripper{}
	srv := proxy.start(t, env.AdminConfig())
	rec := &recorder{label: "proxied"}
	cfg := rec.wrap(&rest.Config{Host: srv.URL, QPS: 100, Burst: 200})
	f, err := informers.New(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	cms := f.Core().V1().ConfigMaps()
	cms.Informer()
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	start := time.Now()
	f.StartWithContext(ctx)

	var waiting string
	eventually(30*time.Second, 20*time.Millisecond, func() bool {
		if err := f.Ready(); err != nil && strings.Contains(err.Error(), "watch-list stream: 3 objects received, no end bookmark for ") {
			waiting = err.Error()
			return true
		}
		return false
	})
	if waiting == "" {
		t.Fatalf("Ready() never named the waiting stream; last: %v; the proxy saw %d streams, stripped %d end bookmarks (%v); requests: %+v", f.Ready(), proxy.streams.Load(), proxy.stripped.Load(), *proxy.lastErr.Load(), rec.snapshot())
	}
	t.Logf("Ready while the stream is silent: %s", waiting)

	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	for typ, ok := range f.WaitForCacheSyncWithContext(syncCtx).Synced {
		if !ok {
			t.Fatalf("%v not synced 30 s after Start; Ready: %v", typ, f.Ready())
		}
	}
	t.Logf("synced %.1f s after Start; the proxy stripped %d end bookmarks of %d streams", time.Since(start).Seconds(), proxy.stripped.Load(), proxy.streams.Load())
	if proxy.stripped.Load() == 0 {
		t.Error("the proxy stripped no end bookmark: the test did not test the stall")
	}
	if got, _ := cms.Lister().List(labels.Everything()); len(got) != 3 {
		t.Errorf("lister has %d configmaps after sync, want 3", len(got))
	}
	notices := f.Notices()
	if len(notices) != 1 || !strings.HasPrefix(notices[0], "configmaps (v1): namespace "+c.ns+": watch-list stream stalled (3 objects received, no end bookmark and nothing for 10 s); the informer lists instead") {
		t.Errorf("Notices() = %q", notices)
	}
	// The fallback LIST is a consistent read; a write after the sync
	// reaches the cache through the watch that follows it.
	lists := rec.filter(func(r request) bool { return r.isList() && r.Path == "/api/v1/namespaces/"+c.ns+"/configmaps" })
	if len(lists) != 1 || lists[0].Query.Has("resourceVersion") {
		t.Errorf("fallback LIST requests: %+v, want one without resourceVersion", lists)
	}
	mkCM(t, c, c.ns, "stall-after", nil)
	if !eventually(30*time.Second, 20*time.Millisecond, func() bool {
		_, err := cms.Lister().ConfigMaps(c.ns).Get("stall-after")
		return err == nil
	}) {
		t.Error("a configmap created after the sync never reached the cache")
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() = %v after sync", err)
	}
}
