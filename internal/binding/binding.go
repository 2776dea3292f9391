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

// Package binding is what a typed resource of a user's own API group is,
// once bound to a factory: the form both the factory (the root package)
// and the support package of generated code (gensupport) speak, so that
// neither exports it.
package binding

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/listwatch"
)

// Resource is a typed resource as its factory holds it once bound.
type Resource struct {
	Resource   schema.GroupVersionResource
	Namespaced bool
	Type       reflect.Type
	Example    runtime.Object
	// Client is the clientset the requests go through: a fake one makes
	// the informer list and watch rather than stream.
	Client any
	// Requests is nil without a client; Missing then names it.
	Requests func(namespace string) listwatch.Requests
	Missing  string
	// Typed wraps a new informer in its type-safe form, which the factory
	// shares, as for the built-in kinds.
	Typed func(cache.SharedIndexInformer) cache.SharedIndexInformer
	// Refused, if set, is why the informer must not run: what Bind found
	// wrong that only the resource's scope or client could tell.
	Refused error
}

// Host is implemented by the factory: it binds resources and serves their
// informers.
type Host interface {
	// BindResource binds r, refused with clientErr if that is set. It
	// returns the resource as bound (an earlier binding of the same
	// resource, type and scope is shared), or why it cannot be bound; a
	// resource bound refused comes back with an error too.
	BindResource(r *Resource, clientErr error) (*Resource, error)
	// ResolveBound returns the shared informer of a bound resource, and
	// the flag that is set once it has been removed.
	ResolveBound(r *Resource) (cache.SharedIndexInformer, *atomic.Bool)
}

// ValidateResource says what is wrong with a resource that is not built
// in: ForResource, ForMetadata, WithResourceOptions and Bind check it.
func ValidateResource(resource schema.GroupVersionResource) error {
	var problems []string
	if resource.Version == "" {
		problems = append(problems, "the version is empty")
	} else if msgs := validation.IsDNS1123Label(resource.Version); len(msgs) > 0 {
		problems = append(problems, fmt.Sprintf("the version %q is invalid: %s", resource.Version, strings.Join(msgs, "; ")))
	}
	switch {
	case resource.Resource == "":
		problems = append(problems, "the resource is empty")
	case strings.Contains(resource.Resource, "/"):
		problems = append(problems, fmt.Sprintf("%q names a subresource; informers watch whole resources", resource.Resource))
	case strings.ToLower(resource.Resource) != resource.Resource:
		problems = append(problems, fmt.Sprintf("the resource %q is not lower case (resources are plural and lower case)", resource.Resource))
	}
	if resource.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(resource.Group); len(msgs) > 0 {
			problems = append(problems, fmt.Sprintf("the group %q is invalid: %s", resource.Group, strings.Join(msgs, "; ")))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Table is a factory's bound resources, by resource and by Go type. The
// factory guards it with its own lock.
type Table struct {
	byResource map[schema.GroupVersionResource]*Resource
	byType     map[reflect.Type]*Resource
}

// Add binds r unless that conflicts with what is bound already: a
// resource bound again to the same type and scope returns the first
// binding; another type or scope for a bound resource, or a second
// resource for a bound type, is an error.
func (t *Table) Add(r *Resource) (*Resource, error) {
	if prev := t.byResource[r.Resource]; prev != nil {
		if prev.Type != r.Type || prev.Namespaced != r.Namespaced {
			return nil, fmt.Errorf("%v: already bound to %v (%s); cannot bind it to %v (%s)", r.Resource, prev.Type, scope(prev.Namespaced), r.Type, scope(r.Namespaced))
		}
		return prev, nil
	}
	if prev := t.byType[r.Type]; prev != nil {
		return nil, fmt.Errorf("%v: its type %v is already bound to %v", r.Resource, r.Type, prev.Resource)
	}
	if t.byResource == nil {
		t.byResource = make(map[schema.GroupVersionResource]*Resource)
		t.byType = make(map[reflect.Type]*Resource)
	}
	t.byResource[r.Resource] = r
	t.byType[r.Type] = r
	return r, nil
}

// Bind binds r for its factory: not a built-in resource (builtIn), nor
// the type of an informer InformerFor built before the binding
// (typeBuilt). A resource bound before is Add's to answer. A new binding
// is refused (Refused, and an error besides r) with clientErr, if set, and
// with what scope, called only then, finds wrong with the options given
// for it that only its scope tells.
func (t *Table) Bind(r *Resource, builtIn, typeBuilt bool, clientErr error, scope func(*Resource) error) (*Resource, error) {
	if builtIn {
		return nil, fmt.Errorf("%v: it is a built-in resource, which the factory serves already", r.Resource)
	}
	if t.Bound(r.Resource) != nil {
		return t.Add(r) // the same binding again, or a conflict
	}
	if typeBuilt && t.BoundType(r.Type) == nil {
		return nil, fmt.Errorf("%v: an informer of %v was built by InformerFor before the binding; bind before requesting informers", r.Resource, r.Type)
	}
	var refusals []error
	if clientErr != nil {
		refusals = append(refusals, clientErr)
	}
	if err := scope(r); err != nil {
		refusals = append(refusals, fmt.Errorf("not started: %w", err))
	}
	var err error
	if len(refusals) > 0 {
		r.Refused = errors.Join(refusals...)
		err = fmt.Errorf("%v: %w", r.Resource, r.Refused)
	}
	if _, addErr := t.Add(r); addErr != nil {
		return nil, addErr
	}
	return r, err
}

// Bound returns the binding of a resource, or nil.
func (t *Table) Bound(resource schema.GroupVersionResource) *Resource { return t.byResource[resource] }

// BoundType returns the binding of a Go type, or nil.
func (t *Table) BoundType(typ reflect.Type) *Resource { return t.byType[typ] }

func scope(namespaced bool) string {
	if namespaced {
		return "namespaced"
	}
	return "cluster-scoped"
}

// Suggest names the resources of supported close to an unknown one, for an
// error about it: the same resource spelt differently (a kind, a singular,
// other case), or the versions its group and resource are served in; ""
// if none is close.
func Suggest(resource schema.GroupVersionResource, supported []schema.GroupVersionResource) string {
	want := strings.ToLower(resource.Resource)
	var spelt, versions []string
	for _, r := range supported {
		if r.Group != resource.Group {
			continue
		}
		switch {
		case r.Resource == resource.Resource:
			versions = append(versions, r.Version)
		case r.Version == resource.Version && (r.Resource == want || r.Resource == want+"s" || r.Resource == want+"es" ||
			strings.TrimSuffix(r.Resource, "ies") == strings.TrimSuffix(want, "y")):
			spelt = append(spelt, fmt.Sprintf("%q", r.Resource))
		}
	}
	switch {
	case len(spelt) > 0:
		return fmt.Sprintf(" (resources are plural and lower case: did you mean %s?)", strings.Join(spelt, " or "))
	case len(versions) > 0:
		return fmt.Sprintf(" (%s is served in version %s)", resource.GroupResource(), strings.Join(versions, ", "))
	}
	return ""
}
