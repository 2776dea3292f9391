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

package optcheck

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/sharding"
)

var (
	pods  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

// TestRefusal: each narrowing error refuses only the informers it selects;
// client-go's own options refuse none.
func TestRefusal(t *testing.T) {
	var e Errors
	e.Invalid(errors.New("plain"))
	e.Narrowing(errors.New("ns"), Namespaced)
	e.Narrowing(errors.New("pods only"), Of(pods))
	if got := len(e.All()); got != 3 {
		t.Fatalf("All: %d errors, want 3", got)
	}
	for _, c := range []struct {
		resource   schema.GroupVersionResource
		namespaced bool
		want       []string
		not        []string
	}{
		{pods, true, []string{"ns", "pods only"}, []string{"plain"}},
		{nodes, false, nil, nil},
		{nodes, true, []string{"ns"}, []string{"pods only", "plain"}},
	} {
		err := e.Refusal(c.resource, c.namespaced)
		if c.want == nil {
			if err != nil {
				t.Errorf("Refusal(%v, %v) = %v, want nil", c.resource, c.namespaced, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "not started: an invalid option would have widened what it lists: ") {
			t.Fatalf("Refusal(%v, %v) = %v", c.resource, c.namespaced, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Refusal(%v, %v) = %q, want it to name %q", c.resource, c.namespaced, err, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(err.Error(), n) {
				t.Errorf("Refusal(%v, %v) = %q names %q", c.resource, c.namespaced, err, n)
			}
		}
	}
	if Sharded(sharding.FieldNamespace)(nodes, false) || !Sharded(sharding.FieldUID)(nodes, false) {
		t.Error("Sharded: the namespace hash must refuse only namespaced informers, the UID hash all")
	}
}

// TestCheck: the checks of a resource's options, in order, and the
// cluster-scoped ones a bound resource shares.
func TestCheck(t *testing.T) {
	nsShard, err := sharding.ForShard(sharding.FieldNamespace, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	errs := Resource{
		Resource: nodes, BuiltIn: true,
		Namespaces: []string{"a"}, LabelSelector: "=bad=", ShardSelector: nsShard.APISelector(),
		ListMode: errors.New("unknown"), ResyncPeriod: -1,
		Indexers: cache.Indexers{cache.NamespaceIndex: nil},
	}.Check()
	want := []string{
		`namespaces ["a"] set on a cluster-scoped resource`,
		`LabelSelector "=bad="`,
		"cannot be sharded by namespace",
		"ListMode: unknown",
		"ResyncPeriod -1ns is negative",
		`"namespace" is the namespace index`,
		`the index function "namespace" is nil`,
	}
	if len(errs) != len(want) {
		t.Fatalf("Check: %d errors %q, want %d", len(errs), errs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want %q", i, errs[i], w)
		}
	}
	if errs := (Resource{Resource: pods, BuiltIn: true, Namespaced: true, Namespaces: []string{"a"}, ShardSelector: nsShard.APISelector()}).Check(); len(errs) != 0 {
		t.Errorf("a namespaced resource's namespaces and namespace shard: %q", errs)
	}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	if errs := (Resource{Resource: widgets, Protobuf: true}).Check(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "field Protobuf") {
		t.Errorf("Protobuf on a custom resource: %q", errs)
	}

	err = ClusterScoped([]string{"a"}, nsShard.APISelector())
	if err == nil || strings.Count(err.Error(), "WithResourceOptions: ") != 2 {
		t.Errorf("ClusterScoped = %v, want both errors, each naming WithResourceOptions", err)
	}
	if err := ClusterScoped(nil, nil); err != nil {
		t.Errorf("ClusterScoped(nil, nil) = %v", err)
	}
	if got := FieldName(sharding.FieldUID); got != "sharding.FieldUID" {
		t.Errorf("FieldName = %q", got)
	}
}

// TestNewCustomResyncUnserved: New's verdict joins its arguments' errors
// and the options'; CustomResync drops and reports the bad entries;
// Unserved names the resources nothing serves, sorted.
func TestNewCustomResyncUnserved(t *testing.T) {
	var e Errors
	if err := e.New(false, false, 0); err != nil {
		t.Errorf("New without errors: %v", err)
	}
	e.Invalid(errors.New("bad option"))
	err := e.New(true, false, -1)
	for _, w := range []string{"informers: ", "the kubernetes.Interface is nil", "the default resync period -1ns is negative", "bad option"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("New = %v, want it to contain %q", err, w)
		}
	}
	var none Errors
	if err := none.New(true, true, 0); err != nil {
		t.Errorf("no client under WithoutClientset: %v", err)
	}
	if err := none.New(false, true, 0); err == nil || !strings.Contains(err.Error(), "WithoutClientset: a kubernetes.Interface was given as well") {
		t.Errorf("a client under WithoutClientset: %v", err)
	}

	var reported []error
	got := CustomResync(map[metav1.Object]time.Duration{nil: time.Second, &corev1.Pod{}: time.Minute, &corev1.Node{}: -time.Second},
		func(err error) { reported = append(reported, err) })
	if len(got) != 1 || got[reflect.TypeFor[*corev1.Pod]()] != time.Minute || len(reported) != 2 {
		t.Errorf("CustomResync = %v, reported %q", got, reported)
	}

	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	msgs := Unserved(slices.Values([]schema.GroupVersionResource{widgets, pods, gadgets}), func(r schema.GroupVersionResource) bool { return r == pods })
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0], "WithResourceOptions(example.com/v1, Resource=gadgets): no informer serves it") || !strings.Contains(msgs[1], "widgets") {
		t.Errorf("Unserved = %q", msgs)
	}
}

// TestNamespacesChangeable: only a factory of WithNamespaces, or of New
// with a valid WithNamespace, may change its namespaces.
func TestNamespacesChangeable(t *testing.T) {
	var ok, refused Errors
	refused.Narrowing(errors.New("bad names"), Namespaced)
	for _, c := range []struct {
		e            *Errors
		namespaces   []string
		namespace    string
		set, clients bool
		want         string
	}{
		{&ok, []string{"a"}, "", false, true, ""},
		{&ok, nil, "a", true, false, ""},
		{&ok, []string{"a"}, "b", true, false, "both given"},
		{&refused, nil, "", false, false, "bad names"},
		{&ok, nil, "", false, false, "watches all namespaces"},
		{&ok, nil, "a", true, true, "client-go compatible constructor"},
	} {
		err := c.e.NamespacesChangeable(c.namespaces, c.namespace, c.set, c.clients)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("NamespacesChangeable(%q, %q, %v, %v) = %v, want %q", c.namespaces, c.namespace, c.set, c.clients, err, c.want)
		}
	}
}
