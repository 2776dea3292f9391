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
	"go/token"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// loadPackages loads the packages matched by patterns in the module at dir,
// so that the versions of the API modules are the ones that module selects,
// and returns their tags. Only syntax is needed: the API types are not
// type-checked.
func loadPackages(dir string, patterns []string) ([]apiPackage, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax,
		Dir:  dir,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("loading %s in %s: %w", strings.Join(patterns, " "), dir, err)
	}
	var out []apiPackage
	for _, p := range pkgs {
		for _, e := range p.Errors {
			// Syntax is all we read, so an import that does not resolve is
			// harmless; a pattern that matches nothing or a file that does
			// not parse is not.
			if e.Kind != packages.ParseError && len(p.Syntax) > 0 {
				continue
			}
			return nil, fmt.Errorf("loading %s: %w", p.PkgPath, e)
		}
		ap := readPackage(p.PkgPath, p.Fset, p.Syntax)
		ap.Files = p.GoFiles
		out = append(out, ap)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// readPackage collects the package tags and the tags of every type.
func readPackage(path string, fset *token.FileSet, files []*ast.File) apiPackage {
	p := apiPackage{Path: path}
	for _, f := range files {
		// Package tags live in any comment above the package clause, which
		// need not be the package doc: core/v1 separates +groupName= from
		// it by a blank line.
		for _, cg := range f.Comments {
			if cg.End() < f.Package {
				p.PkgTags = append(p.PkgTags, tagLines(commentText(cg))...)
			}
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				anchor := ts.Pos()
				if doc == nil && len(gd.Specs) == 1 {
					doc, anchor = gd.Doc, gd.Pos()
				}
				p.Types = append(p.Types, apiType{
					Name:       ts.Name.Name,
					Tags:       typeTags(fset, f, doc, anchor),
					Pos:        fset.Position(ts.Pos()).String(),
					ObjectMeta: objectMetaOf(ts),
				})
			}
		}
	}
	sort.SliceStable(p.Types, func(i, j int) bool { return p.Types[i].Name < p.Types[j].Name })
	return p
}

// typeTags returns the tag lines of a type's doc comment and of the
// comment block that ends one blank line above it, the way gengo reads
// "second closest" comments: Kubernetes APIs put +genclient there, apart
// from the prose.
func typeTags(fset *token.FileSet, f *ast.File, doc *ast.CommentGroup, anchor token.Pos) []string {
	var tags []string
	firstLine := fset.Position(anchor).Line
	if doc != nil {
		tags = tagLines(commentText(doc))
		firstLine = fset.Position(doc.Pos()).Line
	}
	for _, cg := range f.Comments {
		if fset.Position(cg.End()).Line == firstLine-2 {
			tags = append(tagLines(commentText(cg)), tags...)
			break
		}
	}
	return tags
}

// commentText returns the lines of a comment group without the comment
// markers.
func commentText(cg *ast.CommentGroup) []string {
	var out []string
	for _, c := range cg.List {
		text := c.Text
		if strings.HasPrefix(text, "//") {
			out = append(out, strings.TrimPrefix(text, "//"))
			continue
		}
		text = strings.TrimSuffix(strings.TrimPrefix(text, "/*"), "*/")
		out = append(out, strings.Split(text, "\n")...)
	}
	return out
}

// objectMetaOf says whether a struct type embeds ObjectMeta (of any
// package, as informer-gen looks for it by name) and whether that field has
// a json tag: an ObjectMeta without one marks an internal API type.
func objectMetaOf(ts *ast.TypeSpec) objectMeta {
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return noObjectMeta
	}
	for _, f := range st.Fields.List {
		name := ""
		switch t := f.Type.(type) {
		case *ast.Ident:
			name = t.Name
		case *ast.SelectorExpr:
			name = t.Sel.Name
		}
		if len(f.Names) > 0 || name != "ObjectMeta" {
			continue
		}
		if f.Tag != nil && strings.Contains(f.Tag.Value, "json") {
			return externalObjectMeta
		}
		return internalObjectMeta
	}
	return noObjectMeta
}
