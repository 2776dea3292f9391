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
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	fixtureUpstream = "k8s.io/client-go/informers"
	fixtureOurs     = "github.com/kubeinformers/informers"
)

// load type-checks the fixture package in testdata/dir as import path path.
func load(t *testing.T, dir, path string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("testdata", dir, "api.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check(path, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatalf("type-checking testdata/%s: %v", dir, err)
	}
	return pkg
}

// keys returns the identifier keys a report lists in lines, i.e. the text
// before the first colon.
func keys(lines []string) []string {
	var out []string
	for _, l := range lines {
		k, _, _ := strings.Cut(l, ":")
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestCompare(t *testing.T) {
	upstream := load(t, "upstream", fixtureUpstream)
	// Identifiers in the fixture: Default, Factory, Factory.Lister,
	// Factory.Name, Lister, New, Option, Version.
	const total = 8
	tests := []struct {
		dir           string
		wantMatched   int
		wantMissing   []string
		wantDifferent []string
		wantExtra     int
	}{{
		dir:         "same",
		wantMatched: total,
		wantExtra:   1, // Extra
	}, {
		dir:         "changed",
		wantMatched: total - 4,
		// Default changes with New's result.
		wantDifferent: []string{"Default", "Factory", "Lister", "New"},
	}, {
		dir:         "missing",
		wantMatched: total - 2,
		wantMissing: []string{"Factory.Name", "Version"},
	}}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			ours := load(t, tt.dir, fixtureOurs)
			r := compare([]*types.Package{upstream}, []*types.Package{ours}, fixtureUpstream, fixtureOurs)
			if r.total != total || r.matched != tt.wantMatched || r.extra != tt.wantExtra {
				t.Errorf("matched %d/%d, extra %d; want %d/%d, extra %d", r.matched, r.total, r.extra, tt.wantMatched, total, tt.wantExtra)
			}
			if got := keys(r.missing); !slices.Equal(got, tt.wantMissing) {
				t.Errorf("missing %q, want %q", got, tt.wantMissing)
			}
			if got := keys(r.different); !slices.Equal(got, tt.wantDifferent) {
				t.Errorf("different %q, want %q", got, tt.wantDifferent)
			}
			if want := len(tt.wantMissing)+len(tt.wantDifferent) == 0; r.ok() != want {
				t.Errorf("ok() = %v, want %v", r.ok(), want)
			}
		})
	}
}

// TestCompareNamesTheMember checks that a changed struct field or interface
// method is named in the report, not only its type.
func TestCompareNamesTheMember(t *testing.T) {
	r := compare([]*types.Package{load(t, "upstream", fixtureUpstream)},
		[]*types.Package{load(t, "changed", fixtureOurs)}, fixtureUpstream, fixtureOurs)
	text := strings.Join(r.different, "\n")
	for _, want := range []string{
		"field Resync: upstream time.Duration, ours int64",
		"method List: upstream func(selector string) ([]string, error), ours func(selector int) ([]string, error)",
		"upstream: func github.com/kubeinformers/informers.New(resync time.Duration) *github.com/kubeinformers/informers.Factory",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

// TestCompareReceiver checks that moving a method from the value to the
// pointer receiver counts as a difference: a value no longer has it.
func TestCompareReceiver(t *testing.T) {
	up := collect([]*types.Package{load(t, "upstream", fixtureUpstream)}, fixtureUpstream, fixtureOurs)
	if got, want := up["Factory.Name"].sig, "func (Factory) Name() string"; got != want {
		t.Errorf("Factory.Name = %q, want %q", got, want)
	}
	if got, want := up["Factory.Lister"].sig, "func (*Factory) Lister() github.com/kubeinformers/informers.Lister"; got != want {
		t.Errorf("Factory.Lister = %q, want %q", got, want)
	}
}

// TestCollectTrees checks that an upstream tree mirrored below the module
// path (as client-go's dynamicinformer is at our dynamicinformer) is keyed
// by its mirror's path, with its types' import paths mapped there too, so
// that it neither collides with the root package's identifiers nor
// compares as different.
func TestCollectTrees(t *testing.T) {
	sub := fixtureOurs + "/dynamicinformer"
	up := collectTrees([]*types.Package{load(t, "upstream", fixtureUpstream)}, []tree{{fixtureUpstream, sub}}, fixtureOurs)
	if _, ok := up["Factory"]; ok {
		t.Error(`the sub-tree's Factory is keyed "Factory", as if it were the root package's`)
	}
	if got, want := up["dynamicinformer.Factory.Lister"].sig, "func (*Factory) Lister() "+sub+".Lister"; got != want {
		t.Errorf("dynamicinformer.Factory.Lister = %q, want %q", got, want)
	}
}
