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

package codegen

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestFlagsMatchInformerGen builds informer-gen v0.37.2 and
// kubeinformers-gen and compares their -h: the same flags, with the same
// value types, and `--output-dir x -h` lists them too.
func TestFlagsMatchInformerGen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds informer-gen")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	goCmd(t, ".", "build", "-o", bin+"/", "k8s.io/code-generator/cmd/informer-gen")
	goCmd(t, filepath.Join(root, "cmd", "kubeinformers-gen"), "build", "-o", bin+"/", ".")

	flagLine := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([\w-]+)(?: (\w+))?\s{2,}`)
	flags := func(gen string, args ...string) []string {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, gen), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", gen, args, err, out)
		}
		var fs []string
		for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
			fs = append(fs, m[1]+" "+m[2])
		}
		slices.Sort(fs)
		return fs
	}
	want := flags("informer-gen", "-h")
	if len(want) < 20 {
		t.Fatalf("informer-gen -h lists %d flags: %q", len(want), want)
	}
	for _, args := range [][]string{{"-h"}, {"--output-dir", "x", "-h"}, {"--help"}} {
		if got := flags("kubeinformers-gen", args...); !slices.Equal(got, want) {
			t.Errorf("kubeinformers-gen %q lists\n %q\ninformer-gen -h lists\n %q", args, got, want)
		}
	}
}
