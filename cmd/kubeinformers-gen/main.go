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

// Command kubeinformers-gen generates typed informers that share one
// factory of github.com/kubeinformers/informers. It has two modes.
//
// With informer-gen's command line (k8s.io/code-generator v0.37.2) it is a
// drop-in for informer-gen: it reads the user's API packages and writes the
// same packages informer-gen writes, with the same exported API
// (externalversions, internalinterfaces, one package per group and
// version), whose informers live in a kubeinformers factory. The factory
// package also has New(factory informers.Factory, client) to bind the
// group to a factory that built-in informers share:
//
//	kubeinformers-gen --go-header-file hack/boilerplate.go.txt \
//		--output-dir pkg/generated/informers --output-pkg example.com/m/pkg/generated/informers \
//		--versioned-clientset-package example.com/m/pkg/generated/clientset/versioned \
//		--listers-package example.com/m/pkg/generated/listers \
//		example.com/m/pkg/apis/gadgets/v1
//
// It takes every flag informer-gen takes. Those that mean nothing here
// (--internal-clientset-package, --lint-rules, whose rule names it checks,
// and klog's flags) are accepted, and -v 1 or more says so for each one
// given. -h lists informer-gen's flags as informer-gen's -h does.
//
// Without --output-dir it generates this library's own tree, the per-group
// and per-version packages and the parts of the factory that depend on the
// API types, from k8s.io/api (hack/update-codegen.sh):
//
//	kubeinformers-gen -module-dir . -out . [-input k8s.io/api/...]
//
// Either way it loads the API packages with golang.org/x/tools/go/packages
// in the context of the current (or -module-dir) module, so the API version
// is the one that module's go.mod selects, reads their +genclient,
// +groupName and +groupGoName tags as client-gen does, builds a sorted model
// of groups, versions and resources, and renders it through text/template
// and go/format. Nothing is written unless everything rendered.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kubeinformers-gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("no arguments: give informer-gen's flags (--output-dir, --output-pkg, --versioned-clientset-package, --listers-package, …) and the input packages, or -module-dir and -out for this library's own tree")
	}
	if informerGenMode(args) {
		return runInformerGen(args)
	}
	fs := flag.NewFlagSet("kubeinformers-gen", flag.ContinueOnError)
	moduleDir := fs.String("module-dir", ".", "module whose go.mod selects the API version; its module path is the output import path")
	out := fs.String("out", ".", "directory to write the generated tree into")
	input := fs.String("input", "k8s.io/api/...", "comma-separated package patterns holding the API types")
	clientset := fs.String("clientset", "k8s.io/client-go/kubernetes", "import path of the typed clientset")
	listers := fs.String("listers", "k8s.io/client-go/listers", "import path of the listers' root")
	testTable := fs.String("test-table", "test/conformance/resources_generated_test.go", "where to write the conformance test table (empty: none)")
	adapter := fs.String("clientgo-adapter", "clientgo/zz_generated_adapter.go", "where to write the wrappers behind clientgo.Adapt (empty: none)")
	clientGoInformers := fs.String("clientgo-informers", "k8s.io/client-go/informers", "import path of client-go's informers, which the adapter implements")
	gvrFactories := fs.Bool("gvr-factories", true, "write the factory interfaces of dynamicinformer and metadatainformer for the client-go version the module selects")
	fs.SetOutput(usageOutput)
	fs.Usage = func() {
		printInformerGenUsage(usageOutput)
		fmt.Fprintln(usageOutput, "\nWithout informer-gen's flags, kubeinformers-gen generates this library's own tree (hack/update-codegen.sh):")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	module, err := modulePath(*moduleDir)
	if err != nil {
		return err
	}
	pkgs, err := loadPackages(*moduleDir, strings.Split(*input, ","))
	if err != nil {
		return err
	}
	groups, err := buildModel(pkgs)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return fmt.Errorf("no type in %s can be listed and watched", *input)
	}
	var gvrSync bool
	if *gvrFactories {
		if gvrSync, err = clientGoHasGVRSync(*moduleDir); err != nil {
			return err
		}
	}
	files, err := emit(config{Module: module, Clientset: *clientset, Listers: *listers, TestTable: *testTable,
		Adapter: *adapter, ClientGoInformers: *clientGoInformers, GVRFactories: *gvrFactories, GVRSync: gvrSync}, groups)
	if err != nil {
		return err
	}
	return writeFiles(*out, files)
}

func writeFiles(root string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func modulePath(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("reading the output module's go.mod: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s has no module line", filepath.Join(dir, "go.mod"))
}
