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
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// faulty is a started factory over a fake with faults, and a handler on
// its pod informer.
type faulty struct {
	client  *fake.Clientset
	faults  *informertest.Faults
	factory informers.Factory
	h       *slow
	ctx     context.Context
}

// newFaulty makes the factory; serve makes its informers stream (see
// streams), before sets faults before it starts.
func newFaulty(t *testing.T, serve func(informertest.FakeClient), before func(*informertest.Faults)) *faulty {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	client := fake.NewClientset()
	informertest.StampResourceVersions(client)
	faults := informertest.NewFaults(client)
	serve(client)
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := &slow{}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(faults)
	}
	f.StartWithContext(ctx)
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	return &faulty{client: client, faults: faults, factory: f, h: h, ctx: ctx}
}

func (x *faulty) create(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := x.client.CoreV1().Pods("a").Create(x.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "a"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (x *faulty) settle(t *testing.T) {
	t.Helper()
	if err := informertest.Settle(x.ctx, x.factory); err != nil {
		t.Fatal(err)
	}
}

// requests counts the client's list and watch requests for pods.
func (x *faulty) requests() (lists, watches int) {
	for _, a := range x.client.Actions() {
		if a.GetResource() != pods {
			continue
		}
		switch a.GetVerb() {
		case "list":
			lists++
		case "watch":
			watches++
		}
	}
	return lists, watches
}

func TestFaultsEndWatches(t *testing.T) {
	streams(t, pods, func(t *testing.T, serve func(informertest.FakeClient)) {
		x := newFaulty(t, serve, nil)
		x.settle(t)
		x.create(t, "p1", "p2")
		x.settle(t)
		if n := x.faults.EndWatches(pods); n != 1 {
			t.Fatalf("ended %d watches, want 1", n)
		}
		x.create(t, "p3") // while the informer watches again, or before
		x.settle(t)
		x.h.check(t, "a watch that ended", 3, 0, 0)
		if lists, watches := x.requests(); lists != 1 || watches != 2 {
			t.Fatalf("%d lists and %d watches, want 1 and 2: the informer resumes its watch without listing", lists, watches)
		}
	})
}

func TestFaultsExpireWatches(t *testing.T) {
	streams(t, pods, func(t *testing.T, serve func(informertest.FakeClient)) {
		x := newFaulty(t, serve, nil)
		x.settle(t)
		x.create(t, "p1", "p2")
		x.settle(t)
		if n := x.faults.ExpireWatches(pods); n != 1 {
			t.Fatalf("expired %d watches, want 1", n)
		}
		x.create(t, "p3")
		x.settle(t)
		// The relist delivers p3 once, as an add, and p1 and p2 again, as
		// updates (client-go's informer gives every object of a relist).
		x.h.check(t, "an expired watch", 3, 2, 0)
		if lists, watches := x.requests(); lists != 2 || watches != 2 {
			t.Fatalf("%d lists and %d watches, want 2 and 2: the informer lists again after 410", lists, watches)
		}
		if err := x.factory.Ready(); err != nil {
			t.Fatalf("Ready after the relist: %v", err)
		}
	})
}

func TestFaultsForbid(t *testing.T) {
	streams(t, pods, func(t *testing.T, serve func(informertest.FakeClient)) {
		x := newFaulty(t, serve, nil)
		x.settle(t)
		x.create(t, "p1")
		x.settle(t)
		x.faults.Forbid(pods)
		x.create(t, "p2") // writes still succeed
		if err := x.faults.WaitRefused(x.ctx, pods, 2); err != nil {
			t.Fatal(err)
		}
		err := x.factory.Ready()
		if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "pods (v1)") {
			t.Fatalf("Ready while forbidden = %v, want a 403 naming pods (v1)", err)
		}
		if !x.factory.SyncStatus()[podsID()] {
			t.Fatal("SyncStatus: an informer that had synced reports not synced")
		}
		x.faults.Allow(pods)
		x.settle(t)
		// The relist adds p2 and gives p1 again.
		x.h.check(t, "forbidden, then allowed", 2, 1, 0)
		if err := x.factory.Ready(); err != nil {
			t.Fatalf("Ready once allowed: %v", err)
		}
	})
}

func TestFaultsForbiddenFromTheStart(t *testing.T) {
	streams(t, pods, func(t *testing.T, serve func(informertest.FakeClient)) {
		x := newFaulty(t, serve, func(f *informertest.Faults) { f.Forbid(pods) })
		x.create(t, "p1")
		if err := x.faults.WaitRefused(x.ctx, pods, 2); err != nil {
			t.Fatal(err)
		}
		if x.factory.SyncStatus()[podsID()] {
			t.Fatal("SyncStatus: synced while every list is forbidden")
		}
		if err := x.factory.Ready(); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Fatalf("Ready = %v, want a 403", err)
		}
		x.faults.Allow(pods)
		x.settle(t)
		if !x.factory.SyncStatus()[podsID()] {
			t.Fatal("SyncStatus: not synced after Settle")
		}
		x.h.check(t, "allowed", 1, 0, 0)
		if err := x.factory.Ready(); err != nil {
			t.Fatalf("Ready once allowed: %v", err)
		}
	})
}

func podsID() informers.InformerID {
	return informers.InformerID{Form: informers.FormTyped, Resource: pods, Type: reflectTypeOfPod}
}

var reflectTypeOfPod = reflect.TypeFor[*corev1.Pod]()
