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
}

type apiType struct {
	Name string
	// Tags holds the tag lines of the type's doc comment and of the comment
	// block separated from it by one blank line, as gengo reads them.
	Tags []string
	Pos  string // file:line, for error messages
}

// buildModel turns the loaded packages into the sorted model. Packages
// without any informable type are left out, as are types without +genclient
// or without both the list and watch verbs.
func buildModel(pkgs []apiPackage) ([]Group, error) {
	groups := map[string]*Group{}
	for _, p := range pkgs {
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
			goName = v
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
			r := Resource{Kind: t.Name, PluralGoName: pluralize(t.Name), Namespaced: !gc.nonNamespaced}
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
			g = &Group{Name: groupName, GoName: goName, Dir: dir}
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
