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

package informers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	informers "github.com/kubeinformers/informers"
)

// stallServer speaks the watch-list protocol to client-go's reflector, as
// a proxy that drops the end bookmark does: a watch with
// sendInitialEvents sends every pod as ADDED, then nothing; a LIST answers
// with the pods at resourceVersion 10; a plain watch stays open. It
// records the query of every request.
type stallServer struct {
	pods []corev1.Pod
	// streamed is how many pods a stream sends.
	streamed int

	mu       sync.Mutex
	requests []string
}

func (s *stallServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.RawQuery)
	s.mu.Unlock()
	if r.URL.Path != "/api/v1/pods" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: s.pods}
		_ = json.NewEncoder(w).Encode(&list)
		return
	}
	w.WriteHeader(http.StatusOK)
	if q.Get("sendInitialEvents") == "true" {
		enc := json.NewEncoder(w)
		for i := range s.streamed {
			pod := s.pods[i]
			pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": &pod})
		}
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func (s *stallServer) queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// syncBuffer is a bytes.Buffer that the informers' goroutines and the
// test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A watch-list stream that sends objects but never the end bookmark is
// abandoned after listwatch.StallTimeout: with default options the
// informer then syncs from a consistent LIST, Ready names the stream while
// it waits, and Notices and one log line say what happened.
func TestStalledStreamFallsBackToList(t *testing.T) {
	srv := &stallServer{streamed: 2}
	for i := range 3 {
		srv.pods = append(srv.pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprint("uid-", i)), ResourceVersion: fmt.Sprint(i + 1),
		}})
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: ts.URL})

	var logs syncBuffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	f, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	defer cancel()
	pods := f.Core().V1().Pods()
	pods.Informer()
	f.StartWithContext(ctx)

	// While the stream is silent, Ready names it and what it sent.
	var waiting string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		err := f.Ready()
		if err != nil && strings.Contains(err.Error(), "watch-list stream: 2 objects received, no end bookmark for ") {
			waiting = err.Error()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if waiting == "" {
		t.Fatalf("Ready() never named the waiting stream; last: %v", f.Ready())
	}
	if !strings.HasPrefix(waiting, "informers not ready: pods (v1): not synced: watch-list stream: 2 objects received") {
		t.Errorf("Ready() = %q", waiting)
	}

	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	for typ, ok := range f.WaitForCacheSyncWithContext(syncCtx).Synced {
		if !ok {
			t.Fatalf("%v not synced 30 s after Start; Ready: %v", typ, f.Ready())
		}
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() = %v after sync", err)
	}
	// The cache holds what the LIST said, not only what the stream sent.
	got, err := pods.Lister().List(labels.Everything())
	if err != nil || len(got) != 3 {
		t.Errorf("lister has %d pods (%v), want the 3 of the LIST", len(got), err)
	}

	notices := f.Notices()
	want := "pods (v1): watch-list stream stalled (2 objects received, no end bookmark and nothing for 10 s); the informer lists instead (a consistent LIST, then a WATCH) for the rest of its life"
	if len(notices) != 1 || notices[0] != want {
		t.Errorf("Notices() = %q, want [%q]", notices, want)
	}
	if n := strings.Count(logs.String(), "watch-list stream stalled"); n != 1 {
		t.Errorf("%d log lines about the stall, want 1:\n%s", n, logs.String())
	} else if !strings.Contains(logs.String(), `resource="/v1, Resource=pods"`) {
		t.Errorf("the log line does not name the resource:\n%s", logs.String())
	}

	// One stream, then a consistent LIST (no resourceVersion, paged), then
	// a plain watch from the LIST's resourceVersion, which may come just
	// after the sync.
	plainWatch := func() bool {
		for _, q := range srv.queries() {
			if strings.Contains(q, "watch=true") && !strings.Contains(q, "sendInitialEvents") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !plainWatch() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	var streams, lists, watches int
	for _, q := range srv.queries() {
		switch {
		case strings.Contains(q, "sendInitialEvents=true"):
			streams++
		case strings.Contains(q, "watch=true"):
			watches++
			if !strings.Contains(q, "resourceVersion=10") {
				t.Errorf("watch after the LIST: %q, want resourceVersion=10", q)
			}
		default:
			lists++
			if strings.Contains(q, "resourceVersion=") || !strings.Contains(q, "limit=500") {
				t.Errorf("LIST %q, want a consistent read (no resourceVersion) with limit=500", q)
			}
		}
	}
	if streams != 1 || lists != 1 || watches < 1 {
		t.Errorf("requests %q: %d streams, %d lists, %d watches; want 1, 1, at least 1", srv.queries(), streams, lists, watches)
	}
}
