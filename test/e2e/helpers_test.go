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
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// tcx is what each test gets: an admin config/client and a fresh namespace.
type tcx struct {
	t      *testing.T
	ctx    context.Context
	cfg    *rest.Config
	client kubernetes.Interface
	ns     string
}

var nsSanitize = regexp.MustCompile(`[^a-z0-9-]+`)

func randSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// setup fails the test (never skips) when the environment is not usable.
func setup(t *testing.T) *tcx {
	t.Helper()
	if envErr != nil {
		t.Fatalf("test environment failed to start: %v", envErr)
	}
	if env == nil {
		t.Fatal("test environment not started")
	}
	// A previous test may have left a component down; bring it back.
	if !env.Running("etcd") {
		if err := env.StartEtcd(); err != nil {
			t.Fatalf("restart etcd: %v\n%s", err, env.LogTails(60))
		}
	}
	if !env.Running("kube-apiserver") {
		if err := env.StartAPIServer(); err != nil {
			t.Fatalf("restart kube-apiserver: %v\n%s", err, env.LogTails(60))
		}
	}
	if err := env.WaitReady(60 * time.Second); err != nil {
		t.Fatalf("apiserver not ready: %v\n%s", err, env.LogTails(60))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test failed; component logs:\n%s", env.LogTails(60))
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := env.AdminConfig()
	client := kubernetes.NewForConfigOrDie(cfg)
	name := strings.ToLower(t.Name())
	name = strings.Trim(nsSanitize.ReplaceAllString(name, "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	ns := fmt.Sprintf("e2e-%s-%s", strings.Trim(name, "-"), randSuffix())
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// No namespace controller runs, so the namespace stays Terminating;
		// that is harmless for a throwaway server.
		_ = client.CoreV1().Namespaces().Delete(c, ns, metav1.DeleteOptions{})
	})
	return &tcx{t: t, ctx: ctx, cfg: cfg, client: client, ns: ns}
}

// newNamespace creates an extra namespace for tests that need two.
func (c *tcx) newNamespace(prefix string) string {
	c.t.Helper()
	ns := fmt.Sprintf("%s-%s", prefix, randSuffix())
	if _, err := c.client.CoreV1().Namespaces().Create(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatalf("create namespace %s: %v", ns, err)
	}
	c.t.Cleanup(func() {
		_ = c.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns
}

// request is one HTTP request seen by a recorder.
type request struct {
	Method string
	Path   string
	Query  url.Values
	Status int
	Err    error
	User   string // "admin" / "limited" as labelled by the recorder
}

func (r request) isWatch() bool { return r.Query.Get("watch") == "true" || r.Query.Get("watch") == "1" }
func (r request) isList() bool  { return r.Method == http.MethodGet && !r.isWatch() }

// recorder records every request a rest.Config sends (via WrapTransport).
type recorder struct {
	label string
	mu    sync.Mutex
	reqs  []request
}

func (r *recorder) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			rec := request{Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Err: err, User: r.label}
			if resp != nil {
				rec.Status = resp.StatusCode
			}
			r.mu.Lock()
			r.reqs = append(r.reqs, rec)
			r.mu.Unlock()
			return resp, err
		})
	})
	return cfg
}

func (r *recorder) snapshot() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

func (r *recorder) filter(f func(request) bool) []request {
	var out []request
	for _, q := range r.snapshot() {
		if f(q) {
			out = append(out, q)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// connCounter counts TCP connections dialed through a rest.Config and still open.
type connCounter struct {
	open   atomic.Int64
	dialed atomic.Int64
	mu     sync.Mutex
	conns  map[*countedConn]struct{}
}

type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() {
		cc.c.open.Add(-1)
		cc.c.mu.Lock()
		delete(cc.c.conns, cc)
		cc.c.mu.Unlock()
	})
	return cc.Conn.Close()
}

func (c *connCounter) install(cfg *rest.Config) *rest.Config {
	c.mu.Lock()
	if c.conns == nil {
		c.conns = map[*countedConn]struct{}{}
	}
	c.mu.Unlock()
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.open.Add(1)
		c.dialed.Add(1)
		cc := &countedConn{Conn: conn, c: c}
		c.mu.Lock()
		c.conns[cc] = struct{}{}
		c.mu.Unlock()
		return cc, nil
	}
	return cfg
}

// closeAll severs every open connection (simulates a network blip).
func (c *connCounter) closeAll() int {
	c.mu.Lock()
	conns := slices.Collect(maps.Keys(c.conns))
	c.mu.Unlock()
	for _, cc := range conns {
		_ = cc.Close()
	}
	return len(conns)
}

// eventually polls cond every interval until it returns true or timeout passes.
func eventually(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

func everything() labels.Selector { return labels.Everything() }
