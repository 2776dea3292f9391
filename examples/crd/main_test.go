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
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the controller on the demo cluster: one factory syncs the
// Deployments and the generated Gadget informers, each Gadget gets its
// status, the per-resource selector keeps the unlabelled Deployment out,
// and a change to a Deployment reaches its Gadget.
func TestDemo(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, ""); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	if len(lines) != 10 {
		t.Fatalf("output has %d lines, want 10:\n%s", len(lines), out.String())
	}
	// The first round reconciles the three Gadgets in any order.
	firstRound := slices.Clone(lines[3:6])
	slices.Sort(firstRound)
	want := []string{
		"synced deployments.apps/v1 true",
		"synced gadgetclasses.gadgets.example.com/v1 true",
		"synced gadgets.gadgets.example.com/v1 true",
		"gadget shop/blender: class kitchen, Ready, 1/1 ready",
		"gadget shop/mower: class shed, Invalid, 0/1 ready",
		"gadget shop/toaster: class kitchen, Progressing, 0/2 ready",
		"deployments cached: 2 (only those with the controller's label)",
		"change: deployment shop/toaster has 2 ready replicas",
		"gadget shop/toaster: class kitchen, Ready, 2/2 ready",
		"ready: ok",
	}
	got := append(append(slices.Clone(lines[:3]), firstRound...), lines[6:]...)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %q, want %q", i+1, got[i], want[i])
		}
	}
}

// TestBadKubeconfig: a kubeconfig that cannot be loaded is an error that
// names it, before any informer starts.
func TestBadKubeconfig(t *testing.T) {
	err := run(context.Background(), &bytes.Buffer{}, "/nonexistent/kubeconfig")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Errorf("run with a missing kubeconfig = %v, want an error naming it", err)
	}
}
