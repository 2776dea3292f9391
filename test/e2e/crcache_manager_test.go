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
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubeinformers/informers/crcache"
)

// The e2e tests of crcache through a controller-runtime manager (issue 44):
// this file has what they share; crcache_crd_test.go, crcache_ops_test.go
// the tests.

// controller-runtime's logger is set once per process (a second
// log.SetLogger is a no-op), so it is set here, before any test runs, to a
// sink that forwards each line to the test that captures them, and drops
// it otherwise.
var ctrlLogTo atomic.Pointer[func(line string)]

func init() {
	ctrllog.SetLogger(funcr.New(func(prefix, args string) {
		if f := ctrlLogTo.Load(); f != nil {
			(*f)(prefix + " " + args)
		}
	}, funcr.Options{}))
}

// logLine is one line of klog or of controller-runtime's logger.
type logLine struct {
	at   time.Time
	from string // "klog" or "controller-runtime"
	text string
}

// managerLogs holds the lines of both loggers while a test runs.
type managerLogs struct {
	mu    sync.Mutex
	lines []logLine
}

// captureManagerLogs sends klog's and controller-runtime's lines to the
// returned holder until the test ends. klog's are taken from its output
// (a klog.SetLogger would race with the goroutines that a manager leaves
// logging: klog documents it as unsafe once they run); its INFO output
// has the lines of every severity once.
func captureManagerLogs(t *testing.T) *managerLogs {
	l := &managerLogs{}
	add := func(from, text string) {
		l.mu.Lock()
		l.lines = append(l.lines, logLine{at: time.Now(), from: from, text: strings.TrimSuffix(text, "\n")})
		l.mu.Unlock()
	}
	for _, s := range []string{"WARNING", "ERROR", "FATAL"} {
		klog.SetOutputBySeverity(s, io.Discard)
	}
	klog.SetOutputBySeverity("INFO", writerFunc(func(p []byte) { add("klog", string(p)) }))
	klog.LogToStderr(false)
	toCR := func(text string) { add("controller-runtime", text) }
	ctrlLogTo.Store(&toCR)
	t.Cleanup(func() {
		ctrlLogTo.Store(nil)
		klog.LogToStderr(true)
		klog.SetOutputBySeverity("INFO", io.Discard)
	})
	return l
}

// writerFunc is an io.Writer of a func that takes each write.
type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// between returns the lines logged in [from, to) that match.
func (l *managerLogs) between(from, to time.Time, match func(logLine) bool) []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, line := range l.lines {
		if !line.at.Before(from) && line.at.Before(to) && match(line) {
			out = append(out, line)
		}
	}
	return out
}

// checkLeaks fails the test if goroutines started after the call are
// still running once the test and its other cleanups are done (the
// managers stopped).
func checkLeaks(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// newManager is manager.New with what every test here sets: no leader
// election, the metrics server and health probes off unless opts give an
// address, and no check that controller names are unique in the process
// (the tests build controllers of the same kinds).
func newManager(t *testing.T, cfg *rest.Config, opts manager.Options) manager.Manager {
	t.Helper()
	if opts.Metrics.BindAddress == "" {
		opts.Metrics.BindAddress = "0"
	}
	if opts.HealthProbeBindAddress == "" {
		opts.HealthProbeBindAddress = "0"
	}
	opts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	return mgr
}

// runManager starts mgr (a manager, or a cache) and returns a func that
// stops it and fails the test unless Start returned nil within 30 s, and a
// channel that receives Start's result if it returns before (it should
// not).
func runManager(t *testing.T, ctx context.Context, mgr manager.Runnable) (stop func(), exited <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%T.Start returned %v", mgr, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%T.Start did not return 30 s after its context ended", mgr)
			}
		})
	}
	t.Cleanup(stop)
	return stop, done
}

// crCache is the manager's cache as crcache's type.
func crCache(t *testing.T, mgr manager.Manager) *crcache.Cache {
	t.Helper()
	c, ok := mgr.GetCache().(*crcache.Cache)
	if !ok {
		t.Fatalf("the manager's cache is %T, want *crcache.Cache", mgr.GetCache())
	}
	return c
}

// reconciles records when a reconciler first saw each object in the cache
// (namespace/name), and how many times it ran.
type reconciles struct {
	mu    sync.Mutex
	first map[string]time.Time
	runs  int
}

func newReconciles() *reconciles { return &reconciles{first: map[string]time.Time{}} }

// reconciler returns a reconciler that reads the request's object with
// reader into a new object of newObj and records it when found.
func (r *reconciles) reconciler(reader client.Reader, newObj func() client.Object) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj := newObj()
		err := reader.Get(ctx, req.NamespacedName, obj)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.runs++
		if _, seen := r.first[req.String()]; err == nil && !seen {
			r.first[req.String()] = time.Now()
		}
		return reconcile.Result{}, nil
	}
}

// seen returns how many of keys were reconciled, and when the last of
// them first was.
func (r *reconciles) seen(keys ...string) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int
	var last time.Time
	for _, k := range keys {
		if at, ok := r.first[k]; ok {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

// earliest returns the first reconcile of any key of namespace ns.
func (r *reconciles) earliest(ns string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for k, at := range r.first {
		if strings.HasPrefix(k, ns+"/") && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}

func (r *reconciles) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.first {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// deletes counts a handler's delete events by namespace.
type deletes struct {
	mu sync.Mutex
	by map[string]int
}

func (d *deletes) handler() toolscache.ResourceEventHandler {
	d.by = map[string]int{}
	return toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		key, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		ns, _, _ := strings.Cut(key, "/")
		d.mu.Lock()
		d.by[ns]++
		d.mu.Unlock()
	}}
}

func (d *deletes) in(ns string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.by[ns]
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// httpGet returns the status and body of a GET of url.
func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// configMapController adds to mgr a ConfigMap controller reading from the
// manager's client (the cache), recording into r; needLeaderElection, if
// not nil, is its controller option.
func configMapController(t *testing.T, mgr manager.Manager, name string, r *reconciles, needLeaderElection *bool) {
	t.Helper()
	b := ctrl.NewControllerManagedBy(mgr).Named(name).For(&corev1.ConfigMap{})
	if needLeaderElection != nil {
		b = b.WithOptions(controller.Options{NeedLeaderElection: needLeaderElection})
	}
	if err := b.Complete(r.reconciler(mgr.GetClient(), func() client.Object { return &corev1.ConfigMap{} })); err != nil {
		t.Fatal(err)
	}
}

// mkConfigMaps creates n ConfigMaps prefix-0… in ns, 8 at a time, and
// returns their keys.
func mkConfigMaps(t *testing.T, c *tcx, ns, prefix string, n int) []string {
	t.Helper()
	keys := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	var failed atomic.Value
	for i := range n {
		keys[i] = ns + "/" + fmt.Sprintf("%s-%d", prefix, i)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i)}}
			if _, err := c.client.CoreV1().ConfigMaps(ns).Create(c.ctx, cm, metav1.CreateOptions{}); err != nil {
				failed.Store(err)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("create configmaps in %s: %v", ns, err)
	}
	return keys
}
