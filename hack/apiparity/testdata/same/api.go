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

// Package api is the mirror with the same API under another path, plus one additive identifier.
package api

import "time"

// Factory is a struct with an exported field and methods on both receivers.
type Factory struct {
	Resync time.Duration
	hidden int
}

// Lister is an interface type.
type Lister interface {
	List(selector string) ([]string, error)
}

// New returns a Factory.
func New(resync time.Duration) *Factory { return &Factory{Resync: resync} }

// Lister returns the lister.
func (f *Factory) Lister() Lister { return nil }

// Name is on the value receiver.
func (f Factory) Name() string { return "" }

// Option configures a Factory.
type Option func(*Factory) *Factory

// Version is a constant.
const Version = "v1"

// Default is a variable.
var Default = New(0)

// Extra is additive API that upstream does not have.
func Extra() {}
