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
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	shopv1 "github.com/kubeinformers/informers/examples/controller-runtime/api/v1"
	"github.com/kubeinformers/informers/examples/controller-runtime/config/crd"
	"github.com/kubeinformers/informers/examples/controller-runtime/internal/controller"
)

// buildFlags are the flags the test builds the manager with: -race too when
// the test is race-built (race_test.go), so that the build reuses the test's
// compiled packages.
var buildFlags []string

// needServer skips the test when no kube-apiserver and etcd are given to
// envtest, and fails it when those given are not there.
func needServer(t *testing.T) {
	t.Helper()
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		for _, name := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Fatalf("KUBEBUILDER_ASSETS=%s: %v", dir, err)
			}
		}
		return
	}
	apiserver, etcd := os.Getenv("TEST_ASSET_KUBE_APISERVER"), os.Getenv("TEST_ASSET_ETCD")
	if apiserver == "" && etcd == "" {
		t.Skip("no kube-apiserver and etcd to run the manager on: set TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD " +
			"(hack/testenv/build.sh builds them into .cache/testenv/bin; CI's e2e lane sets both) or KUBEBUILDER_ASSETS")
	}
	for name, path := range map[string]string{"TEST_ASSET_KUBE_APISERVER": apiserver, "TEST_ASSET_ETCD": etcd} {
		if path == "" {
			t.Fatalf("%s is not set (TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD go together)", name)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s=%s: %v", name, path, err)
		}
	}
}

// TestManager runs the example's manager, built from this package, on a
// kube-apiserver and etcd that envtest starts with the Widget CRD
// installed: a Widget and a Pod it selects are created, the Pod
// reconciler annotates the Pod, the Widget reconciler counts it into the
// Widget's status, and counts 0 once the Pod is deleted. SIGTERM then stops
// the manager, which exits 0.
func TestManager(t *testing.T) {
	needServer(t)
	crds, err := crd.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		CRDInstallOptions: envtest.CRDInstallOptions{CRDs: crds},
		// envtest's default of 20 s is short on a busy 2-core machine.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("envtest: %v", err)
		}
	})

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	manager := filepath.Join(dir, "manager")
	build := exec.CommandContext(t.Context(), "go", append(append([]string{"build"}, buildFlags...), "-o", manager, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	logPath := filepath.Join(dir, "manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	// Killed when the test ends, if SIGTERM has not stopped it.
	cmd := exec.CommandContext(t.Context(), manager, "--kubeconfig", kubeconfig, "--health-probe-bind-address", "0", "--metrics-bind-address", "0")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("the manager's log:\n%s", out)
		}
	})

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	widget := &shopv1.Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "storefront"},
		Spec:       shopv1.WidgetSpec{Selector: map[string]string{"app": "storefront"}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "storefront-0", Labels: map[string]string{"app": "storefront"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/storefront:1"}}},
	}
	for _, obj := range []client.Object{widget, pod} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	// until polls cond, every 20 ms, until it holds; it fails the test if
	// the manager exits or ctx ends first.
	until := func(what string, cond func() bool) time.Duration {
		t.Helper()
		for !cond() {
			select {
			case err := <-exited:
				t.Fatalf("waiting for %s: the manager exited: %v", what, err)
			case <-ctx.Done():
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
		return time.Since(start)
	}
	podDone := until("the Pod's annotation", func() bool {
		var got corev1.Pod
		return c.Get(ctx, client.ObjectKeyFromObject(pod), &got) == nil && got.Annotations[controller.PhaseAnnotation] == string(corev1.PodPending)
	})
	widgetCounts := func(n int32) func() bool {
		return func() bool {
			var got shopv1.Widget
			return c.Get(ctx, client.ObjectKeyFromObject(widget), &got) == nil && got.Status.Pods == n && got.Status.ObservedGeneration == got.Generation
		}
	}
	widgetDone := until("the Widget's status to count 1 Pod", widgetCounts(1))

	deleted := time.Now()
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	until("the Widget's status to count 0 Pods", widgetCounts(0))
	deleteDone := time.Since(deleted)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopping := time.Now()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the manager, stopped by SIGTERM: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the manager did not stop within a minute of SIGTERM")
	}
	stopped := time.Since(stopping)

	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var reconciled []string
	sc := bufio.NewScanner(strings.NewReader(string(log)))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Reconciled") {
			reconciled = append(reconciled, sc.Text())
		}
	}
	if len(reconciled) < 3 {
		t.Errorf("the manager logged %d Reconciled lines, want at least 3 (Pod, Widget with 1 Pod, Widget with 0)", len(reconciled))
	}
	if strings.Contains(string(log), "\tERROR\t") {
		t.Errorf("the manager logged an error:\n%s", log)
	}
	t.Logf("the manager's reconciles:\n%s", strings.Join(reconciled, "\n"))
	fmt.Printf("example: the manager (NewCache: crcache.New) on envtest's kube-apiserver, the Widget and the Pod created as it started: "+
		"the Pod annotated %v and the Widget's status at 1 Pod %v after the manager's start (process start, cache sync and reconcile); "+
		"the Widget at 0 Pods %v after the Pod's delete; exit 0 %v after SIGTERM\n",
		podDone.Round(time.Millisecond), widgetDone.Round(time.Millisecond), deleteDone.Round(time.Millisecond), stopped.Round(time.Millisecond))
}
