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

package informertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
	"github.com/kubeinformers/informers/sharding"
)

// TestSettleSharded: on a sharded factory the watch's shard filter lets
// Settle's marker through, whichever shard it would hash to, and the
// handler has seen exactly the objects of its shard: those of the initial
// state (a LIST or a watch-list stream) and those created after.
func TestSettleSharded(t *testing.T) {
	streams(t, pods, func(t *testing.T, serve func(informertest.FakeClient)) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		client := fake.NewClientset()
		serve(client)
		create := func(from, to int) {
			for i := from; i < to; i++ {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "a", UID: uuid.NewUUID()}}
				if _, err := client.CoreV1().Pods("a").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		create(0, 20)
		f, err := informers.New(client, 0, informers.WithShard(sharding.FieldUID, 0, 2))
		if err != nil {
			t.Fatal(err)
		}
		informer := f.Core().V1().Pods().Informer()
		h := &slow{}
		if _, err := informer.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
		f.StartWithContext(ctx)
		t.Cleanup(func() { cancel(); f.Shutdown() })
		create(20, 40)
		if err := informertest.Settle(ctx, f); err != nil {
			t.Fatal(err)
		}
		n := int64(len(informer.GetStore().List()))
		if n == 0 || n == 40 {
			all, _ := client.CoreV1().Pods("a").List(ctx, metav1.ListOptions{})
			t.Fatalf("shard 0 of 2 holds %d of 40 pods (fake holds %d); notices %v; ready %v", n, len(all.Items), f.Notices(), f.Ready())
		}
		h.check(t, "40 creates in two shards", n, 0, 0)
	})
}
