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

package listwatch

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeinformers/informers/internal/settle"
	"github.com/kubeinformers/informers/sharding"
)

// realClient stands for a client that is not one of client-go's fakes.
type realClient struct{}

// BenchmarkShardedWatchEvent is the cost of one watch event through a
// sharded informer's filter (shard.go) over a real client: from the
// server's channel to the reflector's, the shard's hash included. The
// test kit's markers (internal/settle) must add nothing to it, also in a
// process where an informer over a fake client exists (fake-in-process).
func BenchmarkShardedWatchEvent(b *testing.B) {
	b.Run("real", benchShardedWatch)
	b.Run("fake-in-process", func(b *testing.B) {
		settle.New("a fake's informer", "", &corev1.ConfigMap{})
		benchShardedWatch(b)
	})
}

func benchShardedWatch(b *testing.B) {
	events := make(chan watch.Event, b.N)
	for i := range b.N {
		name := fmt.Sprintf("cm-%d", i)
		events <- watch.Event{Type: watch.Modified, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, ResourceVersion: strconv.Itoa(i + 2),
			UID: types.UID(fmt.Sprintf("%x", sha256.Sum256([]byte(name)))),
		}}}
	}
	close(events)
	sel, err := sharding.NewSelector(sharding.FieldUID, sharding.Range{})
	if err != nil {
		b.Fatal(err)
	}
	api := sel.APISelector()
	w := shardedWatch(b, realClient{}, &fixedSharder{Shard{Tweak: func(o *metav1.ListOptions) { o.ShardSelector = api.String() }, Keep: api.Matches}}, events)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, ok := <-w.ResultChan(); !ok {
			b.Fatal("the watch ended early")
		}
	}
}

// fixedSharder is a Sharder whose shard never changes.
type fixedSharder struct{ shard Shard }

func (s *fixedSharder) Current() Shard         { return s.shard }
func (s *fixedSharder) Ignored(runtime.Object) {}
