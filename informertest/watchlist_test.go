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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

// initial counts adds that came with the informer's initial state.
type initial struct {
	slow
	initial atomic.Int64
}

func (h *initial) OnAdd(obj any, isInInitialList bool) {
	if isInInitialList {
		h.initial.Add(1)
	}
	h.slow.OnAdd(obj, isInInitialList)
}

// podObjects returns n pods of namespace a.
func podObjects(n int) []runtime.Object {
	out := make([]runtime.Object, n)
	for i := range out {
		out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: "a"}}
	}
	return out
}

// streamed is a factory over a fake that streams watch lists, with
// a handler on its pod informer, not started yet.
type streamed struct {
	client  *fake.Clientset
	wl      *informertest.WatchList
	factory informers.Factory
	h       *initial
	ctx     context.Context
}

func newStreamed(t *testing.T, objects ...runtime.Object) *streamed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	client := fake.NewClientset(objects...)
	informertest.StampResourceVersions(client)
	wl, err := informertest.ServeWatchList(client)
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := &initial{}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	return &streamed{client: client, wl: wl, factory: f, h: h, ctx: ctx}
}

// The initial state comes from the stream: every object, more than the
// fake's watch channel holds, reaches the handler as part of the initial
// list, at once after the end bookmark; later writes come as events.
func TestWatchListInitialState(t *testing.T) {
	x := newStreamed(t, podObjects(150)...)
	x.factory.StartWithContext(x.ctx)
	if err := informertest.Settle(x.ctx, x.factory); err != nil {
		t.Fatal(err)
	}
	x.h.check(t, "the start", 150, 0, 0)
	if n := x.h.initial.Load(); n != 150 {
		t.Fatalf("%d adds in the initial list, want 150", n)
	}
	if err := x.wl.WaitStreams(x.ctx, pods, 1); err != nil {
		t.Fatal(err)
	}
	if err := x.factory.Ready(); err != nil {
		t.Fatalf("Ready = %v", err)
	}
	if n := x.factory.Notices(); len(n) != 0 {
		t.Fatalf("Notices = %q, want none: the informer streamed as meant", n)
	}
	if _, err := x.client.CoreV1().Pods("a").Create(x.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := informertest.Settle(x.ctx, x.factory); err != nil {
		t.Fatal(err)
	}
	x.h.check(t, "a create", 151, 0, 0)
	if n := x.h.initial.Load(); n != 150 {
		t.Fatalf("%d adds in the initial list after a create, want 150", n)
	}
	// The stream's objects keep the fake's resource versions, and the
	// watch after it resumes from the list's: the create comes once.
	late, err := x.factory.Core().V1().Pods().Lister().Pods("a").Get("late")
	if err != nil || late.ResourceVersion == "" {
		t.Fatalf("the cached create: %v, %v", late, err)
	}
}

// While a stream sends no end bookmark, the informer is not synced, and
// Ready names the stream and what it sent.
func TestWatchListStalledReady(t *testing.T) {
	x := newStreamed(t, podObjects(3)...)
	x.wl.Stall(pods)
	x.wl.SetStallTimeout(time.Hour) // not abandoned while the test runs
	x.factory.StartWithContext(x.ctx)
	if err := x.wl.WaitStreams(x.ctx, pods, 1); err != nil {
		t.Fatal(err)
	}
	if x.factory.SyncStatus()[podsID()] {
		t.Fatal("SyncStatus: synced without the end bookmark")
	}
	err := x.factory.Ready()
	want := "informers not ready: pods (v1): not synced: watch-list stream: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "objects received, no end bookmark for ") {
		t.Fatalf("Ready = %v, want %q…", err, want)
	}
	x.h.check(t, "a stream without its end", 0, 0, 0)
}

// A stream that stalls is abandoned after the stall timeout: the informer
// lists instead, and syncs; Settle waits for that, with no sleep.
func TestWatchListStalledFallsBackToList(t *testing.T) {
	x := newStreamed(t, podObjects(3)...)
	x.wl.Stall(pods)
	x.wl.SetStallTimeout(50 * time.Millisecond)
	x.factory.StartWithContext(x.ctx)
	if err := informertest.Settle(x.ctx, x.factory); err != nil {
		t.Fatal(err)
	}
	if !x.factory.SyncStatus()[podsID()] {
		t.Fatal("SyncStatus: not synced after the fallback")
	}
	if err := x.factory.Ready(); err != nil {
		t.Fatalf("Ready after the fallback = %v", err)
	}
	// The stalled stream's objects never reached the handler; the LIST's did.
	x.h.check(t, "the fallback", 3, 0, 0)
	want := "pods (v1): watch-list stream stalled (3 objects received, no end bookmark and nothing for "
	if n := x.factory.Notices(); len(n) != 1 || !strings.HasPrefix(n[0], want) || !strings.HasSuffix(n[0], "); the informer lists instead (a consistent LIST, then a WATCH) for the rest of its life") {
		t.Fatalf("Notices = %q, want one starting %q", n, want)
	}
	// One stream (its start: a list of everything), then the consistent
	// paged LIST of the fallback.
	var lists []string
	for _, a := range x.client.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == pods {
			o := a.(interface{ GetListOptions() metav1.ListOptions }).GetListOptions()
			lists = append(lists, fmt.Sprintf("limit=%d", o.Limit))
		}
	}
	if got := strings.Join(lists, ","); got != "limit=0,limit=500" {
		t.Fatalf("lists: %s, want the stream's start (limit=0), then the fallback's paged LIST (limit=500)", got)
	}
	if _, err := x.client.CoreV1().Pods("a").Create(x.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := informertest.Settle(x.ctx, x.factory); err != nil {
		t.Fatal(err)
	}
	x.h.check(t, "a create after the fallback", 4, 0, 0)
}

// A factory in ListModeList lists even over a client that streams watch lists.
func TestWatchListModeList(t *testing.T) {
	client := fake.NewClientset(podObjects(2)...)
	wl, err := informertest.ServeWatchList(client)
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.New(client, 0, informers.WithListMode(informers.ListModeList))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Core().V1().Pods().Informer()
	f.StartWithContext(ctx)
	if err := informertest.Settle(ctx, f); err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(ctx)
	stop()
	if err := wl.WaitStreams(done, pods, 1); err == nil {
		t.Fatal("a stream was served in ListModeList")
	}
}

func TestServeWatchListNotFake(t *testing.T) {
	if _, err := informertest.ServeWatchList(notFake{}); err == nil || !strings.Contains(err.Error(), "informertest_test.notFake") {
		t.Fatalf("ServeWatchList(notFake{}) = %v, want an error naming the type", err)
	}
}

// notFake has the methods of a FakeClient, and is not one.
type notFake struct{ informertest.FakeClient }
