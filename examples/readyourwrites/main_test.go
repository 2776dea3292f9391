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
	"testing"
)

// TestRun checks that five back-to-back reconciles, each waiting for the
// writes before it, create exactly the 3 Pods wanted. It runs the program
// several times: without the wait, a reconcile that reads the lister
// before the informer has the Pods just created creates more.
func TestRun(t *testing.T) {
	for range 5 {
		var out bytes.Buffer
		if err := run(t.Context(), &out, newCluster()); err != nil {
			t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
		}
		want := "5 reconciles created 3 pods; the server has 3 web pods (want 3)\n"
		if got := out.String(); got != want {
			t.Fatalf("output:\n%s\nwant:\n%s", got, want)
		}
	}
}
