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
	"fmt"
	"go/format"
	"path"
)

// extConfig says where the code generated for a user's API packages (with
// informer-gen's command line) points to.
type extConfig struct {
	// Header starts every file: the --go-header-file text and our
	// generated-code line.
	Header string
	// Package is the import path of the factory package (informer-gen's
	// externalversions); internalinterfaces and the groups are below it.
	Package string
	// Clientset and Listers are --versioned-clientset-package and
	// --listers-package.
	Clientset, Listers string
	// Library is the import path of the kubeinformers module.
	Library string
}

// PkgName is the factory package's name: the last element of its path.
func (c extConfig) PkgName() string { return identifier(path.Base(c.Package)) }

type extRootData struct {
	extConfig
	Groups []Group
}

type extGroupData struct {
	extConfig
	Group Group
}

type extVersionData struct {
	extConfig
	Group   Group
	Version Version
}

type extKindData struct {
	extVersionData
	Resource Resource
}

// APIAlias is the import name of the API types, e.g. gadgetsv1.
func (d extKindData) APIAlias() string { return d.Version.Alias }

// ListerAlias is the import name of the listers, e.g. listersgadgetsv1.
func (d extKindData) ListerAlias() string { return "listers" + d.Version.Alias }

// GVR is the resource as comments show it, e.g. "gadgets.example.com/v1, Resource=gadgets".
func (d extKindData) GVR() string {
	return d.Group.Name + "/" + d.Version.Name + ", Resource=" + d.Resource.Plural
}

// emitExternal renders the informer-gen layout for a user's API packages:
// paths are relative to the factory package's directory.
func emitExternal(cfg extConfig, groups []Group) (map[string][]byte, error) {
	if err := checkReservedNames(groups); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	render := func(name, file string, data any) error {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		src, err := format.Source(buf.Bytes())
		if err != nil {
			return fmt.Errorf("%s: generated code does not parse: %w\n%s", file, err, buf.Bytes())
		}
		files[file] = src
		return nil
	}
	all := extRootData{cfg, groups}
	if err := render("ext_factory", "factory.go", all); err != nil {
		return nil, err
	}
	if err := render("ext_generic", "generic.go", all); err != nil {
		return nil, err
	}
	if err := render("ext_internalinterfaces", "internalinterfaces/factory_interfaces.go", all); err != nil {
		return nil, err
	}
	for _, g := range groups {
		if err := render("ext_group", path.Join(g.Dir, "interface.go"), extGroupData{cfg, g}); err != nil {
			return nil, err
		}
		for _, v := range g.Versions {
			vd := extVersionData{cfg, g, v}
			if err := render("ext_version", path.Join(g.Dir, v.Dir, "interface.go"), vd); err != nil {
				return nil, err
			}
			for _, r := range v.Resources {
				if r.FileName() == "interface.go" {
					return nil, fmt.Errorf("%s: kind %s would overwrite interface.go", v.APIPackage, r.Kind)
				}
				if err := render("ext_kind", path.Join(g.Dir, v.Dir, r.FileName()), extKindData{vd, r}); err != nil {
					return nil, err
				}
			}
		}
	}
	return files, nil
}

// reservedPackages are the package names the generated code imports from
// the library besides the groups: a group may not take one, or its
// package would collide with the library's in the factory package (and,
// in the library's own tree, its directory with the library's).
var reservedPackages = map[string]bool{"gensupport": true, "internalinterfaces": true, "internal": true}

// checkReservedNames refuses a group whose package name is reserved.
func checkReservedNames(groups []Group) error {
	for _, g := range groups {
		if reservedPackages[g.PkgName] || reservedPackages[g.Dir] {
			return fmt.Errorf("group %q: its package name %q is reserved for the library's own package; rename the API package directory", g.Name, g.PkgName)
		}
	}
	return nil
}
