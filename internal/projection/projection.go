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

// Package projection keeps only some fields of cached objects: the engine
// behind the root package's ResourceOptions.KeepFields. A projection is a
// set of field paths in the objects' JSON names; every other field is
// set to its zero value, except the always-kept ones ([Always]).
//
// A projection acts in three ways, which give the same objects:
//   - on a typed object, in place, by reflection over its Go type
//     ([Projection.Object]), after a transform of the user's or for a
//     response that was not protobuf;
//   - on the protobuf bytes of a typed object, before the generated
//     Unmarshal sees them ([Projection.Cut]): the dropped fields are
//     never decoded. The field numbers come from the Go types'
//     `protobuf:"..."` struct tags, read once per type;
//   - on an unstructured object's map, in place.
//
// Projecting in place writes only fields that are not already zero, so
// projecting an object again (a resync's or an already cut one) writes
// nothing.
package projection

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Always lists the fields every projection keeps, besides apiVersion and
// kind: the identity of an object, what informers, listers and the
// namespace index read, and what controllers rely on to see a change
// (resourceVersion, generation) or an object going away.
var Always = []string{
	"metadata.name",
	"metadata.generateName",
	"metadata.namespace",
	"metadata.uid",
	"metadata.resourceVersion",
	"metadata.generation",
	"metadata.creationTimestamp",
	"metadata.deletionTimestamp",
	"metadata.deletionGracePeriodSeconds",
	"metadata.labels",
	"metadata.ownerReferences",
	"metadata.finalizers",
}

// Projection keeps the fields of its paths, and [Always]. It is safe for
// concurrent use.
type Projection struct {
	paths []string
	// tree is the projection by JSON name, for unstructured objects.
	tree tree
	// typ is the Go type of typed objects (a pointer to a struct), nil
	// when only unstructured objects are known; plan and wire project
	// them.
	typ  reflect.Type
	plan *structPlan
	wire *wirePlan
}

// CheckSyntax reports paths that are not dot-separated lists of names.
func CheckSyntax(paths []string) error {
	var errs []error
	for _, p := range paths {
		if p == "" || slices.Contains(strings.Split(p, "."), "") {
			errs = append(errs, fmt.Errorf("KeepFields: %q is not a dot-separated field path (such as spec.nodeName)", p))
		} else if strings.ContainsAny(p, " \t\n[]*") {
			errs = append(errs, fmt.Errorf("KeepFields: %q: a field path holds JSON field names separated by dots, without spaces, indexes or wildcards", p))
		}
	}
	return errors.Join(errs...)
}

// New returns the projection on paths of the objects of Go type t: a
// typed object (a pointer to a struct) has its paths checked against its
// Go type and is projected by field; an unstructured object, or a nil t,
// has only the paths' syntax checked. A metadata-only object is refused:
// it holds metadata alone. New returns nil for no paths.
func New(paths []string, t reflect.Type) (*Projection, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if t == partialType {
		return nil, errors.New("KeepFields: a metadata informer caches metadata alone; KeepFields applies to typed and dynamic informers")
	}
	if err := CheckSyntax(paths); err != nil {
		return nil, err
	}
	p := &Projection{paths: slices.Clone(paths), tree: tree{"apiVersion": nil, "kind": nil}}
	for _, path := range append(slices.Clone(Always), paths...) {
		p.tree.add(strings.Split(path, "."))
	}
	if t == nil || t.Implements(unstructuredType) {
		return p, nil
	}
	root, err := compile(t, paths)
	if err != nil {
		return nil, err
	}
	p.typ = t
	p.plan = newStructPlan(t.Elem(), root)
	p.wire = newWirePlan(t.Elem(), root)
	return p, nil
}

var (
	partialType      = reflect.TypeFor[*metav1.PartialObjectMetadata]()
	unstructuredType = reflect.TypeFor[runtime.Unstructured]()
)

// CheckResource checks paths against the Go type of resource in types
// (the factory's built-in resources by Go type); for a resource not in
// types, only their syntax.
func CheckResource(types map[reflect.Type]schema.GroupVersionResource, resource schema.GroupVersionResource, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	for t, r := range types {
		if r == resource {
			return Check(t, paths)
		}
	}
	return CheckSyntax(paths)
}

// Refusal is why an informer of resource does not run when New returned
// err, or nil.
func Refusal(resource schema.GroupVersionResource, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("not started: WithResourceOptions(%v): %w", resource, err)
}

// Check reports the paths that do not name a field of t, a pointer to a
// struct (the Go type of a resource's objects), and their syntax.
func Check(t reflect.Type, paths []string) error {
	if err := CheckSyntax(paths); err != nil {
		return err
	}
	_, err := compile(t, paths)
	return err
}

// Paths returns the paths the projection was made with.
func (p *Projection) Paths() []string { return slices.Clone(p.paths) }

// Type returns the Go type of the typed objects the projection knows, or
// nil.
func (p *Projection) Type() reflect.Type { return p.typ }

// Transform projects obj in place (a typed object of the projection's
// type, or an unstructured object) and returns it; any other value is
// returned as it is. It is a cache.TransformFunc; a nil projection's
// Transform returns obj.
func (p *Projection) Transform(obj any) (any, error) {
	p.Object(obj)
	return obj, nil
}

// TransformFunc returns p.Transform, or nil for a nil projection.
func (p *Projection) TransformFunc() func(any) (any, error) {
	if p == nil {
		return nil
	}
	return p.Transform
}

// Object projects obj in place, as Transform does.
func (p *Projection) Object(obj any) {
	if p == nil || obj == nil {
		return
	}
	if o, ok := obj.(*unstructured.Unstructured); ok {
		if o != nil {
			p.tree.project(o.Object)
		}
		return
	}
	if p.plan == nil || reflect.TypeOf(obj) != p.typ {
		return
	}
	v := reflect.ValueOf(obj)
	if v.IsNil() {
		return
	}
	p.plan.project(v.Elem())
}

// tree is a projection by JSON name: a nil subtree keeps the whole value.
type tree map[string]tree

func (t tree) add(segs []string) {
	sub, ok := t[segs[0]]
	switch {
	case ok && sub == nil:
		return // already whole
	case len(segs) == 1:
		t[segs[0]] = nil
		return
	case !ok:
		sub = tree{}
		t[segs[0]] = sub
	}
	sub.add(segs[1:])
}

// project deletes from m what t does not keep.
func (t tree) project(m map[string]any) {
	for k, v := range m {
		sub, ok := t[k]
		switch {
		case !ok:
			delete(m, k)
		case sub != nil:
			sub.projectValue(v)
		}
	}
}

func (t tree) projectValue(v any) {
	switch v := v.(type) {
	case map[string]any:
		t.project(v)
	case []any:
		for _, e := range v {
			t.projectValue(e)
		}
	}
}

// node is the projection of a typed value, by Go field index: all keeps
// the whole value; otherwise fields holds the kept fields (a field of an
// embedded struct that JSON inlines is under the embedded field's node).
type node struct {
	all    bool
	fields map[int]*node
}

func (n *node) child(i int) *node {
	if n.fields == nil {
		n.fields = map[int]*node{}
	}
	c, ok := n.fields[i]
	if !ok {
		c = &node{}
		n.fields[i] = c
	}
	return c
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// compile resolves paths, and Always if t has metadata, on t.
func compile(t reflect.Type, paths []string) (*node, error) {
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("KeepFields: objects of type %v cannot be projected by field", t)
	}
	root := &node{}
	var errs []error
	for _, path := range paths {
		if err := root.add(t.Elem(), strings.Split(path, "."), path); err != nil {
			errs = append(errs, fmt.Errorf("KeepFields: %q: %w", path, err))
		}
	}
	if f, ok := fieldsOf(t.Elem())["metadata"]; ok && f.typ == objectMetaType {
		for _, path := range Always {
			if err := root.add(t.Elem(), strings.Split(path, "."), path); err != nil {
				return nil, err
			}
		}
	}
	return root, errors.Join(errs...)
}

// add keeps the path segs of a value of type t under n.
func (n *node) add(t reflect.Type, segs []string, path string) error {
	if n.all {
		return nil
	}
	if len(segs) == 0 {
		n.all, n.fields = true, nil
		return nil
	}
	st := structOf(t)
	if st == nil {
		return fmt.Errorf("%s has no fields to select (%v); keep %s whole", parentOf(path, segs), t, parentOf(path, segs))
	}
	f, ok := fieldsOf(st)[segs[0]]
	if !ok {
		return fmt.Errorf("%v has no field %q", st, segs[0])
	}
	c := n
	for _, i := range f.index {
		c = c.child(i)
	}
	return c.add(f.typ, segs[1:], path)
}

// parentOf is the part of path before segs.
func parentOf(path string, segs []string) string {
	all := strings.Split(path, ".")
	return strings.Join(all[:len(all)-len(segs)], ".")
}

// structOf is the struct type of the values a path may select fields
// of: t, the element of a pointer or slice t, but not a type with a JSON
// encoding of its own (Time, Quantity, IntOrString, RawExtension, ...)
// nor a map.
func structOf(t reflect.Type) reflect.Type {
	for {
		if leaf(t) {
			return nil
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			t = t.Elem()
		case reflect.Struct:
			return t
		default:
			return nil
		}
	}
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func leaf(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

// jsonField is a field by its JSON name: the Go field indexes that lead
// to it (more than one through inlined embedded structs) and its type.
type jsonField struct {
	index []int
	typ   reflect.Type
}

// fieldsOf returns the fields of st by JSON name, as encoding/json names
// them, with the fields of embedded structs without a name inlined.
func fieldsOf(st reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for i := range st.NumField() {
		f := st.Field(i)
		name, inline, ok := jsonName(f)
		if !ok {
			continue
		}
		if inline {
			for k, v := range fieldsOf(derefStruct(f.Type)) {
				if _, dup := out[k]; !dup {
					out[k] = jsonField{index: append([]int{i}, v.index...), typ: v.typ}
				}
			}
			continue
		}
		out[name] = jsonField{index: []int{i}, typ: f.Type}
	}
	return out
}

// jsonName is the JSON name of f, or inline for an embedded struct
// without one; ok is false for a field JSON does not encode.
func jsonName(f reflect.StructField) (name string, inline, ok bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, false
	}
	name, _, _ = strings.Cut(tag, ",")
	if name == "" && f.Anonymous && derefStruct(f.Type) != nil {
		return "", true, true
	}
	if !f.IsExported() {
		return "", false, false
	}
	if name == "" {
		name = f.Name
	}
	return name, false, true
}

func derefStruct(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

// structPlan projects a struct value in place: drop lists the fields set
// to zero, sub those projected in depth.
type structPlan struct {
	drop []int
	sub  []subPlan
}

// subPlan projects field index in depth: steps leads from the field to
// the structs plan projects, one kind a step, as structOf goes: a pointer
// is followed, a slice or an array is ranged over, so that a field of
// type T, *T, []T, []*T, *[]T, [][]T, [N]*T and any other such nesting
// has the kept subtree kept in every element.
type subPlan struct {
	index int
	steps []reflect.Kind
	plan  *structPlan
}

var typeMetaType = reflect.TypeFor[metav1.TypeMeta]()

func newStructPlan(st reflect.Type, n *node) *structPlan {
	p := &structPlan{}
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() || f.Type == typeMetaType {
			continue
		}
		if _, _, ok := jsonName(f); !ok {
			continue
		}
		c, kept := n.fields[i]
		switch {
		case !kept:
			p.drop = append(p.drop, i)
		case c.all:
		default:
			// compile selected fields below this one, so structOf found a
			// struct at the end of pointers, slices and arrays.
			sp := subPlan{index: i}
			t := f.Type
			for t.Kind() != reflect.Struct {
				sp.steps = append(sp.steps, t.Kind())
				t = t.Elem()
			}
			sp.plan = newStructPlan(t, c)
			p.sub = append(p.sub, sp)
		}
	}
	return p
}

// project sets to zero, in v, the fields p drops that are not zero.
func (p *structPlan) project(v reflect.Value) {
	for _, i := range p.drop {
		if f := v.Field(i); !f.IsZero() {
			f.SetZero()
		}
	}
	for _, s := range p.sub {
		s.plan.projectAt(v.Field(s.index), s.steps)
	}
}

// projectAt projects the structs that steps lead to from v.
func (p *structPlan) projectAt(v reflect.Value, steps []reflect.Kind) {
	if len(steps) == 0 {
		p.project(v)
		return
	}
	switch steps[0] {
	case reflect.Pointer:
		if !v.IsNil() {
			p.projectAt(v.Elem(), steps[1:])
		}
	default: // a slice or an array
		for j := range v.Len() {
			p.projectAt(v.Index(j), steps[1:])
		}
	}
}

// ProtobufNumber returns the field number of a `protobuf:"bytes,N,..."`
// struct tag, or 0: how a generated Go type names its protobuf fields.
// internal/listwatch reads objects' and lists' layouts with it too.
func ProtobufNumber(tag string) int {
	_, rest, _ := strings.Cut(tag, ",")
	num, _, _ := strings.Cut(rest, ",")
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0
	}
	return n
}
