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
	"go/types"
	"io"
	"maps"
	"slices"
	"strings"
)

// An identifier is one exported name of the API with its signature.
//
// Top-level identifiers are the unit the parity count is expressed in:
// package-level funcs, types, vars and consts, and the exported methods of
// exported non-interface types. A type's signature includes its whole
// underlying type, so a changed struct field or interface method makes the
// type differ; members lists those fields and methods one by one, so that the
// report can say which of them is missing or different.
type identifier struct {
	key     string            // "<package>.<Name>" or "<package>.<Type>.<Method>", package relative to its root
	sig     string            // signature with import paths normalised to the mirror's
	members map[string]string // struct fields and interface methods: name → signature
}

// api is every identifier of one package tree, by key.
type api map[string]identifier

// tree is one upstream package tree and the import path of its mirror.
type tree struct {
	upstream, ours string
}

// collect describes the exported API of pkgs, which all live under root.
// Package paths under root are rewritten with mapTo as the new root (pass
// root itself to keep them), so that two trees become comparable.
func collect(pkgs []*types.Package, root, mapTo string) api {
	return collectTrees(pkgs, []tree{{root, mapTo}}, mapTo)
}

// collectTrees describes the exported API of pkgs, which live under the
// upstream (or, to keep them, the ours) roots of trees. Package paths under
// a tree's upstream root are rewritten to its ours root, and identifiers
// are keyed by their package's path relative to keyRoot (the mirror
// module's path), so that several upstream trees mirrored in one module
// share one key space.
func collectTrees(pkgs []*types.Package, trees []tree, keyRoot string) api {
	mapPath := func(path string) string {
		for _, t := range trees {
			if within(path, t.upstream) {
				return t.ours + strings.TrimPrefix(path, t.upstream)
			}
		}
		return path
	}
	qual := func(p *types.Package) string { return mapPath(p.Path()) }
	out := api{}
	for _, pkg := range pkgs {
		// The root package's identifiers are keyed "Name", the others
		// "core/v1.Name".
		prefix := strings.TrimPrefix(strings.TrimPrefix(mapPath(pkg.Path()), keyRoot), "/")
		if prefix != "" {
			prefix += "."
		}
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			key := prefix + name
			id := identifier{key: key, sig: objectString(obj, qual)}
			tn, isType := obj.(*types.TypeName)
			if isType {
				id.members = members(tn.Type(), qual)
				for mname, msig := range methods(tn, qual) {
					out[key+"."+mname] = identifier{key: key + "." + mname, sig: msig}
				}
			}
			out[key] = id
		}
	}
	return out
}

// objectString renders a package-level object. types.ObjectString would do
// for most, but it omits a named type's underlying type, which is part of
// its API (the fields a caller may set, the methods an interface requires).
func objectString(obj types.Object, qual types.Qualifier) string {
	tn, ok := obj.(*types.TypeName)
	if !ok {
		return types.ObjectString(obj, qual)
	}
	if tn.IsAlias() {
		return "type " + tn.Name() + " = " + types.TypeString(types.Unalias(tn.Type()), qual)
	}
	named, ok := tn.Type().(*types.Named)
	if !ok {
		return types.ObjectString(obj, qual)
	}
	head := "type " + tn.Name()
	if tps := named.TypeParams(); tps.Len() > 0 {
		var ps []string
		for i := range tps.Len() {
			tp := tps.At(i)
			ps = append(ps, tp.Obj().Name()+" "+types.TypeString(tp.Constraint(), qual))
		}
		head += "[" + strings.Join(ps, ", ") + "]"
	}
	if st, ok := named.Underlying().(*types.Struct); ok {
		// Only the exported fields: unexported ones are not API.
		var fs []string
		for f := range st.Fields() {
			if f.Exported() {
				fs = append(fs, fieldString(f, qual))
			}
		}
		return head + " struct{" + strings.Join(fs, "; ") + "}"
	}
	return head + " " + types.TypeString(named.Underlying(), qual)
}

// fieldString renders a struct field the way go/types does: embedded fields
// by type alone.
func fieldString(f *types.Var, qual types.Qualifier) string {
	if f.Embedded() {
		return types.TypeString(f.Type(), qual)
	}
	return f.Name() + " " + types.TypeString(f.Type(), qual)
}

// methods returns the exported methods callable on a value of an exported
// non-interface named type or a pointer to it, promoted ones included, by
// name. The receiver says whether the method is in the value's method set.
// Interface methods are part of the interface type and come from members.
func methods(tn *types.TypeName, qual types.Qualifier) map[string]string {
	named, ok := types.Unalias(tn.Type()).(*types.Named)
	if !ok || tn.IsAlias() || types.IsInterface(named) {
		return nil
	}
	out := map[string]string{}
	value := types.NewMethodSet(named)
	ptr := types.NewMethodSet(types.NewPointer(named))
	for i := range ptr.Len() {
		fn := ptr.At(i).Obj()
		if !fn.Exported() {
			continue
		}
		recv := "*" + tn.Name()
		if value.Lookup(fn.Pkg(), fn.Name()) != nil {
			recv = tn.Name()
		}
		sig := strings.TrimPrefix(types.TypeString(fn.Type(), qual), "func")
		out[fn.Name()] = "func (" + recv + ") " + fn.Name() + sig
	}
	return out
}

// members lists the exported fields of a struct type and the methods of an
// interface type (embedded interfaces flattened), by name.
func members(t types.Type, qual types.Qualifier) map[string]string {
	out := map[string]string{}
	switch u := t.Underlying().(type) {
	case *types.Struct:
		for f := range u.Fields() {
			if f.Exported() {
				out["field "+f.Name()] = types.TypeString(f.Type(), qual)
			}
		}
	case *types.Interface:
		for m := range u.Methods() {
			if m.Exported() {
				out["method "+m.Name()] = types.TypeString(m.Type(), qual)
			}
		}
	}
	return out
}

// report is the outcome of compare.
type report struct {
	total, matched int
	missing        []string // upstream identifiers absent from ours
	different      []string // present in both with different signatures, with the detail
	extra          int      // identifiers only ours has (additive API; not a failure)
	memberTotal    int      // upstream struct fields and interface methods
	memberMatched  int
}

func (r report) ok() bool { return r.matched == r.total && r.total > 0 }

// compare checks every identifier of the upstream tree against ours.
func compare(upstream, ours []*types.Package, upstreamRoot, ourRoot string) report {
	return compareTrees(upstream, ours, []tree{{upstreamRoot, ourRoot}}, ourRoot)
}

// compareTrees checks every identifier of the upstream trees against ours,
// the mirror module whose path is ourRoot.
func compareTrees(upstream, ours []*types.Package, trees []tree, ourRoot string) report {
	up := collectTrees(upstream, trees, ourRoot)
	mine := collectTrees(ours, []tree{{ourRoot, ourRoot}}, ourRoot)
	var r report
	for _, key := range slices.Sorted(maps.Keys(up)) {
		u := up[key]
		r.total++
		r.memberTotal += len(u.members)
		m, found := mine[key]
		if !found {
			r.missing = append(r.missing, key+": "+u.sig)
			continue
		}
		sameMembers := 0
		var detail []string
		for _, name := range slices.Sorted(maps.Keys(u.members)) {
			msig, ok := m.members[name]
			switch {
			case !ok:
				detail = append(detail, fmt.Sprintf("\t%s missing: %s", name, u.members[name]))
			case msig != u.members[name]:
				detail = append(detail, fmt.Sprintf("\t%s: upstream %s, ours %s", name, u.members[name], msig))
			default:
				sameMembers++
			}
		}
		r.memberMatched += sameMembers
		if m.sig != u.sig {
			r.different = append(r.different, fmt.Sprintf("%s:\n\tupstream: %s\n\tours:     %s%s", key, u.sig, m.sig, joinDetail(detail)))
			continue
		}
		r.matched++
	}
	for key := range mine {
		if _, found := up[key]; !found {
			r.extra++
		}
	}
	return r
}

func joinDetail(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n" + strings.Join(lines, "\n")
}

func (r report) write(w io.Writer) error {
	var b strings.Builder
	for _, s := range r.missing {
		fmt.Fprintln(&b, "missing  ", s)
	}
	for _, s := range r.different {
		fmt.Fprintln(&b, "different", s)
	}
	fmt.Fprintf(&b, "api parity: %d/%d identifiers match (%d missing, %d different); %d/%d struct fields and interface methods match; %d identifiers only ours has (additive)\n",
		r.matched, r.total, len(r.missing), len(r.different), r.memberMatched, r.memberTotal, r.extra)
	_, err := io.WriteString(w, b.String())
	return err
}
