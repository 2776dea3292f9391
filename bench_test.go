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

package informers_test

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
	upstream "k8s.io/client-go/informers"
)

// The hot path: a controller that reaches its lister through the factory
// on every sync, once the informer exists. Each benchmark runs this library
// (impl=ours) and client-go (impl=upstream) in the same process, so
// `benchstat -col /impl` compares them side by side (see hack/bench.sh).
// impl=ours-metrics is ours with its informer running under a metrics
// provider (metrics.go).

type hotPath struct {
	name     string
	informer func() any
	lister   func() any
}

func hotPaths(tb testing.TB, client kubernetes.Interface) []hotPath {
	ours := informers.NewSharedInformerFactory(client, 0)
	metered := startedWithMetrics(tb, client)
	up := upstream.NewSharedInformerFactory(client, 0)
	// Create the informers first: the benchmarks measure the steady state.
	ours.Core().V1().Pods().Informer()
	up.Core().V1().Pods().Informer()
	return []hotPath{
		{"ours", func() any { return ours.Core().V1().Pods().Informer() }, func() any { return ours.Core().V1().Pods().Lister() }},
		{"ours-metrics", func() any { return metered.Core().V1().Pods().Informer() }, func() any { return metered.Core().V1().Pods().Lister() }},
		{"upstream", func() any { return up.Core().V1().Pods().Informer() }, func() any { return up.Core().V1().Pods().Lister() }},
	}
}

var sink any

func BenchmarkPodsInformer(b *testing.B) {
	for _, p := range hotPaths(b, fake.NewClientset()) {
		b.Run("impl="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = p.informer()
			}
		})
	}
}

func BenchmarkPodsLister(b *testing.B) {
	for _, p := range hotPaths(b, fake.NewClientset()) {
		b.Run("impl="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = p.lister()
			}
		})
	}
}

func BenchmarkPodsListerParallel(b *testing.B) {
	for _, p := range hotPaths(b, fake.NewClientset()) {
		b.Run("impl="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var local any
				for pb.Next() {
					local = p.lister()
				}
				_ = local
			})
		})
	}
}

func BenchmarkPodsInformerParallel(b *testing.B) {
	for _, p := range hotPaths(b, fake.NewClientset()) {
		b.Run("impl="+p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var local any
				for pb.Next() {
					local = p.informer()
				}
				_ = local
			})
		})
	}
}

// TestHotPathAllocatesNothing pins the property the benchmarks show: once
// the informer exists, the accessor chain allocates nothing.
func TestHotPathAllocatesNothing(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	factory.Core().V1().Pods().Lister()
	for name, f := range map[string]func(){
		"Informer":      func() { sink = factory.Core().V1().Pods().Informer() },
		"TypedInformer": func() { sink = factory.Core().V1().Pods().TypedInformer() },
		"Lister":        func() { sink = factory.Core().V1().Pods().Lister() },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("factory.Core().V1().Pods().%s() allocates %v times per call", name, n)
		}
	}
}
