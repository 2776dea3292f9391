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

// Package codegen is the tool module of the code generators that the
// library itself must not require: k8s.io/code-generator's deepcopy-gen,
// client-gen, lister-gen and informer-gen (see go.mod's tool lines and
// hack/update-examples-crd.sh), and the parity test of kubeinformers-gen
// against informer-gen.
package codegen

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const (
	library  = "github.com/kubeinformers/informers"
	example  = library + "/examples/crd"
	parity   = "example.com/parity"
	upstream = parity + "/upstream"
	ours     = parity + "/ours"
)

// TestParityWithInformerGen runs informer-gen v0.37.2 (this module's
// k8s.io/code-generator) and kubeinformers-gen with the same flags over the
// same API packages (examples/crd: a namespaced and a cluster-scoped kind
// in two versions), then compares the two trees with hack/apiparity: every
// exported identifier, signature and package path informer-gen generates
// must be ours too. What only ours has is the factory package's New and
// each version's Resources.
func TestParityWithInformerGen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds informer-gen and type-checks both trees")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	mod := filepath.Join(tmp, "parity")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}

	// Both generators, built as a user builds them.
	goCmd(t, ".", "build", "-o", bin+"/", "k8s.io/code-generator/cmd/informer-gen")
	goCmd(t, filepath.Join(root, "cmd", "kubeinformers-gen"), "build", "-o", bin+"/", ".")

	// A module that requires the library (whose examples/crd holds the API,
	// clientset and listers), for both generators' output.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(gomod, []byte("module "+parity))
	gomod = append(gomod, []byte("\nrequire "+library+" v0.0.0\n\nreplace "+library+" => "+strconv.Quote(root)+"\n")...)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), gomod, 0o644); err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), gosum, 0o644); err != nil {
		t.Fatal(err)
	}

	for gen, out := range map[string]string{"informer-gen": "upstream", "kubeinformers-gen": "ours"} {
		cmd := exec.Command(filepath.Join(bin, gen),
			"-v", "0",
			"--go-header-file", filepath.Join(root, "hack", "boilerplate.go.txt"),
			"--output-dir", filepath.Join(mod, out),
			"--output-pkg", parity+"/"+out,
			"--versioned-clientset-package", example+"/client/clientset/versioned",
			"--listers-package", example+"/client/listers",
			"--plural-exceptions", "",
			example+"/apis/gadgets/v1", example+"/apis/gadgets/v1alpha1")
		cmd.Dir = mod
		if outp, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", gen, err, outp)
		}
	}

	report := goCmd(t, filepath.Join(root, "hack"), "run", "./apiparity",
		"-module-dir", mod, "-upstream", upstream+"/externalversions", "-ours", ours+"/externalversions")
	t.Log(report)
	m := regexp.MustCompile(`api parity: (\d+)/(\d+) identifiers match \(0 missing, 0 different\); (\d+)/(\d+) struct fields and interface methods match; (\d+) identifiers only ours has`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no 100%% parity line in the report:\n%s", report)
	}
	if m[1] != m[2] || m[3] != m[4] || m[1] == "0" {
		t.Errorf("parity %s/%s identifiers, %s/%s members; want all", m[1], m[2], m[3], m[4])
	}
	// New, and Resources in gadgets/v1 and gadgets/v1alpha1; and
	// WithShardSelector where informer-gen does not generate it yet (before
	// client-go v0.38).
	want := "3"
	upstreamFactory, err := os.ReadFile(filepath.Join(mod, "upstream", "externalversions", "factory.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(upstreamFactory), "func WithShardSelector(") {
		want = "4"
	}
	if m[5] != want {
		t.Errorf("%s identifiers only ours has, want %s (New, Resources of two versions, and WithShardSelector where informer-gen lacks it)", m[5], want)
	}
}

// goCmd runs the go command in dir and returns its output; it fails the
// test on error.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}
