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
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const fixtures = "testdata/apis"

func fixtureConfig() config {
	return config{
		Module:    "example.com/informers",
		Clientset: "example.com/client/clientset",
		Listers:   "example.com/client/listers",
		TestTable: "test/conformance/resources_generated_test.go",

		Adapter:           "clientgo/zz_generated_adapter.go",
		ClientGoInformers: "example.com/client/informers",
	}
}

func loadFixtures(t *testing.T, patterns ...string) []Group {
	t.Helper()
	pkgs, err := loadPackages(fixtures, patterns)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := buildModel(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

// TestGolden renders the fixture API packages and compares every file with
// testdata/golden. Run `go test -update` to accept a change.
func TestGolden(t *testing.T) {
	groups := loadFixtures(t, "./example/...", "./widgets/...")
	files, err := emit(fixtureConfig(), groups)
	if err != nil {
		t.Fatal(err)
	}
	goldenDir := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(goldenDir); err != nil {
			t.Fatal(err)
		}
		for name, src := range files {
			p := filepath.Join(goldenDir, filepath.FromSlash(name)+".golden")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want []string
	err = filepath.WalkDir(goldenDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(goldenDir, p)
			want = append(want, strings.TrimSuffix(filepath.ToSlash(rel), ".golden"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range files {
		got = append(got, name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("generated files differ from golden files (run go test -update)\n got: %v\nwant: %v", got, want)
	}
	for _, name := range got {
		golden, err := os.ReadFile(filepath.Join(goldenDir, filepath.FromSlash(name)+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(files[name], golden) {
			t.Errorf("%s differs from its golden file (run go test -update)", name)
		}
		if !bytes.Contains(files[name], []byte(generatedLine)) {
			t.Errorf("%s lacks the %q line", name, generatedLine)
		}
	}
}

// TestModel checks what the tags mean, independent of the templates.
func TestModel(t *testing.T) {
	groups := loadFixtures(t, "./example/...", "./widgets/...")
	type row struct {
		group, goName, version, kind, plural string
		namespaced                           bool
	}
	var got []row
	for _, g := range groups {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				got = append(got, row{g.Name, g.GoName, v.Name, r.Kind, r.Plural, r.Namespaced})
			}
		}
	}
	want := []row{
		// Endpoints: readonly, irregular plural.
		{"example.kubeinformers.io", "Sample", "v1", "Endpoints", "endpoints", true},
		// Gadget: nonNamespaced.
		{"example.kubeinformers.io", "Sample", "v1", "Gadget", "gadgets", false},
		// Policy: tags in the doc comment itself; skipVerbs=deleteCollection keeps list and watch.
		{"example.kubeinformers.io", "Sample", "v1", "Policy", "policies", true},
		// Status: onlyVerbs=list,watch,get, plus a method tag.
		{"example.kubeinformers.io", "Sample", "v1", "Status", "statuses", true},
		// Widget: tag block separated from the doc comment.
		{"example.kubeinformers.io", "Sample", "v1", "Widget", "widgets", true},
		{"example.kubeinformers.io", "Sample", "v1beta1", "IngressClass", "ingressclasses", true},
		// No +groupName: the directory names the group.
		{"widgets", "Widgets", "v1", "CSIStorageCapacity", "csistoragecapacities", false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("model:\n got %+v\nwant %+v", got, want)
	}
}

func TestBadTag(t *testing.T) {
	pkgs, err := loadPackages(fixtures, []string{"./bad/..."})
	if err != nil {
		t.Fatal(err)
	}
	_, err = buildModel(pkgs)
	if err == nil {
		t.Fatal("a misspelled +genclient tag was accepted")
	}
	for _, want := range []string{"types.go:", "Typo", `"+genclient:nonNamespacd"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestParseGenclient(t *testing.T) {
	for _, tc := range []struct {
		tags      []string
		informer  bool
		errSubstr string
	}{
		{tags: nil, informer: false},
		{tags: []string{"+genclient"}, informer: true},
		{tags: []string{"+genclient", "+genclient:noVerbs"}, informer: false},
		{tags: []string{"+genclient", "+genclient:readonly"}, informer: true},
		{tags: []string{"+genclient", "+genclient:onlyVerbs=create"}, informer: false},
		{tags: []string{"+genclient", "+genclient:onlyVerbs=list,watch"}, informer: true},
		{tags: []string{"+genclient", "+genclient:onlyVerbs=list"}, informer: false},
		{tags: []string{"+genclient", "+genclient:skipVerbs=watch"}, informer: false},
		{tags: []string{"+genclient", "+genclient:skipVerbs=list,create"}, informer: false},
		{tags: []string{"+genclient", "+genclient:skipVerbs=patch"}, informer: true},
		{tags: []string{"+genclient=false"}, informer: false},
		{tags: []string{"+genclient", "+genclient:onlyVerbs=lst"}, errSubstr: `unknown verb "lst"`},
		{tags: []string{"+genclient", "+genclient:onlyVerbs="}, errSubstr: "comma-separated list"},
		{tags: []string{"+genclient", "+genclient:onlyVerbs=list", "+genclient:skipVerbs=watch"}, errSubstr: "at most one"},
		{tags: []string{"+genclient", "+genclient:bogus"}, errSubstr: `unknown tag "+genclient:bogus"`},
		{tags: []string{"+genclient=maybe"}, errSubstr: "+genclient=false"},
	} {
		gc, err := parseGenclient(tc.tags)
		if tc.errSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
				t.Errorf("%v: error %v, want one containing %q", tc.tags, err, tc.errSubstr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.tags, err)
			continue
		}
		if got := gc.enabled && gc.verbs["list"] && gc.verbs["watch"]; got != tc.informer {
			t.Errorf("%v: informer = %v, want %v", tc.tags, got, tc.informer)
		}
	}
}

func TestPluralize(t *testing.T) {
	for kind, want := range map[string]string{
		"Pod":                   "Pods",
		"Endpoints":             "Endpoints",
		"Ingress":               "Ingresses",
		"IngressClass":          "IngressClasses",
		"NetworkPolicy":         "NetworkPolicies",
		"PriorityClass":         "PriorityClasses",
		"IPAddress":             "IPAddresses",
		"ServiceCIDR":           "ServiceCIDRs",
		"CSIStorageCapacity":    "CSIStorageCapacities",
		"ComponentStatus":       "ComponentStatuses",
		"Gateway":               "Gateways",
		"VolumeAttributesClass": "VolumeAttributesClasses",
		"Box":                   "Boxes",
		"Mesh":                  "Meshes",
	} {
		if got := pluralize(kind); got != want {
			t.Errorf("pluralize(%q) = %q, want %q", kind, got, want)
		}
	}
}

func TestLowerFirst(t *testing.T) {
	for in, want := range map[string]string{
		"Pod": "pod", "CSIDriver": "csiDriver", "IPAddress": "ipAddress", "CSI": "csi", "pod": "pod",
	} {
		if got := lowerFirst(in); got != want {
			t.Errorf("lowerFirst(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRunErrors checks that bad invocations return errors instead of
// exiting.
func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"-module-dir", dir, "-out", dir}); err == nil || !strings.Contains(err.Error(), "go.mod") {
		t.Errorf("missing go.mod: got %v", err)
	}
	if err := run([]string{"-module-dir", fixtures, "-out", dir, "-input", "./bad/...", "-gvr-factories=false"}); err == nil || !strings.Contains(err.Error(), "nonNamespacd") {
		t.Errorf("bad tag: got %v", err)
	}
	if err := run([]string{"-module-dir", fixtures, "-out", dir, "-input", "./widgets/...", "-test-table", "", "-gvr-factories=false"}); err != nil {
		t.Fatalf("good input: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "widgets", "v1", "csistoragecapacity.go")); err != nil {
		t.Errorf("run did not write the kind file: %v", err)
	}
}
