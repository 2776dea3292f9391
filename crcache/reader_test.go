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

package crcache

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestReadsOutsideNamespaces runs the same reads on controller-runtime's
// cache.New and on New, built with the same options and a mapper that
// needs no server, and never started: a Get or List in a namespace
// outside the cache's answers controller-runtime's "unknown namespace"
// error, word for word, before anything about informers (not
// ErrResourceNotCached, not ErrCacheNotStarted), with and without
// ReaderFailOnMissingInformer and in every form; a cluster-scoped kind,
// or a cache with the AllNamespaces key, is not refused.
func TestReadsOutsideNamespaces(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid"}
	type read struct {
		name string
		do   func(cache.Cache) error
	}
	ctx := context.Background()
	unstructuredPod := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(podGVK)
		return u
	}
	unstructuredPods := func() *unstructured.UnstructuredList {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
		return u
	}
	metadataPod := func() *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(podGVK)
		return m
	}
	metadataPods := func() *metav1.PartialObjectMetadataList {
		m := &metav1.PartialObjectMetadataList{}
		m.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
		return m
	}
	key := client.ObjectKey{Namespace: "b", Name: "x"}
	reads := []read{
		{"Get Pod", func(c cache.Cache) error { return c.Get(ctx, key, &corev1.Pod{}) }},
		{"Get Pod in no namespace", func(c cache.Cache) error { return c.Get(ctx, client.ObjectKey{Name: "x"}, &corev1.Pod{}) }},
		{"List Pods", func(c cache.Cache) error { return c.List(ctx, &corev1.PodList{}, client.InNamespace("b")) }},
		{"List Pods by label", func(c cache.Cache) error {
			return c.List(ctx, &corev1.PodList{}, client.InNamespace("b"), client.MatchingLabelsSelector{Selector: labels.Everything()})
		}},
		{"Get unstructured Pod", func(c cache.Cache) error { return c.Get(ctx, key, unstructuredPod()) }},
		{"List unstructured Pods", func(c cache.Cache) error { return c.List(ctx, unstructuredPods(), client.InNamespace("b")) }},
		{"Get metadata Pod", func(c cache.Cache) error { return c.Get(ctx, key, metadataPod()) }},
		{"List metadata Pods", func(c cache.Cache) error { return c.List(ctx, metadataPods(), client.InNamespace("b")) }},
		{"Get Node", func(c cache.Cache) error { return c.Get(ctx, key, &corev1.Node{}) }},
		{"List Nodes", func(c cache.Cache) error { return c.List(ctx, &corev1.NodeList{}, client.InNamespace("b")) }},
	}
	options := map[string]cache.Options{
		"DefaultNamespaces": {DefaultNamespaces: map[string]cache.Config{"a": {}}},
		"DefaultNamespaces with settings": {DefaultNamespaces: map[string]cache.Config{
			"a": {LabelSelector: labels.SelectorFromSet(labels.Set{"x": "y"})}, "c": {},
		}},
		"AllNamespaces key": {DefaultNamespaces: map[string]cache.Config{"a": {}, cache.AllNamespaces: {}}},
		"ByObject namespaces": {ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Namespaces: map[string]cache.Config{"c": {}}},
		}},
	}
	compared := 0
	for name, opts := range options {
		for _, failOnMissing := range []bool{false, true} {
			opts.ReaderFailOnMissingInformer = failOnMissing
			opts.Mapper = mapper()
			opts.Scheme = scheme.Scheme
			theirs, err := cache.New(cfg, opts)
			if err != nil {
				t.Fatalf("%s: cache.New: %v", name, err)
			}
			ours, err := New(cfg, opts)
			if err != nil {
				t.Fatalf("%s: New: %v", name, err)
			}
			for _, r := range reads {
				want, got := r.do(theirs), r.do(ours)
				if describeErr(got) != describeErr(want) {
					t.Errorf("%s, ReaderFailOnMissingInformer %v, %s: crcache answers %s, controller-runtime %s",
						name, failOnMissing, r.name, describeErr(got), describeErr(want))
				}
				compared++
			}
		}
	}
	// The reads must reach the namespace check at all: controller-runtime
	// refuses some of them with it.
	if err := func() error {
		c, err := cache.New(cfg, cache.Options{Mapper: mapper(), Scheme: scheme.Scheme, DefaultNamespaces: map[string]cache.Config{"a": {}}})
		if err != nil {
			return err
		}
		return c.Get(ctx, key, &corev1.Pod{})
	}(); err == nil || !strings.Contains(err.Error(), "unknown namespace") {
		t.Fatalf("controller-runtime's Get outside its namespaces = %v, want its unknown namespace error", err)
	}
	t.Logf("%d reads answered alike", compared)
}

// describeErr is an error's type and text.
func describeErr(err error) string {
	if err == nil {
		return "no error"
	}
	return fmt.Sprintf("%T %q", err, err.Error())
}

// TestSetNamespacesOwnSettings: a DefaultNamespaces entry with settings of
// its own has a slot of its own, which SetNamespaces does not change.
// Naming its namespace is an error that names it and changes nothing (the
// namespace would be cached twice, once without its selector); leaving it
// out changes the other namespaces only, and it keeps its selector.
func TestSetNamespacesOwnSettings(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid"}
	sel := labels.SelectorFromSet(labels.Set{"team": "b"})
	c, err := New(cfg, cache.Options{Mapper: mapper(), Scheme: scheme.Scheme, DefaultNamespaces: map[string]cache.Config{
		"a": {}, "b": {LabelSelector: sel},
	}})
	if err != nil {
		t.Fatal(err)
	}
	crc := c.(*Cache)
	before := describe(crc.config.plan(podGVK), true)
	err = crc.SetNamespaces("a", "b")
	if err == nil || !strings.Contains(err.Error(), `namespace "b" has settings of its own`) {
		t.Fatalf("SetNamespaces(a, b) = %v, want an error naming namespace b and its settings", err)
	}
	if after := describe(crc.config.plan(podGVK), true); after != before {
		t.Errorf("a refused SetNamespaces changed the slots:\n before %s\n after  %s", before, after)
	}
	if err := crc.SetNamespaces("c"); err != nil {
		t.Fatalf("SetNamespaces(c): %v", err)
	}
	got := describe(crc.config.plan(podGVK), true)
	for _, want := range []string{"b label=team=b", "c(follows) label=-"} {
		if !strings.Contains(got, want) {
			t.Errorf("after SetNamespaces(c) the slots are %s, want one with %q", got, want)
		}
	}
	if strings.Contains(got, "a") && strings.Contains(got, "a(follows)") {
		t.Errorf("after SetNamespaces(c) namespace a is still watched: %s", got)
	}
}
