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

package meter

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/cache"
)

type stringer interface{ String() string }

type named string

func (n named) String() string { return string(n) }

// TestProvider: a nil provider is none, whether nil as an interface or
// never set.
func TestProvider(t *testing.T) {
	var p Provider[stringer]
	if _, ok := p.Get(); ok || p.On() {
		t.Fatal("the zero Provider holds a provider")
	}
	p.Set(named("x"))
	if got, ok := p.Get(); !ok || !p.On() || got.String() != "x" {
		t.Fatalf("after Set: %v %v", got, ok)
	}
	p.Set(nil)
	if _, ok := p.Get(); ok || p.On() {
		t.Fatal("Set(nil) left a provider")
	}
}

// TestFactoryName: a factory without a name of its own gets one default,
// reserved until Drop, and never another factory's; a name given wins.
func TestFactoryName(t *testing.T) {
	var a, b Factory
	na, nb := a.Name(nil), b.Name(nil)
	if !strings.HasPrefix(na, "kubeinformers-factory-") || na == nb || a.Name(nil) != na {
		t.Fatalf("default names %q and %q", na, nb)
	}
	if _, err := cache.NewInformerName(na); err == nil {
		t.Fatalf("%q is not reserved", na)
	}
	a.Drop(nil)
	b.Drop(nil)
	n, err := cache.NewInformerName(na)
	if err != nil {
		t.Fatalf("%q still reserved after Drop: %v", na, err)
	}
	defer n.Release()
	var c Factory
	if got := c.Name(n); got != na {
		t.Fatalf("Name(given) = %q, want %q", got, na)
	}
}
