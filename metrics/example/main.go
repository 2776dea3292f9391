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

// Command example serves the informer metrics on /metrics next to a
// /readyz that answers from the factory's Ready():
//
//	cd metrics && go run ./example                 # serves on :8080 until interrupted
//	cd metrics && go run ./example -check          # fetches both endpoints once and exits
//
// It runs against client-go's fake clientset seeded with a few Pods and
// ConfigMaps, and creates a Pod every second, so the counters move; it needs
// nothing beside it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/metrics"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	addr := fs.String("addr", ":8080", "address to serve /metrics and /readyz on")
	check := fs.Bool("check", false, "serve on a free local port, fetch /readyz and /metrics once, print them and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *check {
		*addr = "127.0.0.1:0"
	}

	// A registry of its own keeps the output short; prometheus.DefaultRegisterer
	// (with the Go runtime metrics) or controller-runtime's metrics.Registry
	// work the same.
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		return err
	}

	client := fake.NewClientset(seed()...)
	name, err := cache.NewInformerName("example")
	if err != nil {
		return err
	}
	factory, err := informers.New(client, 0, informers.WithInformerName(name))
	if err != nil {
		return err
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {}, // a controller would enqueue the key here
	}); err != nil {
		return err
	}
	factory.Core().V1().ConfigMaps().Informer()

	ctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	go createPods(ctx, client)

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := factory.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	fmt.Fprintf(out, "serving http://%s/metrics and http://%s/readyz\n", ln.Addr(), ln.Addr())

	if *check {
		if err := factory.WaitForCacheSyncWithContext(ctx).Err; err != nil {
			return err
		}
		// Each informer sets its synced gauge from its own goroutine, a
		// moment after WaitForCacheSync may return.
		for i := 0; !allSynced(reg) && i < 500; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		return fetch(ctx, out, "http://"+ln.Addr().String())
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// allSynced reports whether every synced gauge in reg reads 1.
func allSynced(reg prometheus.Gatherer) bool {
	mfs, err := reg.Gather()
	if err != nil {
		return false
	}
	for _, mf := range mfs {
		if mf.GetName() != "kubeinformers_informer_synced" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetGauge().GetValue() != 1 {
				return false
			}
		}
		return true
	}
	return false
}

// fetch prints /readyz and the kubeinformers lines of /metrics.
func fetch(ctx context.Context, out io.Writer, base string) error {
	for _, path := range []string{"/readyz", "/metrics"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
		}
		fmt.Fprintf(out, "GET %s: %s\n", path, resp.Status)
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "kubeinformers_") && !strings.Contains(line, "_bucket{") {
				fmt.Fprintln(out, "  "+line)
			} else if path == "/readyz" && line != "" {
				fmt.Fprintln(out, "  "+line)
			}
		}
	}
	return nil
}

// seed is the demo cluster: Pods and ConfigMaps in two namespaces.
func seed() []runtime.Object {
	var objs []runtime.Object
	for _, ns := range []string{"shop", "billing"} {
		for i := range 3 {
			objs = append(objs,
				&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i)}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("config-%d", i)}})
		}
	}
	return objs
}

// createPods adds a Pod every second until ctx ends.
func createPods(ctx context.Context, client *fake.Clientset) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("job-%d", i)}}
		if _, err := client.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "example: creating a pod:", err)
		}
	}
}
