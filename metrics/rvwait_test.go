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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	informers "github.com/kubeinformers/informers"
)

// TestResourceVersionWaits: a wait that returns and one that runs out of
// time are both observed in kubeinformers_informer_rv_wait_seconds, and the
// second is counted in kubeinformers_informer_rv_wait_errors_total; the
// series go when the factory shuts down.
func TestResourceVersionWaits(t *testing.T) {
	const name = "rv-waits"
	client := fake.NewClientset()
	f, err := informers.New(client, 0, named(t, name))
	if err != nil {
		t.Fatal(err)
	}
	f.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(t.Context())
	f.StartWithContext(ctx)
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	// The fake keeps the version it is given, as a server would set it.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", ResourceVersion: "100"}}
	if _, err := client.CoreV1().Pods("a").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, 10*time.Second)
	defer cancelWait()
	if err := f.WaitForResourceVersion(waitCtx, podsGVR, "a", "100"); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if err := f.WaitForResourceVersion(short, podsGVR, "a", "200"); err == nil {
		t.Fatal("a wait for a version never written returned nil")
	}
	if v, ok := value(t, name, "kubeinformers_informer_rv_wait_seconds", podLabels); !ok || v != 2 {
		t.Errorf("rv_wait_seconds: %v observations (series present: %v), want 2", v, ok)
	}
	if v, ok := value(t, name, "kubeinformers_informer_rv_wait_errors_total", podLabels); !ok || v != 1 {
		t.Errorf("rv_wait_errors_total: %v (series present: %v), want 1", v, ok)
	}
	cancel()
	f.Shutdown()
	for _, s := range gather(t, name) {
		t.Errorf("series left after Shutdown: %s %v", s.name, s.labels)
	}
}
