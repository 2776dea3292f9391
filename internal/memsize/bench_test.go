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

package memsize

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkSync is the cheapest part of an informer's sync per object,
// decoding a Pod from protobuf and adding it to an indexer, with and
// without the meter's Observe: the meter's share of a real sync (HTTP,
// the reflector, the queue, transforms) is smaller than this ratio.
func BenchmarkSync(b *testing.B) {
	pod := testPod()
	raws := make([][]byte, 1000)
	for i := range raws {
		p := pod.DeepCopy()
		p.Name = fmt.Sprintf("pod-%05d", i)
		raw, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = raw
	}
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("meter=%v", on), func(b *testing.B) {
			m := NewMeter(1)
			store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			b.ReportAllocs()
			start := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
			for i := 0; b.Loop(); i++ {
				p := &corev1.Pod{}
				if err := p.Unmarshal(raws[i%len(raws)]); err != nil {
					b.Fatal(err)
				}
				if on {
					m.Observe(p)
				}
				if err := store.Add(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime is the process's user and system CPU time: on a loaded machine
// it tells more than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkObserve is the meter's cost per object entering a cache, its
// sampled walks included (one object in 32).
func BenchmarkObserve(b *testing.B) {
	m := NewMeter(1)
	p := testPod()
	for range sampleAll {
		m.Observe(p)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		m.Observe(p)
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
