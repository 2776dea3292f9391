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

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	clienttesting "k8s.io/client-go/testing"
)

// normalize trims every line and collapses runs of spaces, so the
// comparison is about content rather than column widths. The object a
// sharding notice names is whichever the fake sent first, so it is elided.
func normalize(s string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		l = itSent.ReplaceAllString(l, "(it sent …, outside the shard)")
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return lines
}

var itSent = regexp.MustCompile(`\(it sent [^ ]+, outside the shard\)`)

// diffLines compares got with want line by line. A want line ending in "…"
// only has to start the line: the rest is the library's wording of an
// error.
func diffLines(t *testing.T, got, want string) {
	t.Helper()
	g, w := normalize(got), normalize(want)
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if prefix, ok := strings.CutSuffix(wl, "…"); ok && wl != "…" && strings.HasPrefix(gl, prefix) {
			continue
		}
		if gl != wl {
			t.Fatalf("output differs at line %d:\n got: %q\nwant: %q\n\nfull output:\n%s", i+1, gl, wl, got)
		}
	}
}

func demo(t *testing.T) demoClients {
	t.Helper()
	d, err := newDemoClients()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDemo runs the tour on the demo cluster and checks its output line by
// line: each section states what the library did (the errors, the counts,
// which informer is which, the shards' union and overlap, the events).
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out, demo(t).cluster()); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}

	want := `
1. New and NewForConfig return a bad option as an error
  informers.New(…, WithNamespace("Shop")):
    informers: WithNamespace: "Shop" is not a valid namespace name…

2. Typed informers, handlers and listers, as in client-go
  caches synced; the handlers saw 8 pods and 4 configmaps in the initial list
  cached objects
    namespaces     3
    nodes          2
    deployments    4  (6 of 8 replicas ready)
    pods           8  (Running 6, Pending 2)
    services       5
    configmaps     4
  lister queries
    pods in shop with app=web: 3
      shop/web-6d9f7c8b5-2kq4x       Running on node-a
      shop/web-6d9f7c8b5-8zt7m       Running on node-b
      shop/web-6d9f7c8b5-x9c2p       Pending, not scheduled
    services in payments: 2
      payments/api                   ClusterIP  10.96.20.10    443/TCP
      payments/api-headless          ClusterIP  None           443/TCP
    configmap shop/web-config: keys CART_URL, LOG_LEVEL, THEME

3. Lean caches: WithLeanMemory()
  pods in shop with app=web: 3
    managedFields entries: 6 as served, 0 in the cache
    containers: 1 copy in the cache for 3 pods (identical ones are shared)

4. Custom resources and metadata in the same factory: ForResource, ForMetadata
  ForResource(widgets.example.com/v1), a dynamic informer: 3 (*unstructured.Unstructured)
    payments/receipt
    shop/banner
    shop/checkout-button
  ForMetadata(deployments.apps/v1): 4 (*v1.PartialObjectMetadata)
    monitoring/prometheus
    payments/api
    shop/cart
    shop/web
  ForResource(deployments.apps/v1) is factory.Apps().V1().Deployments(): true
  ForResource(deployment.apps/v1), misspelt: ErrUnknownResource
    no informer found for apps/v1, Resource=deployment (resources are plural and lower case: did you mean "deployments"?)

5. Status: Ready(), SyncStatus() and RemoveInformer()
  Ready(): nil (ready)
  SyncStatus(): 8 informers
    configmaps (v1)                          synced
    deployments.apps/v1                      synced
    deployments.apps/v1 [metadata]           synced
    namespaces (v1)                          synced
    nodes (v1)                               synced
    pods (v1)                                synced
    services (v1)                            synced
    widgets.example.com/v1 [dynamic]         synced
  ForResource(gadgets.example.com/v1), a resource the server does not serve, started
    Ready(): informers not ready: gadgets.example.com/v1 [dynamic]: not synced: …
  RemoveInformer(gadgets.example.com/v1): true
    Ready(): nil (ready)

6. Several namespaces and per-resource options: WithNamespaces, WithResourceOptions
  a second factory: WithNamespaces("shop", "payments"),
  and for pods (v1): LabelSelector "app in (web, api)", Transform TransformStripManagedFields()
    pods: 5, managedFields entries: 0
      payments/api-7f8c6d5b9-m3k8v   Running on node-b
      payments/api-7f8c6d5b9-t5w9j   Pending on node-a
      shop/web-6d9f7c8b5-2kq4x       Running on node-a
      shop/web-6d9f7c8b5-8zt7m       Running on node-b
      shop/web-6d9f7c8b5-x9c2p       Pending, not scheduled
    configmaps: 2
      payments/api-config
      shop/web-config

7. Sharding: WithShardSelector, client-go v0.38's option
  shard 0 of 2, shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'): 5 pods
    payments/api-7f8c6d5b9-m3k8v
    payments/api-7f8c6d5b9-t5w9j
    shop/cart-5b7d9c4f8-q7r2d
    shop/web-6d9f7c8b5-8zt7m
    shop/web-6d9f7c8b5-x9c2p
    notice: pods (v1): the server ignored the shard selector shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') (it sent …, outside the shard): it lacks the ShardedListAndWatch feature; filtering on the client instead
  shard 1 of 2, shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000'): 3 pods
    monitoring/prometheus-84c7b9d6f-7vx4n
    shop/cart-5b7d9c4f8-4hn6w
    shop/web-6d9f7c8b5-2kq4x
    notice: pods (v1): the server ignored the shard selector shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000') (it sent …, outside the shard): it lacks the ShardedListAndWatch feature; filtering on the client instead
  together: 8 pods, 0 of them in both shards; unsharded: 8

8. Changes through the clientset, and the events they cause
  create pod shop/web-6d9f7c8b5-h4j5k
  mark pod shop/web-6d9f7c8b5-h4j5k Running
  delete pod shop/web-6d9f7c8b5-x9c2p
  set LOG_LEVEL=debug in configmap shop/web-config
  create configmap payments/feature-flags
  delete configmap monitoring/alert-rules
  events received (6 of 6 expected)
    pod       added    shop/web-6d9f7c8b5-h4j5k       Pending on node-b
    pod       updated  shop/web-6d9f7c8b5-h4j5k       phase Pending -> Running
    pod       deleted  shop/web-6d9f7c8b5-x9c2p
    configmap updated  shop/web-config                LOG_LEVEL: info -> debug
    configmap added    payments/feature-flags         keys NEW_CHECKOUT
    configmap deleted  monitoring/alert-rules
  after the changes
    pods in shop with app=web: 3
      shop/web-6d9f7c8b5-2kq4x       Running on node-a
      shop/web-6d9f7c8b5-8zt7m       Running on node-b
      shop/web-6d9f7c8b5-h4j5k       Running on node-b
    pods 8 (Running 7, Pending 1), configmaps 4

informers stopped
`
	diffLines(t, out.String(), want)
	checkNoInformerGoroutines(t)
}

// TestReadOnly runs the real-cluster flow (against the fake clientsets) and
// checks that it never writes.
func TestReadOnly(t *testing.T) {
	d := demo(t)
	c := d.cluster()
	c.writable, c.q = false, clusterQueries
	var out bytes.Buffer
	if err := run(t.Context(), &out, c); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	var actions []clienttesting.Action
	actions = append(actions, d.typed.Actions()...)
	actions = append(actions, d.dynamic.Actions()...)
	actions = append(actions, d.metadata.Actions()...)
	for _, action := range actions {
		if verb := action.GetVerb(); verb != "list" && verb != "watch" {
			t.Errorf("read-only run did %s %s", verb, action.GetResource())
		}
	}
	got := strings.Join(normalize(out.String()), "\n")
	for _, line := range []string{
		"pods 8 (Running 6, Pending 2)",
		"pods in kube-system with k8s-app=kube-dns: 0",
		"services in default: 0",
		"configmap kube-system/kube-root-ca.crt: not found",
		"ForResource(customresourcedefinitions.apiextensions.k8s.io/v1), a dynamic informer: 1 (*unstructured.Unstructured)\nwidgets.example.com",
		"a second factory: WithNamespaces(\"kube-system\", \"default\"),",
		"together: 8 pods, 0 of them in both shards; unsharded: 8",
		"informers stopped",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Contains(got, "8. Changes") || strings.Contains(got, "events received") {
		t.Errorf("read-only run printed a change section:\n%s", out.String())
	}
	checkNoInformerGoroutines(t)
}

// TestCancelled checks that run gives up, and stops its informers, when its
// context ends before the caches sync.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	err := run(ctx, &out, demo(t).cluster())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run with a cancelled context: got %v, want context.Canceled", err)
	}
	checkNoInformerGoroutines(t)
}

// TestMainDemoMode checks that without a kubeconfig the tour picks
// the demo cluster, and that it runs in seconds.
func TestMainDemoMode(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	var out bytes.Buffer
	start := time.Now()
	if err := mainErr(t.Context(), &out, ""); err != nil {
		t.Fatalf("mainErr: %v\n%s", err, out.String())
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasPrefix(first, "cluster: in-memory demo") {
		t.Errorf("first line = %q, want the demo cluster", first)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the demo took %v, want a few seconds at most", took)
	}
}

func TestLoadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// clientcmd checks that referenced files exist, as in a real kubeconfig.
	write("a/ca.crt", "placeholder CA")
	write("a/token", "placeholder-token")
	first := write("a/config", `
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster:
    server: https://dev.example:6443
    certificate-authority: ca.crt
    proxy-url: http://proxy.example:3128
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: dev}
contexts:
- name: dev
  context: {cluster: dev, user: dev-user}
users:
- name: dev-user
  user:
    tokenFile: token
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/login
      interactiveMode: Never
`)
	second := write("b/config", `
apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev
  cluster: {server: https://shadowed.example}
- name: prod
  cluster: {server: https://prod.example, insecure-skip-tls-verify: true}
contexts:
- name: prod
  context: {cluster: prod, user: prod-user}
users:
- name: prod-user
  user: {username: admin, password: secret}
`)

	t.Run("KUBECONFIG list", func(t *testing.T) {
		t.Setenv("KUBECONFIG", strings.Join([]string{filepath.Join(dir, "missing"), first, second}, string(filepath.ListSeparator)))
		config, context, err := loadKubeconfig("")
		if err != nil {
			t.Fatal(err)
		}
		if context != "dev" || config.Host != "https://dev.example:6443" {
			t.Errorf("got context %q, host %q; want the first file's dev", context, config.Host)
		}
		if want := filepath.Join(dir, "a", "ca.crt"); config.CAFile != want {
			t.Errorf("CAFile = %q, want %q", config.CAFile, want)
		}
		if want := filepath.Join(dir, "a", "token"); config.BearerTokenFile != want {
			t.Errorf("BearerTokenFile = %q, want %q", config.BearerTokenFile, want)
		}
		if config.ExecProvider == nil || config.ExecProvider.Command != filepath.Join(dir, "a", "bin", "login") {
			t.Errorf("ExecProvider = %+v, want the command resolved against a/", config.ExecProvider)
		} else if config.ExecProvider.Config == nil {
			t.Error("ExecProvider.Config is nil, want the cluster's exec extension")
		}
		if config.Proxy == nil {
			t.Error("Proxy is nil, want proxy-url")
		}
	})

	t.Run("explicit", func(t *testing.T) {
		t.Setenv("KUBECONFIG", first)
		config, context, err := loadKubeconfig(second)
		if err != nil {
			t.Fatal(err)
		}
		if context != "prod" || config.Host != "https://prod.example" || !config.Insecure || config.Username != "admin" {
			t.Errorf("got context %q, config %+v; want prod from the explicit file", context, config)
		}
	})

	t.Run("explicit file missing", func(t *testing.T) {
		if _, _, err := loadKubeconfig(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("got %v, want a not-exist error", err)
		}
	})
}

// checkNoInformerGoroutines fails if goroutines of client-go's informer
// machinery outlive run: Shutdown must have waited for all of them.
func checkNoInformerGoroutines(t *testing.T) {
	t.Helper()
	var stacks string
	for deadline := time.Now().Add(2 * time.Second); ; {
		var buf bytes.Buffer
		if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
			t.Fatal(err)
		}
		stacks = buf.String()
		if !strings.Contains(stacks, "k8s.io/client-go/tools/cache.") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(stacks, "k8s.io/client-go/tools/cache.") {
		t.Errorf("informer goroutines still running after run returned:\n%s", stacks)
	}
}
