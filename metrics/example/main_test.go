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
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestCheck runs the example as `go run ./example -check` does: both
// endpoints answer, /readyz with ok, and /metrics with the informers'
// series.
func TestCheck(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out strings.Builder
	if err := run(context.Background(), []string{"-check"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"GET /readyz: 200 OK\n  ok\n",
		"GET /metrics: 200 OK",
		`kubeinformers_informer_synced{factory="example",form="typed",group="",resource="pods",version="v1"} 1`,
		`kubeinformers_informer_objects{factory="example",form="typed",group="",resource="configmaps",version="v1"} 6`,
		`kubeinformers_informer_list_total{factory="example",form="typed",group="",resource="pods",result="success",version="v1"} 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
