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

package informers

import (
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/optcheck"
)

// This file is the factory's side of binding typed resources of API groups
// this module does not ship (a user's own custom resources, with a
// clientset from client-gen), so that their typed informers share its
// registry, options and life cycle with the built-in ones. The generated
// code calls gensupport.Bind, which hands each resource to BindResource;
// its informers are then built by the one get-or-build path (create.go).

var _ binding.Host = &sharedInformerFactory{}

// BindResource implements binding.Host: it binds r to the factory
// (binding.Table.Bind), refused with clientErr if that is set, and with
// what r's scope tells about the options given for it.
func (f *sharedInformerFactory) BindResource(r *binding.Resource, clientErr error) (*binding.Resource, error) {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.bindings.Bind(r, isBuiltIn(r.Resource), f.byType[r.Type] != nil, clientErr, f.checkScope)
}

// checkScope says what is wrong with the options of a bound resource that
// only its scope tells, as checkResourceOptions does for built-in ones.
func (f *sharedInformerFactory) checkScope(r *binding.Resource) error {
	if ro, ok := f.resourceOptions[r.Resource]; ok && !r.Namespaced {
		return optcheck.ClusterScoped(ro.Namespaces, ro.ShardSelector)
	}
	return nil
}

// boundType returns the binding of a Go type, or nil.
func (f *sharedInformerFactory) boundType(t reflect.Type) *binding.Resource {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.bindings.BoundType(t)
}

// unservedOptions names the resources given [WithResourceOptions] that
// nothing can serve: not built in, not bound, and no dynamic or metadata
// client. New cannot tell, as a binding comes after it; Notices reports
// them. The caller holds f.lock.
func (f *sharedInformerFactory) unservedOptions() []string {
	if f.dynamicClient != nil || f.metadataClient != nil {
		return nil
	}
	return optcheck.Unserved(maps.Keys(f.resourceOptions), func(r schema.GroupVersionResource) bool {
		return isBuiltIn(r) || f.bindings.Bound(r) != nil
	})
}
