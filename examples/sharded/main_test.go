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

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/textlogger"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// Without a cluster, and on bad flags, run returns an error naming the
// flag (main exits 2) instead of waiting for a server.
func TestRunErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	// A server nothing listens on: no flag error below may reach it.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`
apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no cluster"},
		{[]string{"-resource", "configmaps"}, `-resource "configmaps": want version/resource`},
		{[]string{"-resource", "v1/"}, `-resource "v1/"`},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
		{[]string{"-replicas", "2", "-identity", "a"}, "exclude each other"},
		{[]string{"-replicas", "0"}, "-replicas 0: want 1 or more"},
		{[]string{"-replicas", "-1", "-identity", "a"}, "-replicas -1: want 1 or more"},
		{[]string{"-report", "0s"}, "-report 0s: want a positive interval"},
		{[]string{"-no-such-flag"}, "no-such-flag"},
		{[]string{"-replicas", "2", "replica-a"}, `unexpected argument "replica-a"`},
		{[]string{"--kubeconfig", kubeconfig, "-identity", "a", "-lease-duration", "1500ms"}, "whole number of seconds"},
		{[]string{"--kubeconfig", kubeconfig, "-identity", "a", "-renew-interval", "20s"}, "must be shorter than LeaseDuration"},
		{[]string{"--kubeconfig", kubeconfig, "-identity", "a", "-lease-namespace", "Leases"}, `Namespace "Leases"`},
		{[]string{"--kubeconfig", kubeconfig, "-identity", "a", "-controller", "my controller"}, `Controller "my controller"`},
	} {
		done := make(chan error, 1)
		go func() { done <- run(tc.args) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error mentioning %q", tc.args, err, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("run(%q) did not return: a bad flag must be an error, not a wait", tc.args)
		}
	}
}

func TestFormatRanges(t *testing.T) {
	split := func(i, n int) sharding.Range {
		r, err := sharding.Split(i, n)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		ranges []sharding.Range
		want   string
	}{
		{nil, "nothing"},
		{[]sharding.Range{sharding.Full}, "[0x0000000000000000, 0x10000000000000000), the whole hash space"},
		{[]sharding.Range{split(0, 2)}, "[0x0000000000000000, 0x8000000000000000), 50% of the hash space"},
		{[]sharding.Range{split(1, 2)}, "[0x8000000000000000, 0x10000000000000000), 50% of the hash space"},
		{[]sharding.Range{split(2, 3)}, "[0xaaaaaaaaaaaaaaaa, 0x10000000000000000), 33.3% of the hash space"},
		{[]sharding.Range{split(0, 8), split(7, 8)}, "[0x0000000000000000, 0x2000000000000000), [0xe000000000000000, 0x10000000000000000), 25% of the hash space"},
	} {
		if got := formatRanges(tc.ranges); got != tc.want {
			t.Errorf("formatRanges(%v):\n got %s\nwant %s", tc.ranges, got, tc.want)
		}
	}
}

func TestDescribeChange(t *testing.T) {
	gone := func(id string) string { return id + " left" }
	for _, tc := range []struct {
		name     string
		first    bool
		old, now []string
		want     string
	}{
		{"first, alone", true, nil, []string{"a"}, "this replica joined"},
		{"first, with others", true, nil, []string{"a", "b"}, "this replica joined"},
		{"join", false, []string{"a"}, []string{"a", "b"}, "b joined"},
		{"leave", false, []string{"a", "b", "c"}, []string{"a", "c"}, "b left"},
		{"join and leave", false, []string{"a", "b"}, []string{"a", "c"}, "c joined; b left"},
		{"self not live", false, []string{"a", "b"}, []string{"b"}, "this replica is not live: it could not renew its Lease, and owns nothing until it does"},
		{"self live again", false, []string{"b"}, []string{"a", "b"}, "this replica is live again (it renewed its Lease)"},
		{"no change", false, []string{"a", "b"}, []string{"a", "b"}, "none in the members; the ranges were recomputed"},
	} {
		if got := describeChange("a", tc.first, tc.old, tc.now, gone); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestLogs runs replicas against a fake clientset and reads their log as a
// person would: the start line names the Lease namespace, and each change
// of assignment names who joined, left or expired, with hex ranges.
func TestLogs(t *testing.T) {
	var objs []runtime.Object
	for i := range 16 {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: fmt.Sprintf("cm-%d", i),
			UID: types.UID(fmt.Sprintf("0b5e%04d-0000-4000-8000-000000000000", i)),
		}})
	}
	client := fake.NewClientset(objs...)
	newFactory := func(options ...informers.SharedInformerOption) (informers.Factory, error) {
		return informers.New(client, 0, options...)
	}
	logs := &logBuffer{changed: make(chan struct{}, 1)}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logs), textlogger.WithHeader(false)))
	o := options{
		leaseNamespace: "default", controller: "test", resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
		leaseDuration: 2 * time.Second, renewInterval: 500 * time.Millisecond, report: 50 * time.Millisecond,
	}
	start := func(id string) (stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- runReplicas(ctx, logger, client, newFactory, []string{id}, o) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %s: %v", id, err)
			}
		}
	}

	stop0 := start("replica-0")
	logs.waitFor(t, `"Starting sharded replicas" replicas="replica-0" resource="configmaps (v1)" watching="all namespaces" shardedBy="hash of object.metadata.uid" leaseNamespace="default (the default; set it with -lease-namespace)" leaseLabel="sharding.kubeinformers.io/controller=test" leaseDuration="2s"`)
	logs.waitFor(t, `"Shard assignment changed" replica="replica-0" change="this replica joined" owns="[0x0000000000000000, 0x10000000000000000), the whole hash space" members="replica-0"`)
	logs.waitFor(t, `"Cache size" replica="replica-0" resource="configmaps (v1)" objects=16 owns="[0x0000000000000000, 0x10000000000000000), the whole hash space" ready="yes"`)

	stop1 := start("replica-1")
	logs.waitFor(t, `"Shard assignment changed" replica="replica-0" change="replica-1 joined" owns="[0x0000000000000000, 0x8000000000000000), 50% of the hash space" members="replica-0, replica-1"`)
	logs.waitFor(t, `"Shard assignment changed" replica="replica-1" change="this replica joined" owns="[0x8000000000000000, 0x10000000000000000), 50% of the hash space" members="replica-0, replica-1"`)
	// The fake ignores shard selectors, as a server without the feature:
	// replica-1, which lists the ranges it gained, is told. (replica-0 only
	// gave ranges up, which it does without a request.)
	logs.waitFor(t, `"Notice: the informers work, but an operator should know" replica="replica-1" notice="configmaps (v1): the server ignored the shard selector `)
	stop1()
	logs.waitFor(t, `"Shard assignment changed" replica="replica-0" change="replica-1 left (released its Lease)" owns="[0x0000000000000000, 0x10000000000000000), the whole hash space" members="replica-0"`)

	// A member that stops renewing, as a crashed one does.
	if _, err := client.CoordinationV1().Leases("default").Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "test-replica-9", Labels: map[string]string{sharding.LabelController: "test"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr("replica-9"), LeaseDurationSeconds: ptr[int32](1),
			RenewTime: &metav1.MicroTime{Time: time.Now()},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, `"Shard assignment changed" replica="replica-0" change="replica-9 joined" owns="[0x0000000000000000, 0x8000000000000000), 50% of the hash space" members="replica-0, replica-9"`)
	logs.waitFor(t, `"Shard assignment changed" replica="replica-0" change="replica-9 expired (its Lease was last renewed `)
	stop0()

	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "notices=") || strings.Contains(line, `{"Start"`) {
			t.Errorf("log line with a raw field: %s", line)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// logBuffer collects log lines and signals each write.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until a line of the log contains want.
func (b *logBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		if strings.Contains(b.String(), want) {
			return
		}
		select {
		case <-b.changed:
		case <-timeout.C:
			t.Fatalf("no log line contains\n%s\nlog:\n%s", want, b.String())
		}
	}
}
