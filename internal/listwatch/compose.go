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

package listwatch

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// This file composes what an informer's spec is made of: its requests'
// tweak, from the factory's and the resource's options, and its
// transform chain.

// JoinTweaks returns the tweak of an informer's requests: the base one
// (its group's or the factory's) first, then the resource's label and
// field selectors, appended (AND), then the resource's own tweak, which
// sees them all. It returns nil when there is nothing to change.
func JoinTweaks(base func(*metav1.ListOptions), label, field string, own func(*metav1.ListOptions)) func(*metav1.ListOptions) {
	if base == nil && label == "" && field == "" && own == nil {
		return nil
	}
	return func(opts *metav1.ListOptions) {
		if base != nil {
			base(opts)
		}
		opts.LabelSelector = andSelectors(opts.LabelSelector, label)
		opts.FieldSelector = andSelectors(opts.FieldSelector, field)
		if own != nil {
			own(opts)
		}
	}
}

// andSelectors joins two selectors in the syntax of metav1.ListOptions,
// where a comma means AND.
func andSelectors(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "," + b
}

// ChainTransforms returns a transform that applies first, then second;
// either may be nil.
func ChainTransforms(first, second cache.TransformFunc) cache.TransformFunc {
	switch {
	case first == nil:
		return second
	case second == nil:
		return first
	}
	return func(obj any) (any, error) {
		obj, err := first(obj)
		if err != nil {
			return nil, err
		}
		return second(obj)
	}
}
