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
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/lean"
	"github.com/kubeinformers/informers/internal/listwatch"
)

// This file holds the lean-memory options and transforms: what a user
// chooses. The engine that drops, interns and shares is internal/lean;
// BENCHMARKS.md has the measured effect.

// LeanOption changes what [WithLeanMemory] and [TransformLean] do.
type LeanOption func(*leanConfig)

// leanConfig is what the options set (internal/lean).
type leanConfig = lean.Config

// LeanDropLastApplied also removes the annotation
// kubectl.kubernetes.io/last-applied-configuration ([k8s.io/api/core/v1.LastAppliedConfigAnnotation])
// from cached objects. kubectl apply writes a copy of the whole applied
// object there, so dropping it saves much of a kubectl-applied object; a
// controller that reads the annotation must not use this option.
func LeanDropLastApplied() LeanOption {
	return func(c *leanConfig) { c.DropLastApplied = true }
}

// LeanKeepManagedFields keeps metadata.managedFields in cached objects
// (they are still interned and shared).
func LeanKeepManagedFields() LeanOption {
	return func(c *leanConfig) { c.KeepManagedFields = true }
}

// LeanInterning turns on or off the interning of the strings cached
// objects repeat (one shared copy of each, through Go's [unique] package);
// the last LeanInterning of a list wins. It is on by default: behind a
// bounded table of recent strings it costs little CPU for the heap it
// saves (the figures are in the repository's BENCHMARKS.md).
// LeanInterning(false) leaves strings as decoded.
func LeanInterning(on bool) LeanOption {
	return func(c *leanConfig) { c.Intern = on }
}

// LeanNoShare turns sharing of identical maps and sub-structures off.
func LeanNoShare() LeanOption {
	return func(c *leanConfig) { c.NoShare = true }
}

// WithLeanMemory makes every informer of the factory cache its objects
// lean, as [TransformLean] describes: without managedFields, with
// repeated strings interned ([LeanInterning]) and with identical maps and
// sub-structures shared.
//
// It composes with [WithTransform]: the factory applies the user's
// transform first, to the full object as decoded, and the lean transform
// to its result. Objects a lister returns are then semantically equal
// (apimachinery's equality.Semantic) to what they would be without this
// option, except for the fields documented as dropped. They are read-only,
// as client-go requires of every cached object; see [TransformLean].
//
// A typed informer of a built-in resource, when no transform of the
// user's comes first, decodes protobuf responses without building what
// the lean transform would drop (managedFields; with
// [LeanDropLastApplied] the last-applied annotation), which saves CPU and
// garbage per object decoded. Its requests are its
// clientset's own; JSON responses are decoded as client-go decodes them.
// The repository's docs/protobuf.md has the figures.
func WithLeanMemory(options ...LeanOption) SharedInformerOption {
	c := lean.Resolve(options)
	transform := lean.New(c).Transform
	strip := listwatch.Strip{ManagedFields: !c.KeepManagedFields, LastApplied: c.DropLastApplied}
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.leanTransform, factory.leanStrip = transform, strip
		return factory
	}
}

// TransformStripManagedFields returns a [cache.TransformFunc] that removes
// metadata.managedFields from objects before they are cached. It handles
// any object with [metav1.Object] accessors, including
// [*metav1.PartialObjectMetadata] and [*unstructured.Unstructured], and the
// object inside a [cache.DeletedFinalStateUnknown]; anything else passes
// unchanged. Use it with [WithTransform] or any informer's SetTransform.
func TransformStripManagedFields() cache.TransformFunc {
	return lean.StripManagedFields
}

// TransformLean returns the [cache.TransformFunc] behind [WithLeanMemory],
// for use with any informer's SetTransform, including client-go's and
// metadata-only informers. By default it
//   - removes metadata.managedFields ([LeanKeepManagedFields] keeps them);
//   - interns the strings cached objects repeat (label and annotation
//     keys and values, namespace, generateName, owner references,
//     finalizers, and for Pods node name, images, container, port, env and
//     volume names, conditions, …) into one shared copy each, through Go's
//     [unique] package, which is safe for concurrent informers and lets
//     unused strings be collected ([LeanInterning](false) turns that off);
//   - shares identical values between cached objects ([LeanNoShare]):
//     labels and annotations maps, owner references and finalizers, and for
//     Pods the containers, volumes, tolerations, node selector, security
//     context, affinity and resource lists, so the Pods of one ReplicaSet
//     hold one copy of their template.
//
// [LeanDropLastApplied] also drops kubectl's last-applied annotation.
//
// Every typed object and [*metav1.PartialObjectMetadata] has its metadata
// made lean; Pods in depth. [*unstructured.Unstructured] and any other
// object with metadata accessors only lose the dropped fields.
//
// The result is semantically equal (apimachinery's equality.Semantic) to
// the input except for the dropped fields: a nil and an empty slice or map
// may be exchanged, and equal quantities may be spelt alike.
//
// Sharing relies on client-go's contract that objects returned by an
// informer's store or lister are read-only: a caller that modifies a
// shared map or container in place changes it for every object that
// shares it. Call DeepCopy before modifying, as that contract already
// requires, and run tests with KUBE_CACHE_MUTATION_DETECTOR=true:
// client-go's mutation detector then panics on such a write.
//
// Each call returns a transform with its own sharing tables, bounded in
// size; interned strings are process-wide.
func TransformLean(options ...LeanOption) cache.TransformFunc {
	return lean.New(lean.Resolve(options)).Transform
}
