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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
)

// TestMemoryBytes: the bytes estimate of a factory's Pod informer and of
// a crcache Pod informer, over kube-apiserver, rises as Pods are created
// and falls as they are deleted; kubeinformers_informer_bytes (scraped
// over HTTP) says what MemoryStatus says, objects times bytes per object.
func TestMemoryBytes(t *testing.T) {
	c := setup(t)
	url := metricsEndpoint(t)
	mkPods := func(from, to int) {
		for i := from; i < to; i++ {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m-%03d", i), Labels: map[string]string{"app": "memory", "i": fmt.Sprint(i)}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "app", Image: "registry.k8s.io/pause:3.10", Env: []corev1.EnvVar{{Name: "A", Value: "some value"}}},
					{Name: "sidecar", Image: "registry.k8s.io/pause:3.10"},
				}},
			}
			if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkPods(0, 20)

	names := func(prefix string) (*toolscache.InformerName, string) {
		name := prefix + randSuffix()
		n, err := toolscache.NewInformerName(name)
		if err != nil {
			t.Fatal(err)
		}
		return n, name
	}
	fName, fLabel := names("e2e-memory-")
	f, err := informers.NewForConfig(env.AdminConfig(), 0, informers.WithNamespace(c.ns), informers.WithInformerName(fName))
	if err != nil {
		t.Fatal(err)
	}
	f.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(c.ctx)
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())

	cName, cLabel := names("e2e-memory-crcache-")
	crc, err := crcache.NewCache(informers.WithInformerName(cName))(env.AdminConfig(), cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crc.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- crc.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-cacheDone; err != nil {
			t.Errorf("crcache Start: %v", err)
		}
	}()

	type source struct {
		name   string
		label  string
		status func() map[informers.InformerID]informers.MemoryStatus
	}
	sources := []source{
		{"factory", fLabel, f.MemoryStatus},
		// crcache reports each informer under the cache's name, its form and kind.
		{"crcache", cLabel + "/structured/Pod.v1", crc.(*crcache.Cache).MemoryStatus},
	}
	// check waits until each source's Pod informer holds want objects and
	// its gauge equals MemoryStatus's bytes, and returns the bytes.
	check := func(want int) map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		for _, s := range sources {
			var st informers.MemoryStatus
			var gauge, objects float64
			ok := eventually(30*time.Second, 20*time.Millisecond, func() bool {
				for id, m := range s.status() {
					if id.Resource.Resource == "pods" {
						st = m
					}
				}
				sc := scrapeNow(t, url)
				labels := []string{`factory="` + s.label + `"`, `resource="pods"`}
				gauge = sc.value("kubeinformers_informer_bytes", labels...)
				objects = sc.value("kubeinformers_informer_objects", labels...)
				return st.Objects == want && objects == float64(want) && gauge == float64(st.Bytes) && st.Bytes > 0
			})
			if !ok {
				t.Fatalf("%s: want %d objects: MemoryStatus %+v, gauges objects=%v bytes=%v", s.name, want, st, objects, gauge)
			}
			t.Logf("%s: %d Pods: kubeinformers_informer_bytes %.0f = MemoryStatus.Bytes %d (%d B per Pod)", s.name, want, gauge, st.Bytes, st.Bytes/int64(want))
			if per := st.Bytes / int64(want); per < 1000 || per > 20000 {
				t.Errorf("%s: %d bytes per Pod, want between 1000 and 20000 for these Pods", s.name, per)
			}
			out[s.name] = st.Bytes
		}
		return out
	}
	first := check(20)
	mkPods(20, 60)
	grown := check(60)
	for i := range 50 {
		if err := c.client.CoreV1().Pods(c.ns).Delete(c.ctx, fmt.Sprintf("m-%03d", i), metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			t.Fatal(err)
		}
	}
	shrunk := check(10)
	for _, s := range sources {
		if grown[s.name] <= first[s.name] || shrunk[s.name] >= first[s.name] {
			t.Errorf("%s: bytes %d at 20 Pods, %d at 60, %d at 10: want a rise, then a fall", s.name, first[s.name], grown[s.name], shrunk[s.name])
		}
	}
}
