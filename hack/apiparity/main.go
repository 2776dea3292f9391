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

// Command apiparity checks that this module mirrors the exported API of
// client-go's three informer factories at the client-go version the root
// go.mod selects: k8s.io/client-go/informers (mirrored at our module path),
// k8s.io/client-go/dynamic/dynamicinformer and
// k8s.io/client-go/metadata/metadatainformer (mirrored at our dynamicinformer
// and metadatainformer). Every exported identifier upstream must exist here
// with the same signature once import paths are mapped from upstream's to
// ours. Identifiers we add are counted but are not failures. A line per
// upstream tree precedes the total.
//
//	cd hack && go run ./apiparity -module-dir ..
//
// It exits 1 when anything is missing or different.
//
// -upstream and -ours compare two other package trees loaded in that
// module instead, such as informer-gen's output and kubeinformers-gen's for
// the same API (hack/codegen's parity test):
//
//	go run ./apiparity -module-dir DIR -upstream example.com/m/upstream -ours example.com/m/ours
package main

import (
	"flag"
	"fmt"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/tools/go/packages"
)

// defaultUpstream is the package tree we mirror.
const defaultUpstream = "k8s.io/client-go/informers"

// defaultTrees are the upstream trees the module mirrors, with the mirror's
// path of each relative to the module path ("" is the module's root).
var defaultTrees = []tree{
	{defaultUpstream, ""},
	{"k8s.io/client-go/dynamic/dynamicinformer", "/dynamicinformer"},
	{"k8s.io/client-go/metadata/metadatainformer", "/metadatainformer"},
}

func main() {
	moduleDir := flag.String("module-dir", ".", "root of the module that mirrors client-go's informers (the directory holding its go.mod)")
	upstream := flag.String("upstream", defaultUpstream, "import path of the package tree to mirror")
	ours := flag.String("ours", "", "import path of the mirroring package tree (default: the module's path)")
	flag.Parse()
	ok, err := run(os.Stdout, *moduleDir, *upstream, *ours)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiparity:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// run loads both trees in the context of the module at dir, so that the
// client-go version is the one that module selects, compares them and writes
// the report to w. It reports whether every upstream identifier matched.
// ourRoot "" is the module's path.
func run(w io.Writer, dir, upstreamRoot, ourRoot string) (bool, error) {
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return false, fmt.Errorf("reading the mirror module: %w", err)
	}
	explicitOurs := ourRoot != ""
	if ourRoot == "" {
		ourRoot = modfile.ModulePath(data)
	}
	if ourRoot == "" {
		return false, fmt.Errorf("%s has no module line", gomod)
	}
	trees := []tree{{upstreamRoot, ourRoot}}
	if upstreamRoot == defaultUpstream && !explicitOurs {
		trees = nil
		for _, t := range defaultTrees {
			trees = append(trees, tree{t.upstream, ourRoot + t.ours})
		}
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedModule,
		Dir:  dir,
	}
	patterns := []string{ourRoot + "/..."}
	for _, t := range trees {
		patterns = append(patterns, t.upstream+"/...")
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return false, fmt.Errorf("loading %s in %s: %w", strings.Join(patterns, " "), dir, err)
	}
	var ours []*types.Package
	up := make([][]*types.Package, len(trees))
	version := "(unknown version)"
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			// packages.Error is a value type; the first one names the problem.
			return false, fmt.Errorf("loading %s: %w", p.PkgPath, p.Errors[0])
		}
		if i := slices.IndexFunc(trees, func(t tree) bool { return within(p.PkgPath, t.upstream) }); i >= 0 {
			up[i] = append(up[i], p.Types)
			if p.Module != nil {
				version = p.Module.Version
			}
			continue
		}
		if within(p.PkgPath, ourRoot) && p.Name != "main" && !isInternal(p.PkgPath) && !within(p.PkgPath, ourRoot+"/examples") {
			// Commands, examples (examples/crd has its own API, clientset
			// and informers) and internal packages are not API.
			ours = append(ours, p.Types)
		}
	}
	var all []*types.Package
	for i, t := range trees {
		if len(up[i]) == 0 {
			return false, fmt.Errorf("no packages under %s in the build list of %s", t.upstream, gomod)
		}
		all = append(all, up[i]...)
	}
	if _, err := fmt.Fprintf(w, "upstream: %s %s (%d packages); ours: %s (%d packages)\n", upstreamRoot, version, len(all), ourRoot, len(ours)); err != nil {
		return false, err
	}
	if len(trees) > 1 {
		for i, t := range trees {
			r := compareTrees(up[i], ours, trees, ourRoot)
			if _, err := fmt.Fprintf(w, "tree %s -> %s: %d/%d identifiers match\n", t.upstream, t.ours, r.matched, r.total); err != nil {
				return false, err
			}
		}
	}
	r := compareTrees(all, ours, trees, ourRoot)
	if err := r.write(w); err != nil {
		return false, err
	}
	return r.ok(), nil
}

// within reports whether path is root or a package below it.
func within(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}

func isInternal(path string) bool {
	return strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}
