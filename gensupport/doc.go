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

// Package gensupport is what the code kubeinformers-gen generates for a
// user's own API groups builds on: typed resources ([TypedResource]),
// binding them to a factory of package informers ([Bind]) so that their
// typed informers share its registry, options and life cycle with the
// built-in ones, and the accessors that serve those informers without
// allocating ([Kind], [Lazy]).
//
// Generated code imports it; a controller rarely needs to. Its name
// cannot be an API group's: kubeinformers-gen names a group's package
// after the group, and refuses a group named gensupport.
package gensupport
