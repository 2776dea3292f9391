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

package readyourwrites_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/readyourwrites"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// versioned is a Pod that carries a resource version, as a real server's
// do: client-go's fake clientset keeps the objects it is given as they
// are, so a test sets the version itself.
func versioned(ns, name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// startFactory starts f and waits for its caches; it stops them at the end
// of the test.
func startFactory(t *testing.T, f informers.Factory) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	f.StartWithContext(ctx)
	t.Cleanup(func() { cancel(); f.Shutdown() })
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestWritesFakes: a write through client-go's fake clientset returns no
// resource version; Writes records nothing for it, so that code under
// tests with fakes runs as it would without waiting.
func TestWritesFakes(t *testing.T) {
	client := fake.NewClientset()
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Core().V1().Pods().Informer()
	ctx := startFactory(t, f)
	created, err := client.CoreV1().Pods("a").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := readyourwrites.New(f)
	w.Wrote(podsResource, created, nil)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := w.Wait(short, podsResource, "a"); err != nil {
		t.Fatalf("Writes.Wait after a fake's write: %v, want nil", err)
	}
}

func TestWrites(t *testing.T) {
	client := fake.NewClientset(versioned("a", "old", "5"))
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	lister := f.Core().V1().Pods().Lister()
	ctx := startFactory(t, f)
	w := readyourwrites.New(f)

	// Nothing recorded: nothing to wait for.
	if err := w.Wait(ctx, podsResource, ""); err != nil {
		t.Fatalf("Wait with nothing recorded: %v", err)
	}
	// A failed write records nothing.
	w.Wrote(podsResource, versioned("a", "x", "999"), apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "x", errors.New("conflict")))
	w.Deleted(podsResource, versioned("a", "x", "999"), errors.New("connection refused"))
	if err := w.Wait(ctx, podsResource, "a"); err != nil {
		t.Fatalf("Wait after failed writes: %v", err)
	}

	// The delete first: the fake's delete event carries the object as it
	// was (version 5), where a server's carries the deletion's version.
	err = client.CoreV1().Pods("a").Delete(ctx, "old", metav1.DeleteOptions{})
	w.Deleted(podsResource, &metav1.ObjectMeta{Namespace: "a", Name: "old"}, err)
	for i, name := range []string{"p1", "p2", "p3"} {
		created, err := client.CoreV1().Pods("a").Create(ctx, versioned("a", name, string(rune('6'+i))), metav1.CreateOptions{})
		w.Wrote(podsResource, created, err)
	}
	ctx10, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.Wait(ctx10, podsResource, ""); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	for _, name := range []string{"p1", "p2", "p3"} {
		if _, err := lister.Pods("a").Get(name); err != nil {
			t.Errorf("after Wait, the lister lacks %s: %v", name, err)
		}
	}
	if _, err := lister.Pods("a").Get("old"); !apierrors.IsNotFound(err) {
		t.Errorf("after Wait, the lister still has the deleted pod: %v", err)
	}
	// A delete of an object that was already gone is still waited for:
	// the cache may hold it.
	w.Deleted(podsResource, &metav1.ObjectMeta{Namespace: "a", Name: "never"}, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "never"))
	if err := w.Wait(ctx10, podsResource, "a"); err != nil {
		t.Fatalf("Wait after a NotFound delete: %v", err)
	}
}
