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
	"fmt"
	"go/ast"
	"path"

	"golang.org/x/tools/go/packages"
)

// The library's drop-ins for client-go's dynamic and metadata factories
// (dynamicinformer, metadatainformer) are hand-written, but their factory
// interfaces follow client-go's version: v0.38 added StartWithContext and
// WaitForCacheSyncWithContext, which returns a type (cache.GVRSyncResult)
// that v0.37 does not have. The generator writes those interfaces for the
// client-go version the module selects, so that hack/bump.sh moves them
// with the rest of the tree.

// gvrFactory is one of the two drop-ins.
type gvrFactory struct {
	config
	// Package is its directory and package name; Interface and Impl its
	// factory interface and implementation type; Upstream the package it
	// mirrors; Form and Object what it caches.
	Package, Interface, Impl, Upstream, Form, Object string
	// ContextSync says whether client-go has cache.GVRSyncResult and the
	// context methods that use it.
	ContextSync bool
}

var gvrFactories = []gvrFactory{{
	Package: "dynamicinformer", Interface: "DynamicSharedInformerFactory", Impl: "dynamicSharedInformerFactory",
	Upstream: "k8s.io/client-go/dynamic/dynamicinformer", Form: "dynamic", Object: "*unstructured.Unstructured",
}, {
	Package: "metadatainformer", Interface: "SharedInformerFactory", Impl: "metadataSharedInformerFactory",
	Upstream: "k8s.io/client-go/metadata/metadatainformer", Form: "metadata", Object: "*metav1.PartialObjectMetadata",
}}

// clientGoHasGVRSync reports whether the client-go the module at dir
// selects declares cache.GVRSyncResult. Only the syntax is read.
func clientGoHasGVRSync(dir string) (bool, error) {
	const cachePkg = "k8s.io/client-go/tools/cache"
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax, Dir: dir}, cachePkg)
	if err != nil {
		return false, fmt.Errorf("loading %s in %s: %w", cachePkg, dir, err)
	}
	for _, p := range pkgs {
		if len(p.Syntax) == 0 {
			return false, fmt.Errorf("loading %s in %s: no source (is k8s.io/client-go required?)", cachePkg, dir)
		}
		for _, f := range p.Syntax {
			if obj := f.Scope.Lookup("GVRSyncResult"); obj != nil && obj.Kind == ast.Typ {
				return true, nil
			}
		}
	}
	return false, nil
}

// emitGVRFactories renders the two interfaces into files.
func emitGVRFactories(cfg config, contextSync bool, render func(name, file string, data any) error) error {
	for _, g := range gvrFactories {
		g.config, g.ContextSync = cfg, contextSync
		if err := render("gvrfactory", path.Join(g.Package, "interface.go"), g); err != nil {
			return err
		}
	}
	return nil
}
