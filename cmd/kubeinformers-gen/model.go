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
	"sort"
	"strings"
)

// Group is one API group, such as "apps" or "networking.k8s.io", as the
// generator emits it: one package per group, one sub-package per version.
type Group struct {
	// Name is the API group name. The legacy core group is "".
	Name string
	// GoName names the factory accessor (Apps, Core, Internal, …).
	GoName string
	// Dir is the package directory, taken from the input path
	// (k8s.io/api/<Dir>/<version>), e.g. "apiserverinternal".
	Dir string
	// Versions are sorted by name.
	Versions []Version
	// PkgName is the group package's name, as informer-gen names it: Dir
	// up to its first dot.
	PkgName string
}

// DisplayName is the group as it appears in comments: "core" for "".
func (g Group) DisplayName() string {
	if g.Name == "" {
		return "core"
	}
	return g.Name
}

// Version is one version of a group and the resources it serves.
type Version struct {
	// Name is the API version, e.g. "v1beta1".
	Name string
	// GoName is the accessor name, e.g. "V1beta1".
	GoName string
	// APIPackage is the import path of the Go types, e.g. "k8s.io/api/apps/v1".
	APIPackage string
	// Resources are sorted by Kind.
	Resources []Resource
	// Dir is the version package's directory and name: Name in lower case.
	Dir string
	// GroupDir is the group's Dir.
	GroupDir string
	// Alias is the import name of the version package where all groups'
	// versions are imported together, e.g. "gadgetsv1".
	Alias string
}

// Resource is one kind that can be listed and watched.
type Resource struct {
	// Kind is the Go type name, e.g. "NetworkPolicy".
	Kind string
	// PluralGoName names the version accessor method, e.g. "NetworkPolicies".
	PluralGoName string
	// Plural is the REST resource name the API server serves, e.g. "networkpolicies".
	Plural string
	// Namespaced is false for cluster-scoped kinds (+genclient:nonNamespaced).
	Namespaced bool
}

// LowerKind is the lower-camel kind used for unexported identifiers.
func (r Resource) LowerKind() string { return lowerFirst(r.Kind) }

// FileName is the per-kind file name, e.g. "networkpolicy.go".
func (r Resource) FileName() string { return strings.ToLower(r.Kind) + ".go" }

// apiPackage is what the loader hands to buildModel: one input package with
// its package-level tags and the tagged types found in it.
type apiPackage struct {
	Path    string   // import path, e.g. k8s.io/api/apps/v1
	PkgTags []string // tag lines from the package's doc comments
	Types   []apiType
	Files   []string // the package's Go files, for error messages
}

// objectMeta says how a type embeds ObjectMeta.
type objectMeta int

const (
	noObjectMeta       objectMeta = iota
	externalObjectMeta            // with a json tag: a versioned API type
	internalObjectMeta            // without: an internal API type
)

type apiType struct {
	Name string
	// Tags holds the tag lines of the type's doc comment and of the comment
	// block separated from it by one blank line, as gengo reads them.
	Tags []string
	Pos  string // file:line, for error messages
	// ObjectMeta says whether and how the type embeds ObjectMeta.
	ObjectMeta objectMeta
}

// modelOptions are what differs between the library's own tree and a
// user's API packages (informer-gen's command line).
type modelOptions struct {
	// strict makes every input package carry +groupName and at least one
	// +genclient type embedding a versioned ObjectMeta, instead of falling
	// back to the directory name or skipping the package.
	strict bool
	// plural forms a kind's plural; nil is the library's pluralize.
	plural func(kind string) string
}

// buildModel turns the loaded packages into the sorted model. Packages
// without any informable type are left out, as are types without +genclient
// or without both the list and watch verbs.
func buildModel(pkgs []apiPackage) ([]Group, error) {
	return buildModelWith(pkgs, modelOptions{})
}

// buildModelWith is buildModel with opts.
func buildModelWith(pkgs []apiPackage, opts modelOptions) ([]Group, error) {
	plural := opts.plural
	if plural == nil {
		plural = pluralize
	}
	groups := map[string]*Group{}
	for _, p := range pkgs {
		if opts.strict {
			if err := checkInputPackage(p); err != nil {
				return nil, err
			}
		}
		elems := strings.Split(p.Path, "/")
		if len(elems) < 2 {
			return nil, fmt.Errorf("%s: want an import path ending in <group>/<version>", p.Path)
		}
		dir, version := elems[len(elems)-2], elems[len(elems)-1]
		pkgTags := parseValueTags(p.PkgTags)
		groupName := dir
		if v, ok := pkgTags["groupName"]; ok {
			groupName = v
		}
		goName := ""
		if v, ok := pkgTags["groupGoName"]; ok && v != "" {
			goName = upperFirst(v)
		} else if groupName == "" {
			goName = "Core"
		} else {
			goName = upperFirst(strings.SplitN(groupName, ".", 2)[0])
		}

		var resources []Resource
		for _, t := range p.Types {
			gc, err := parseGenclient(t.Tags)
			if err != nil {
				return nil, fmt.Errorf("%s: type %s: %w", t.Pos, t.Name, err)
			}
			if !gc.enabled || !gc.verbs["list"] || !gc.verbs["watch"] {
				continue
			}
			r := Resource{Kind: t.Name, PluralGoName: plural(t.Name), Namespaced: !gc.nonNamespaced}
			r.Plural = strings.ToLower(r.PluralGoName)
			if v, ok := parseValueTags(t.Tags)["resourceName"]; ok {
				if v == "" {
					return nil, fmt.Errorf("%s: type %s: +resourceName needs a value", t.Pos, t.Name)
				}
				r.Plural = v
			}
			resources = append(resources, r)
		}
		if len(resources) == 0 {
			continue
		}
		sort.Slice(resources, func(i, j int) bool { return resources[i].Kind < resources[j].Kind })

		g := groups[dir]
		if g == nil {
			g = &Group{Name: groupName, GoName: goName, Dir: dir, PkgName: identifier(strings.SplitN(dir, ".", 2)[0])}
			groups[dir] = g
		} else if g.Name != groupName || g.GoName != goName {
			return nil, fmt.Errorf("%s: group %q (%s) disagrees with another version of %s/ that says %q (%s)",
				p.Path, groupName, goName, dir, g.Name, g.GoName)
		}
		g.Versions = append(g.Versions, Version{
			Name:       version,
			GoName:     upperFirst(version),
			APIPackage: p.Path,
			Resources:  resources,
			Dir:        strings.ToLower(version),
			GroupDir:   dir,
			Alias:      identifier(strings.SplitN(dir, ".", 2)[0]) + strings.ToLower(version),
		})
	}

	out := make([]Group, 0, len(groups))
	seenGoName := map[string]string{}
	for _, g := range groups {
		if other, dup := seenGoName[g.GoName]; dup {
			return nil, fmt.Errorf("groups %s/ and %s/ both want the accessor name %s: set +groupGoName", other, g.Dir, g.GoName)
		}
		seenGoName[g.GoName] = g.Dir
		sort.Slice(g.Versions, func(i, j int) bool { return g.Versions[i].Name < g.Versions[j].Name })
		for i := 1; i < len(g.Versions); i++ {
			if g.Versions[i].Name == g.Versions[i-1].Name {
				return nil, fmt.Errorf("%s and %s both provide %s/%s", g.Versions[i-1].APIPackage, g.Versions[i].APIPackage, g.Dir, g.Versions[i].Name)
			}
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// checkInputPackage is what informer-gen's command line requires of an
// input package beyond the library's own: +groupName, and +genclient types
// that embed a versioned ObjectMeta. Errors name the package, the type and
// the file.
func checkInputPackage(p apiPackage) error {
	files := strings.Join(p.Files, ", ")
	var genclient []apiType
	for _, t := range p.Types {
		gc, err := parseGenclient(t.Tags)
		if err != nil {
			return fmt.Errorf("%s: type %s: %w", t.Pos, t.Name, err)
		}
		if gc.enabled {
			genclient = append(genclient, t)
		}
	}
	if len(genclient) == 0 {
		return fmt.Errorf("package %s (%s): no type has a +genclient tag, so there is nothing to generate: tag the types to generate informers for, or leave the package out", p.Path, files)
	}
	if _, ok := parseValueTags(p.PkgTags)["groupName"]; !ok {
		return fmt.Errorf("package %s (%s): no +groupName tag (types %s): add \"// +groupName=<API group>\" above the package clause, usually in doc.go", p.Path, files, typeNames(genclient))
	}
	for _, t := range genclient {
		switch t.ObjectMeta {
		case internalObjectMeta:
			return fmt.Errorf("%s: type %s in package %s embeds ObjectMeta without a json tag, which makes it an internal API type: internal types and --internal-clientset-package are not supported", t.Pos, t.Name, p.Path)
		case noObjectMeta:
			return fmt.Errorf("%s: type %s in package %s has +genclient but does not embed ObjectMeta (metav1.ObjectMeta with a json tag)", t.Pos, t.Name, p.Path)
		}
	}
	return nil
}

func typeNames(ts []apiType) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

// pluralExceptions are kinds whose plural is not formed by the usual
// English rules. The API server serves Endpoints as "endpoints".
var pluralExceptions = map[string]string{
	"Endpoints": "Endpoints",
}

// pluralize forms the plural the API server uses for a kind: Ingress →
// Ingresses, NetworkPolicy → NetworkPolicies, ServiceCIDR → ServiceCIDRs.
// Upstream's informers name some identities by appending a bare "s"
// ("ingresss"); the REST resource has always been the English plural.
func pluralize(kind string) string {
	if p, ok := pluralExceptions[kind]; ok {
		return p
	}
	lower := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"),
		strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return kind + "es"
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return kind[:len(kind)-1] + "ies"
	}
	return kind + "s"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// lowerFirst lower-cases the leading run of capitals the way Go names do:
// Pod → pod, CSIDriver → csiDriver, IPAddress → ipAddress.
func lowerFirst(s string) string {
	n := 0
	for n < len(s) && s[n] >= 'A' && s[n] <= 'Z' {
		n++
	}
	switch {
	case n == 0:
		return s
	case n == 1 || n == len(s):
		return strings.ToLower(s[:n]) + s[n:]
	default:
		// Keep the capital that starts the next word: CSIDriver → csiDriver.
		return strings.ToLower(s[:n-1]) + s[n-1:]
	}
}

// gengoPlural forms a kind's plural exactly as informer-gen does (gengo's
// public plural namer): exceptions first (--plural-exceptions Type:Plural),
// then English rules on the last letter as written, so "Endpoints" becomes
// "Endpointses" unless an exception says otherwise.
func gengoPlural(exceptions map[string]string) func(string) string {
	return func(kind string) string {
		if p, ok := exceptions[kind]; ok {
			return p
		}
		if len(kind) < 2 {
			return kind
		}
		last, before := kind[len(kind)-1], kind[len(kind)-2]
		switch last {
		case 's', 'x', 'z':
			return kind + "es"
		case 'y':
			if strings.IndexByte("bcdfghjklmnpqrstvwxyz", before) >= 0 {
				return kind[:len(kind)-1] + "ies"
			}
		case 'h':
			if before == 'c' || before == 's' {
				return kind + "es"
			}
		case 'e':
			if before == 'f' {
				return kind[:len(kind)-2] + "ves"
			}
		case 'f':
			return kind[:len(kind)-1] + "ves"
		}
		return kind + "s"
	}
}

// identifier makes s usable as a Go package name: letters, digits and
// underscores, lower case.
func identifier(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}
