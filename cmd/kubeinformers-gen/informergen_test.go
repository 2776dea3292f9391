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
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const fixturePkg = "example.com/apis/ext"

// headerFile is the fixture --go-header-file, found before any test
// changes directory.
var headerFile = mustAbs(filepath.Join("testdata", "header.txt"))

// extArgs is informer-gen's command line for the fixture API, as
// kube_codegen.sh passes it, writing into out, with more flags and the
// input packages (the fixture's things/v1 and v1beta1 if none).
func extArgs(out string, flags []string, inputs ...string) []string {
	args := []string{
		"-v", "0",
		"--go-header-file", headerFile,
		"--output-dir", out,
		"--output-pkg", fixturePkg + "/client/informers",
		"--versioned-clientset-package", fixturePkg + "/client/clientset",
		"--listers-package", fixturePkg + "/client/listers",
		"--plural-exceptions", "",
	}
	args = append(args, flags...)
	if len(inputs) == 0 {
		inputs = []string{fixturePkg + "/things/v1", fixturePkg + "/things/v1beta1"}
	}
	return append(args, inputs...)
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}

// readTree returns every file under dir by slash-separated relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestGoldenInformerGen runs the command with informer-gen's flags over the
// fixture API (a namespaced, a cluster-scoped and a read-only kind, a kind
// that cannot be watched, two versions of one group) and compares the tree
// with testdata/golden-informergen. Run `go test -update` to accept a
// change.
func TestGoldenInformerGen(t *testing.T) {
	out := t.TempDir()
	goldenDir := mustAbs(filepath.Join("testdata", "golden-informergen"))
	t.Chdir(fixtures)
	if err := run(extArgs(out, nil)); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, out)
	if *update {
		if err := os.RemoveAll(goldenDir); err != nil {
			t.Fatal(err)
		}
		for name, src := range got {
			p := filepath.Join(goldenDir, filepath.FromSlash(name)+".golden")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string][]byte{}
	for name, src := range readTree(t, goldenDir) {
		want[strings.TrimSuffix(name, ".golden")] = src
	}
	if !reflect.DeepEqual(keysOf(got), keysOf(want)) {
		t.Fatalf("generated files differ from golden files (run go test -update)\n got: %v\nwant: %v", keysOf(got), keysOf(want))
	}
	for name, src := range got {
		if !bytes.Equal(src, want[name]) {
			t.Errorf("%s differs from its golden file (run go test -update)", name)
		}
		if !bytes.HasPrefix(src, []byte("/*\nFixture header.\n*/\n\n"+generatedLine+"\n")) {
			t.Errorf("%s does not start with the header file and %q", name, generatedLine)
		}
	}
	// informer-gen's layout, and what the tags mean.
	for _, name := range []string{
		"externalversions/factory.go",
		"externalversions/generic.go",
		"externalversions/internalinterfaces/factory_interfaces.go",
		"externalversions/things/interface.go",
		"externalversions/things/v1/interface.go",
		"externalversions/things/v1/thing.go",
		"externalversions/things/v1/site.go",
		"externalversions/things/v1/leaf.go",
		"externalversions/things/v1beta1/thing.go",
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s was not generated", name)
		}
	}
	if _, ok := got["externalversions/things/v1/review.go"]; ok {
		t.Error("Review (+genclient:onlyVerbs=create) cannot be watched but got an informer")
	}
	site := string(got["externalversions/things/v1/site.go"])
	for _, want := range []string{
		"func NewSiteInformer(client versioned.Interface, resyncPeriod time.Duration, indexers cache.Indexers)",
		`Resource: "sites"}`, "\tfalse, &thingsv1.Site{}", "client.ThingsV1().Sites()",
	} {
		if !strings.Contains(site, want) {
			t.Errorf("site.go (cluster-scoped) lacks %q", want)
		}
	}
	thing := string(got["externalversions/things/v1/thing.go"])
	for _, want := range []string{
		"func NewThingInformer(client versioned.Interface, namespace string, resyncPeriod time.Duration, indexers cache.Indexers)",
		"client.ThingsV1().Things(namespace)",
	} {
		if !strings.Contains(thing, want) {
			t.Errorf("thing.go (namespaced) lacks %q", want)
		}
	}
	if !strings.Contains(string(got["externalversions/things/v1/interface.go"]), "Leaves() TypedLeafInformer") {
		t.Error("Leaf's accessor is not Leaves, as informer-gen's pluralizer names it")
	}
}

// TestSingleDirectory: --single-directory puts the factory in the output
// directory itself, named after it.
func TestSingleDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "informers")
	t.Chdir(fixtures)
	if err := run(extArgs(out, []string{"--single-directory"})); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, out)
	if !bytes.Contains(got["factory.go"], []byte("\npackage informers\n")) {
		t.Errorf("factory.go is not package informers in the output directory; files: %v", keysOf(got))
	}
	if _, ok := got["things/v1/thing.go"]; !ok {
		t.Errorf("things/v1/thing.go missing; files: %v", keysOf(got))
	}
}

// TestReplacesGenerated: a second run replaces the generated files,
// including informer-gen's, and keeps hand-written ones.
func TestReplacesGenerated(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "externalversions")
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old/v1/stale.go", "// Code generated by informer-gen. DO NOT EDIT.\n\npackage v1\n")
	write("things/v1/expansion.go", "package v1\n\n// hand-written\n")
	t.Chdir(fixtures)
	if err := run(extArgs(out, nil)); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, out)
	if _, ok := got["externalversions/old/v1/stale.go"]; ok {
		t.Error("informer-gen's stale file was kept")
	}
	if _, err := os.Stat(filepath.Join(dir, "old")); !os.IsNotExist(err) {
		t.Errorf("the emptied directory old/ was kept: %v", err)
	}
	if _, ok := got["externalversions/things/v1/expansion.go"]; !ok {
		t.Error("a hand-written file was removed")
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the temporary directory was left behind: %v", entries)
	}
}

// TestInformerGenBadInput: bad input is an error naming the package, the
// type and the file, and nothing is written.
func TestInformerGenBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(out string) []string
		want []string
	}{{
		name: "no +groupName",
		args: func(out string) []string { return extArgs(out, nil, fixturePkg+"/nogroup/v1") },
		want: []string{"package " + fixturePkg + "/nogroup/v1", "nogroup/v1/types.go", "no +groupName", "Orphan"},
	}, {
		name: "no +genclient type",
		args: func(out string) []string { return extArgs(out, nil, fixturePkg+"/nogenclient/v1") },
		want: []string{"package " + fixturePkg + "/nogenclient/v1", "nogenclient/v1/types.go", "no type has a +genclient tag"},
	}, {
		name: "clientset without the kind",
		args: func(out string) []string {
			return extArgs(out, []string{"--versioned-clientset-package", fixturePkg + "/client/badclientset"}, fixturePkg+"/things/v1")
		},
		want: []string{
			"things/v1/types.go:", "type Site of package " + fixturePkg + "/things/v1", "ThingsV1() has no method Sites",
			"type Leaf of package", "Leaves takes 0 arguments, but kind Leaf is namespaced",
		},
	}, {
		name: "listers without the kind",
		args: func(out string) []string {
			return extArgs(out, []string{"--listers-package", fixturePkg + "/client/badlisters"})
		},
		want: []string{
			"things/v1beta1/types.go:", "type Thing of package " + fixturePkg + "/things/v1beta1", "has no ThingLister and NewThingLister",
			"type Site of package " + fixturePkg + "/things/v1:", "--listers-package " + fixturePkg + "/client/badlisters/things/v1: ",
		},
	}, {
		name: "misspelt tag",
		args: func(out string) []string { return extArgs(out, nil, "../bad/v1") },
		want: []string{"bad/v1/types.go:", "Typo", "nonNamespacd"},
	}, {
		name: "unknown lint rule",
		args: func(out string) []string {
			return extArgs(out, []string{"--lint-rules", "known-tags-only,no-such-rule"})
		},
		want: []string{"lint-rules", "unrecognized rule in --lint-rules: no-such-rule"},
	}, {
		name: "bad klog value",
		args: func(out string) []string { return extArgs(out, []string{"--stderrthreshold", "LOUD"}) },
		want: []string{"stderrthreshold", "LOUD"},
	}, {
		name: "unknown flag",
		args: func(out string) []string { return extArgs(out, []string{"--no-such-flag"}) },
		want: []string{"no-such-flag"},
	}, {
		name: "bad plural exception",
		args: func(out string) []string { return extArgs(out, []string{"--plural-exceptions", "Leaf"}) },
		want: []string{"plural-exceptions", `"Leaf"`, "Type:PluralType"},
	}, {
		name: "missing flags",
		args: func(string) []string { return []string{"--output-dir", "x"} },
		want: []string{"--output-pkg must be specified", "--versioned-clientset-package must be specified", "--listers-package must be specified", "no input packages"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			t.Chdir(filepath.Join(mustAbs(fixtures), "ext"))
			err := run(tc.args(out))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if files := readTree(t, out); len(files) > 0 {
				t.Errorf("wrote %v despite the error", keysOf(files))
			}
		})
	}
}

// TestPluralExceptions: --plural-exceptions overrides informer-gen's
// pluralizer, in accessor names and resources alike.
func TestPluralExceptions(t *testing.T) {
	plural := gengoPlural(map[string]string{"Endpoints": "Endpoints"})
	for kind, want := range map[string]string{
		"Endpoints": "Endpoints", "Thing": "Things", "Leaf": "Leaves", "Knife": "Knives", "Policy": "Policies",
		"Gateway": "Gateways", "Mesh": "Meshes", "Box": "Boxes", "Status": "Statuses", "IPS": "IPSs", "X": "X",
	} {
		if got := plural(kind); got != want {
			t.Errorf("plural(%q) = %q, want %q", kind, got, want)
		}
	}
	if got := gengoPlural(nil)("Endpoints"); got != "Endpointses" {
		t.Errorf("without exceptions Endpoints → %q, want informer-gen's Endpointses", got)
	}
}

func TestInformerGenMode(t *testing.T) {
	if err := run(nil); err == nil || !strings.Contains(err.Error(), "--output-dir") {
		t.Errorf("no arguments: got %v, want an error naming the flags", err)
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"-module-dir", ".", "-out", "."}, false},
		{[]string{"--output-dir", "x"}, true},
		{[]string{"-v", "0", "--listers-package=x"}, true},
		{[]string{"--internal-clientset-package", "x"}, true},
		{[]string{"--", "example.com/apis/v1"}, true},
	} {
		if got := informerGenMode(tc.args); got != tc.want {
			t.Errorf("informerGenMode(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestReservedGroupNames: a group whose package would take the name of one
// of the library's own packages is refused, naming the group.
func TestReservedGroupNames(t *testing.T) {
	if err := checkReservedNames([]Group{{Name: "gadgets.example.com", Dir: "gadgets", PkgName: "gadgets"}}); err != nil {
		t.Errorf("an ordinary group: %v", err)
	}
	for _, name := range []string{"gensupport", "internalinterfaces", "internal"} {
		err := checkReservedNames([]Group{{Name: name + ".example.com", Dir: name, PkgName: name}})
		if err == nil || !strings.Contains(err.Error(), name+".example.com") {
			t.Errorf("group %s: %v, want an error naming the group", name, err)
		}
		if _, err := emitExternal(extConfig{}, []Group{{Name: name + ".example.com", Dir: name, PkgName: name}}); err == nil {
			t.Errorf("emitExternal accepted a group named %s", name)
		}
	}
}
