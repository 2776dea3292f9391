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
	"os"
	"strings"
	"testing"
)

// TestGVRFactories checks both shapes of the dynamicinformer and
// metadatainformer factory interfaces: client-go v0.37's, and v0.38's with
// the context methods and the method that returns cache.GVRSyncResult.
func TestGVRFactories(t *testing.T) {
	const contextMethod = "WaitForCacheSyncWithContext(ctx context.Context) cache.GVRSyncResult"
	for _, sync := range []bool{false, true} {
		files, err := emit(config{Module: "example.com/m", GVRFactories: true, GVRSync: sync}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gvrFactories {
			src := string(files[g.Package+"/interface.go"])
			for _, want := range []string{"package " + g.Package, "type " + g.Interface + " interface", "type TweakListOptionsFunc func(*metav1.ListOptions)", generatedLine} {
				if !strings.Contains(src, want) {
					t.Errorf("%s (context methods %v) lacks %q", g.Package, sync, want)
				}
			}
			if got := strings.Count(src, contextMethod); got != map[bool]int{false: 0, true: 2}[sync] {
				t.Errorf("%s (context methods %v): %q appears %d times (the interface's and the implementation's)", g.Package, sync, contextMethod, got)
			}
			if got := strings.Contains(src, "func (f *"+g.Impl+") WaitForCacheSyncWithContext"); got != sync {
				t.Errorf("%s: implementation present = %v, want %v", g.Package, got, sync)
			}
		}
	}
	if files, err := emit(config{Module: "example.com/m"}, nil); err != nil || len(files) != 2 {
		// factory_groups.go and generic.go only.
		t.Errorf("without GVRFactories: %d files, %v", len(files), err)
	}
}

// TestClientGoHasGVRSync checks the detection on the library's module,
// whose client-go (v0.37) lacks cache.GVRSyncResult, and that a module
// without client-go is an error rather than the older shape.
func TestClientGoHasGVRSync(t *testing.T) {
	got, err := clientGoHasGVRSync("../..")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Contains(readFile(t, "../../go.mod"), "k8s.io/client-go v0.38"); got != want {
		t.Errorf("clientGoHasGVRSync = %v, want %v (by the go.mod's client-go)", got, want)
	}
	if _, err := clientGoHasGVRSync("testdata/apis"); err == nil {
		t.Error("a module without client-go: no error")
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
