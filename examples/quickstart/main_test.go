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
	"errors"
	"testing"
)

// TestRun checks the quickstart's whole output on its in-memory cluster.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out, newCluster()); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	want := `caches synced, Ready() = <nil>
the handler saw 3 pods in the initial list
event: added shop/web-3 on node-b
lister: pods in shop with app=web: 3
  web-1 on node-a, managedFields: 1 served, 0 cached
  web-2 on node-b, managedFields: 1 served, 0 cached
  web-3 on node-b, managedFields: 1 served, 0 cached
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

// TestRunCancelled checks that run returns, and stops its informers, when
// its context ends before the caches sync.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, newCluster()); !errors.Is(err, context.Canceled) {
		t.Fatalf("run with a cancelled context: got %v, want context.Canceled", err)
	}
}
