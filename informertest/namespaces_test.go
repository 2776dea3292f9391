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
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

// TestSettleWhileSetNamespaces: Settle reads what each informer's hooks
// hold (the followers of its namespaces over a fake client, the client
// otherwise) while SetNamespaces, outside the factory's lock, builds the
// informers of added namespaces, which write it. Run with -race. Over a
// fake client each Settle returns nil; over a real one (a server that
// forbids everything, so that the informers stop at once), ErrNotFake.
func TestSettleWhileSetNamespaces(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer server.Close()
	realClient, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client kubernetes.Interface
		want   error
	}{
		{"fake", fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}}), nil},
		{"real", realClient, informertest.ErrNotFake},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			factory, err := informers.New(tc.client, 0, informers.WithNamespaces("a"))
			if err != nil {
				t.Fatal(err)
			}
			factory.Core().V1().Pods().Informer()
			factory.Start(ctx.Done())
			defer factory.Shutdown()
			defer cancel()

			// Namespaces are only added: removing one synchronises
			// with Settle's lock, which would hide the race.
			done := make(chan struct{})
			go func() {
				defer close(done)
				set := []string{"a"}
				for i := range 30 {
					set = append(set, fmt.Sprint("n", i))
					if err := factory.SetNamespaces(set...); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			for running := true; running; {
				select {
				case <-done:
					running = false // one more Settle, after the last set
				default:
				}
				if err := informertest.Settle(ctx, factory); !errors.Is(err, tc.want) {
					t.Fatalf("Settle = %v, want %v", err, tc.want)
				}
			}
		})
	}
}

// TestSettleWhileRemovingNamespaces: a namespace that SetNamespaces
// removes is no longer part of what Settle waits for, whether it is
// removed while Settle waits for it, before its informer ever ran, or
// before Settle is called. Each Settle, over a fake client, returns nil
// within its deadline while another goroutine alternately adds and
// removes namespaces (with Pods in them, so that there are events to
// deliver). Run with -race.
func TestSettleWhileRemovingNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var objs []runtime.Object
	for _, ns := range []string{"a", "b", "c"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
	}
	client := fake.NewClientset(objs...)
	factory, err := informers.New(client, 0, informers.WithNamespaces("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()

	done := make(chan struct{})
	go func() {
		defer close(done)
		sets := [][]string{{"a", "b"}, {"a"}, {"a", "b", "c"}, {"a", "c"}, {"a"}}
		for i := range 60 {
			if err := factory.SetNamespaces(sets[i%len(sets)]...); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	settle := func() {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
		defer scancel()
		if err := informertest.Settle(sctx, factory); err != nil {
			t.Fatalf("Settle = %v, want nil", err)
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false // one more Settle, after the last set
		default:
		}
		settle()
	}
	// The last set is {"a"}: a Settle now waits for namespace a only.
	settle()
}
