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
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeinformers/informers/internal/settle"
)

// ignoreAll is a Sharder whose shard keeps no object.
type ignoreAll struct{ ignored atomic.Int32 }

func (s *ignoreAll) Current() Shard {
	return Shard{Tweak: func(*metav1.ListOptions) {}, Keep: func(runtime.Object) (bool, error) { return false, nil }}
}
func (s *ignoreAll) Ignored(runtime.Object) { s.ignored.Add(1) }

// TestMarkersOnlyOverAFake: the shard filter lets the test kit's markers
// (internal/settle) through only for an informer over a fake client; over
// a real client it does not ask the kit, and an object that looks like a
// marker is filtered as any other.
func TestMarkersOnlyOverAFake(t *testing.T) {
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "kubeinformers~settle~1", ResourceVersion: "2",
		Annotations: map[string]string{settle.MarkerAnnotation: "1"},
	}}
	if !settle.IsMarker(marker) {
		t.Fatal("the test's marker is not one")
	}
	for name, tc := range map[string]struct {
		client any
		passes bool
	}{
		"fake": {&clienttesting.Fake{}, true},
		"real": {realClient{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			events := make(chan watch.Event, 2)
			events <- watch.Event{Type: watch.Deleted, Object: marker}
			events <- watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "3"}}}
			sharder := &ignoreAll{}
			w := shardedWatch(t, tc.client, sharder, events)
			first := <-w.ResultChan()
			if got := first.Type == watch.Deleted; got != tc.passes {
				t.Errorf("the marker passed the filter: %v, want %v (first event %s)", got, tc.passes, first.Type)
			}
			if want := int32(1); !tc.passes && sharder.ignored.Load() != want {
				t.Errorf("the filter ignored %d objects, want %d", sharder.ignored.Load(), want)
			}
		})
	}
}

// shardedWatch opens the watch of a ConfigMap informer over client,
// sharded by sharder, whose server sends events; the test stops it.
func shardedWatch(tb testing.TB, client any, sharder Sharder, events chan watch.Event) watch.Interface {
	tb.Helper()
	cfg := Config{
		Options: Options{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Requests: func(string) Requests {
				return Requests{Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					return watch.NewProxyWatcher(events), nil
				}}
			},
			Client:  client,
			Example: &corev1.ConfigMap{},
		},
		Shard: sharder,
	}
	w, err := New(cfg).WatchFuncWithContext(tb.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop)
	return w
}
