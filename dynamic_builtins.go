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
)

// This file holds what the drop-in for client-go's dynamicinformer (the
// package of that name) needs from the factory beyond WithoutClientset
// (options.go): ForResource serving every resource as a dynamic informer,
// as client-go's dynamic factory does, instead of the typed informer for
// built-in ones.

// WithDynamicBuiltIns makes ForResource return a shared dynamic informer of
// *unstructured.Unstructured, fed by the factory's dynamic client
// ([WithDynamicClient]), for every resource, the built-in ones included, as
// client-go's dynamicinformer does. A resource name that is close to a
// built-in one is then requested as given (the server answers an unknown
// one with 404 Not Found, which [Factory.Ready] names) rather than refused
// with a suggestion. The typed accessors are not affected.
//
// Without a dynamic client it is an error from [New]; the other
// constructors log it, and ForResource then serves as without the option.
func WithDynamicBuiltIns() SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.dynamicBuiltIns = true
		return factory
	}
}

// checkDynamicBuiltIns is part of checkFactoryOptions.
func (f *sharedInformerFactory) checkDynamicBuiltIns() {
	if f.dynamicBuiltIns && f.dynamicClient == nil {
		f.invalid(errors.New("WithDynamicBuiltIns: the factory has no dynamic client (use NewForConfig or WithDynamicClient)"))
		f.dynamicBuiltIns = false
	}
}
