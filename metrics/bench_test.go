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

package metrics

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	informers "github.com/kubeinformers/informers"
)

// BenchmarkWatchEvents is the informer's cost per watch event, from the
// watch channel to the cache, with metrics off (no provider: no handler at
// all, as a factory with no handler of its own) and on (the Prometheus
// binding: one counting handler, the arrival stamp, two counters). What
// metrics add per event, against the CPU a Pod costs to sync at scale
// (BENCHMARKS.md), is their share of the sync.
func BenchmarkWatchEvents(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("metrics=%v", on), func(b *testing.B) {
			if on {
				informers.SetMetricsProvider(provider{})
			} else {
				informers.SetMetricsProvider(nil)
			}
			defer informers.SetMetricsProvider(provider{})
			pods := make([]*corev1.Pod, b.N)
			for i := range pods {
				pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("p%d", i), ResourceVersion: fmt.Sprint(i + 1)}}
			}
			client := fake.NewClientset()
			w := watch.NewFakeWithChanSize(b.N, false)
			client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, w, nil })
			f, err := informers.New(client, 0)
			if err != nil {
				b.Fatal(err)
			}
			inf := f.Core().V1().Pods().Informer()
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); f.Shutdown() }()
			f.Start(ctx.Done())
			if err := f.WaitForCacheSyncWithContext(ctx).Err; err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for _, p := range pods {
				w.Add(runtime.Object(p))
			}
			// Events are applied in order: the last one in the cache
			// means all are.
			last := "a/" + pods[b.N-1].Name
			for {
				if _, ok, _ := inf.GetStore().GetByKey(last); ok {
					break
				}
				time.Sleep(50 * time.Microsecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
