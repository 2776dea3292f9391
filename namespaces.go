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
	"errors"
	"fmt"
	"slices"

	"github.com/kubeinformers/informers/internal/multinamespace"
)

// This file changes the factory's namespaces at run time: SetNamespaces
// stores the set, which resolveSpec (spec.go) gives the informers built
// later, and hands it to the composite of every informer that follows it
// (internal/multinamespace), which adds and removes namespaces.

// SetNamespaces is [Factory.SetNamespaces].
func (f *sharedInformerFactory) SetNamespaces(namespaces ...string) error {
	if err := multinamespace.Check(namespaces); err != nil {
		return fmt.Errorf("informers: SetNamespaces(%q): %w", namespaces, err)
	}
	// One call at a time, so that the informers get the sets in the order
	// they were stored.
	f.setNamespaces.Lock()
	defer f.setNamespaces.Unlock()

	f.lock.Lock()
	err := f.namespacesChangeable()
	if err == nil && f.shuttingDown {
		err = errors.New("the factory has been shut down")
	}
	if err != nil {
		f.lock.Unlock()
		return fmt.Errorf("informers: SetNamespaces(%q): %w", namespaces, err)
	}
	f.currentNamespaces = slices.Sorted(slices.Values(namespaces))
	var targets []*entry
	for _, e := range f.all() {
		if e.namespaces != nil {
			targets = append(targets, e)
		}
	}
	f.lock.Unlock()

	// Outside the lock: removing a namespace waits for its handlers,
	// which may call back into the factory.
	var errs []error
	for _, e := range targets {
		if err := e.namespaces.SetNamespaces(namespaces); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.id, err))
		} else {
			e.hooks.Budget.Retry() // narrowed: one stopped over its budget tries again
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("informers: SetNamespaces(%q): %w", namespaces, err)
	}
	return nil
}

// namespacesChangeable returns why the factory's namespaces cannot change,
// or nil (internal/optcheck); resolveSpec asks it too, so that only
// informers of a factory whose set can change are built to follow it.
func (f *sharedInformerFactory) namespacesChangeable() error {
	return f.optionErrs.NamespacesChangeable(f.namespaces, f.namespace, f.namespaceSet, f.clientGoNamespace)
}
