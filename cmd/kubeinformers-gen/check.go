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
	"errors"
	"fmt"
	"go/types"
	"path"

	"golang.org/x/tools/go/packages"
)

// checkClients checks, before anything is written, that the clientset and
// the listers the generated code calls have what it calls for every kind:
// the clientset's Interface has <Group><Version>() with <Plural>(namespace)
// (or <Plural>() for a cluster-scoped kind), and the listers package of
// the group and version has <Kind>Lister and New<Kind>Lister. Errors name
// the package, the type and the file that declares it.
func checkClients(dir string, cfg extConfig, groups []Group, pkgs []apiPackage) error {
	patterns := []string{cfg.Clientset}
	for _, g := range groups {
		for _, v := range g.Versions {
			patterns = append(patterns, path.Join(cfg.Listers, g.Dir, v.Dir))
		}
	}
	loaded, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: dir}, patterns...)
	if err != nil {
		return fmt.Errorf("loading the clientset and listers: %w", err)
	}
	byPath := map[string]*packages.Package{}
	for _, p := range loaded {
		byPath[p.PkgPath] = p
	}
	where := map[string]string{} // "<api package>.<Kind>" → file:line
	for _, p := range pkgs {
		for _, t := range p.Types {
			where[p.Path+"."+t.Name] = t.Pos
		}
	}
	usable := func(flag, pkgPath string) (*types.Package, error) {
		p := byPath[pkgPath]
		if p == nil || p.Types == nil {
			return nil, fmt.Errorf("%s %s: package not found", flag, pkgPath)
		}
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("%s %s: %w", flag, pkgPath, p.Errors[0])
		}
		return p.Types, nil
	}

	clientset, err := usable("--versioned-clientset-package", cfg.Clientset)
	if err != nil {
		return err
	}
	var iface *types.Interface
	if obj, ok := clientset.Scope().Lookup("Interface").(*types.TypeName); ok {
		iface, _ = obj.Type().Underlying().(*types.Interface)
	}
	if iface == nil {
		return fmt.Errorf("--versioned-clientset-package %s has no Interface type: is it client-gen's versioned clientset?", cfg.Clientset)
	}

	var errs []error
	for _, g := range groups {
		for _, v := range g.Versions {
			listers, lerr := usable("--listers-package", path.Join(cfg.Listers, g.Dir, v.Dir))
			for _, r := range v.Resources {
				at := fmt.Sprintf("%s: type %s of package %s", where[v.APIPackage+"."+r.Kind], r.Kind, v.APIPackage)
				if err := checkClientset(iface, g.GoName+v.GoName, r); err != nil {
					errs = append(errs, fmt.Errorf("%s: --versioned-clientset-package %s: %w", at, cfg.Clientset, err))
				}
				switch {
				case lerr != nil:
					errs = append(errs, fmt.Errorf("%s: %w", at, lerr))
				case listers.Scope().Lookup(r.Kind+"Lister") == nil || listers.Scope().Lookup("New"+r.Kind+"Lister") == nil:
					errs = append(errs, fmt.Errorf("%s: --listers-package: %s has no %sLister and New%sLister", at, listers.Path(), r.Kind, r.Kind))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkClientset checks that the clientset interface has
// <groupVersion>() returning a client with the kind's <Plural>(…) method.
func checkClientset(iface *types.Interface, groupVersion string, r Resource) error {
	gv := lookupMethod(iface, groupVersion)
	if gv == nil {
		return fmt.Errorf("its Interface has no method %s()", groupVersion)
	}
	sig := gv.Type().(*types.Signature)
	if sig.Results().Len() != 1 {
		return fmt.Errorf("its Interface.%s does not return one client", groupVersion)
	}
	client, _ := sig.Results().At(0).Type().Underlying().(*types.Interface)
	if client == nil {
		return fmt.Errorf("its Interface.%s does not return an interface", groupVersion)
	}
	m := lookupMethod(client, r.PluralGoName)
	if m == nil {
		return fmt.Errorf("%s() has no method %s for kind %s", groupVersion, r.PluralGoName, r.Kind)
	}
	want := 0
	if r.Namespaced {
		want = 1
	}
	if got := m.Type().(*types.Signature).Params().Len(); got != want {
		scope := "cluster-scoped"
		if r.Namespaced {
			scope = "namespaced"
		}
		return fmt.Errorf("%s().%s takes %d arguments, but kind %s is %s (+genclient:nonNamespaced disagrees between the API and the clientset)", groupVersion, r.PluralGoName, got, r.Kind, scope)
	}
	return nil
}

func lookupMethod(iface *types.Interface, name string) *types.Func {
	for m := range iface.Methods() {
		if m.Name() == name {
			return m
		}
	}
	return nil
}
