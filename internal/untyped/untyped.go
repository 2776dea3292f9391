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

// Package untyped lets the dynamicinformer and metadatainformer packages
// build the root package's factory without a typed client, which no public
// constructor allows: such a factory's typed accessors would fail, so only
// these two packages, which never expose them, may make one.
package untyped

import "time"

// New is set by the root package (its dynamic_builtins.go): it returns an
// informers.Factory built from options (each an informers.SharedInformerOption)
// with no typed client, and the errors its options had, which it does not
// log. The factory is returned even when there are errors: the informers an
// invalid narrowing option was meant for then never run.
var New func(defaultResync time.Duration, options []any) (factory any, errs []error)
