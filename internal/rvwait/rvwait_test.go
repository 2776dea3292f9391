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

package rvwait

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// noWatchList makes the reflector list, then watch: the fake watch below
// sends no initial events.
type noWatchList struct{}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// running is an informer of pods over a fake watch the test drives.
type running struct {
	informer cache.SharedIndexInformer
	w        *watch.FakeWatcher
	src      *Source
}

func start(t *testing.T, listRV string, pods ...runtime.Object) *running {
	t.Helper()
	w := watch.NewFakeWithChanSize(100, false)
	var once sync.Once
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: listRV}}
			for _, p := range pods {
				list.Items = append(list.Items, *p.(*corev1.Pod))
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			first := false
			once.Do(func() { first = true })
			if first {
				return w, nil
			}
			// Later watches (none expected) wait for the end.
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	informer := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, noWatchList{}), &corev1.Pod{}, cache.SharedIndexInformerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	return &running{informer: informer, w: w, src: NewSource("", informer)}
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// reached runs Reached in a goroutine and returns its outcome's channel.
func reached(ctx context.Context, src *Source, want string) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := src.Reached(ctx, want)
		out <- err
	}()
	return out
}

func TestReachedByEvent(t *testing.T) {
	r := start(t, "10")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res := reached(ctx, r.src, "12")
	r.w.Add(pod("a", "11"))
	select {
	case err := <-res:
		t.Fatalf("returned %v at version 11, want 12", err)
	case <-time.After(50 * time.Millisecond):
	}
	r.w.Add(pod("b", "12"))
	if err := <-res; err != nil {
		t.Fatalf("Reached(12): %v", err)
	}
	// What Reached promises: the lister has the write.
	if _, ok, _ := r.informer.GetStore().GetByKey("ns/b"); !ok {
		t.Fatal("Reached returned before the cache held the object at the version")
	}
	// A version already reflected returns at once.
	if _, err := r.src.Reached(ctx, "11"); err != nil {
		t.Fatalf("Reached(11) after 12: %v", err)
	}
}

func TestReachedByBookmark(t *testing.T) {
	r := start(t, "10")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res := reached(ctx, r.src, "40")
	time.Sleep(20 * time.Millisecond)
	// A write the informer never sees (another shard, a selector) is
	// reflected by the next bookmark past it.
	r.w.Action(watch.Bookmark, pod("", "50"))
	if err := <-res; err != nil {
		t.Fatalf("Reached(40) after a bookmark at 50: %v", err)
	}
	if got := r.src.Newest(); got != "50" {
		t.Fatalf("Newest = %q, want 50", got)
	}
}

func TestReachedTimesOut(t *testing.T) {
	r := start(t, "10")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	newest, err := r.src.Reached(ctx, "11")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reached past the deadline: %v, want DeadlineExceeded", err)
	}
	if newest != "10" || !strings.Contains(err.Error(), "resource version 11 not reached, newest seen 10") {
		t.Fatalf("newest %q, error %q: want both to name the versions", newest, err)
	}
}

func TestNotComparable(t *testing.T) {
	for _, rv := range []string{"", "0", "abc", "-1", "012"} {
		if err := Check(rv); !errors.Is(err, ErrNotComparable) {
			t.Errorf("Check(%q) = %v, want ErrNotComparable", rv, err)
		}
	}
	if err := Check("123"); err != nil {
		t.Errorf("Check(123) = %v", err)
	}
	// A server whose versions are not etcd's: the cache holds one that
	// cannot be ordered.
	r := start(t, "10")
	r.w.Add(pod("a", "opaque-7"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for r.src.Newest() != "opaque-7" {
		time.Sleep(time.Millisecond)
	}
	if _, err := r.src.Reached(ctx, "11"); !errors.Is(err, ErrNotComparable) || !strings.Contains(err.Error(), `"opaque-7"`) {
		t.Fatalf("Reached on a cache at an opaque version: %v, want ErrNotComparable naming it", err)
	}
	// client-go's fakes: objects without a version leave the cache at "".
	r.w.Add(pod("b", ""))
	for r.src.Newest() != "" {
		time.Sleep(time.Millisecond)
	}
	if _, err := r.src.Reached(ctx, "11"); !errors.Is(err, ErrNotComparable) || !strings.Contains(err.Error(), "fake") {
		t.Fatalf("Reached on a synced cache without versions: %v, want ErrNotComparable naming fakes", err)
	}
}

func TestGone(t *testing.T) {
	r := start(t, "10", pod("a", "5"), pod("b", "6"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Not in the cache: nothing to wait for.
	if err := r.src.Gone(ctx, "ns/zzz", ""); err != nil {
		t.Fatalf("Gone of an object never cached: %v", err)
	}
	// Another object of the same name (recreated) counts as gone.
	if err := r.src.Gone(ctx, "ns/a", "another-uid"); err != nil {
		t.Fatalf("Gone of a replaced object: %v", err)
	}
	res := make(chan error, 1)
	go func() { res <- r.src.Gone(ctx, "ns/a", "uid-a") }()
	select {
	case err := <-res:
		t.Fatalf("Gone returned %v while the object is cached", err)
	case <-time.After(30 * time.Millisecond):
	}
	r.w.Delete(pod("a", "11"))
	if err := <-res; err != nil {
		t.Fatalf("Gone after the delete event: %v", err)
	}
	// An object marked for deletion (finalizers) shows the deletion.
	marked := pod("b", "12")
	marked.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	go func() { res <- r.src.Gone(ctx, "ns/b", "") }()
	r.w.Modify(marked)
	if err := <-res; err != nil {
		t.Fatalf("Gone after the object was marked for deletion: %v", err)
	}
	short, cancelShort := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancelShort()
	r.w.Add(pod("c", "13"))
	for r.src.Newest() != "13" {
		time.Sleep(time.Millisecond)
	}
	if err := r.src.Gone(short, "ns/c", ""); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "ns/c") {
		t.Fatalf("Gone past the deadline: %v", err)
	}
}

func TestCovers(t *testing.T) {
	all, one := NewSource("", nil), NewSource("a", nil)
	if !all.Covers("a") || !all.Covers("") || !one.Covers("a") || one.Covers("b") || !one.Covers("") {
		t.Fatal("Covers: wrong answers")
	}
	var s Sources
	s.Add("a", nil)
	s.Add("b", nil)
	if got := s.All(); len(got) != 2 || got[0].Namespace() != "a" || got[1].Namespace() != "b" {
		t.Fatalf("All = %v", got)
	}
	if got := s.AllOr(nil); len(got) != 2 {
		t.Fatalf("AllOr added to sources that had some: %v", got)
	}
	var none Sources
	if got := none.AllOr(nil); len(got) != 1 || got[0].Namespace() != "" || len(none.All()) != 1 {
		t.Fatalf("AllOr on no sources = %v, want one of every namespace", got)
	}
}
