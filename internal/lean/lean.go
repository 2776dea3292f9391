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

// Package lean makes cached objects smaller: it drops what controllers
// rarely read (metadata.managedFields, and on request kubectl's
// last-applied annotation), interns the strings objects repeat, and shares
// the maps and sub-structures many objects hold identically. The root
// package's WithLeanMemory and TransformLean are its options; this package
// is the engine behind them.
//
// An informer keeps every object it has seen in full. Three things make
// that cache larger than it needs to be: metadata.managedFields (about a
// third of a typical object), strings that every object repeats (label
// keys, namespace, image, node name, ...) and sub-structures that many
// objects hold identically (the labels map and the container specs of
// every Pod of one ReplicaSet).
package lean

import (
	"encoding/binary"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"unique"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/memsize"
)

// Config is what a lean transform does; the root package's LeanOptions
// set it.
type Config struct {
	// KeepManagedFields keeps metadata.managedFields (still interned and
	// shared).
	KeepManagedFields bool
	// DropLastApplied drops kubectl's last-applied annotation.
	DropLastApplied bool
	// Intern interns the strings cached objects repeat.
	Intern bool
	// NoShare turns off the sharing of identical maps and sub-structures.
	NoShare bool
}

// Default is the configuration before any option: interning is on,
// since behind its table of recent strings it passes the bar of a lean
// technique (at least 5% less heap for at most 10% more CPU to sync; the
// repository's BENCHMARKS.md).
func Default() Config { return Config{Intern: true} }

// DropManagedFields removes metadata.managedFields from obj, in a
// cache.DeletedFinalStateUnknown too, and returns it; an object without
// metadata accessors passes unchanged.
func DropManagedFields(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		d.Obj = DropManagedFields(d.Obj)
		return d
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj
}

// maxShared bounds each sharing table. A table that fills is emptied:
// objects already cached keep sharing what they share, new ones start
// over, so memory stays bounded under churn (for example rolling
// ReplicaSets with new pod-template-hash labels).
const maxShared = 1 << 14

// sharedSet maps the canonical encoding of a value to the one copy cached
// objects share, with its entry in the memory estimate's registry
// (internal/memsize), which counts the objects that take it.
type sharedSet[T any] struct {
	mu sync.Mutex
	m  map[string]sharedCopy[T]
}

type sharedCopy[T any] struct {
	v T
	h *memsize.Shared
}

// get returns the shared copy for key, or stores prepare(l, v) (which
// interns v's strings) as the copy for key and returns it.
func (s *sharedSet[T]) get(l *Leaner, key []byte, v T, prepare func(*Leaner, T) T) T {
	s.mu.Lock()
	if c, ok := s.m[string(key)]; ok {
		s.mu.Unlock()
		c.h.Ref()
		return c.v
	}
	s.mu.Unlock()
	// Prepare outside the lock: it may intern a whole container.
	v = prepare(l, v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.m[string(key)]; ok {
		c.h.Ref()
		return c.v
	}
	if s.m == nil || len(s.m) >= maxShared {
		s.m = make(map[string]sharedCopy[T])
	}
	s.m[string(key)] = sharedCopy[T]{v: v, h: memsize.Share(v)}
	return v
}

// Leaner holds one lean transform's configuration and sharing tables.
type Leaner struct {
	cfg Config

	bufs sync.Pool // *[]byte key buffers, taken and returned by share only

	stringMaps      sharedSet[map[string]string]
	ownerRefs       sharedSet[[]metav1.OwnerReference]
	stringSlices    sharedSet[[]string]
	fieldsV1        sharedSet[*metav1.FieldsV1]
	containers      sharedSet[[]corev1.Container]
	ephemeral       sharedSet[[]corev1.EphemeralContainer]
	volumes         sharedSet[[]corev1.Volume]
	tolerations     sharedSet[[]corev1.Toleration]
	pullSecrets     sharedSet[[]corev1.LocalObjectReference]
	spread          sharedSet[[]corev1.TopologySpreadConstraint]
	readinessGates  sharedSet[[]corev1.PodReadinessGate]
	podSecurity     sharedSet[*corev1.PodSecurityContext]
	affinity        sharedSet[*corev1.Affinity]
	dnsConfig       sharedSet[*corev1.PodDNSConfig]
	resourceLists   sharedSet[corev1.ResourceList]
	hostIPs         sharedSet[[]corev1.HostIP]
	int64s          sharedSet[*int64]
	int32s          sharedSet[*int32]
	bools           sharedSet[*bool]
	preemptPolicies sharedSet[*corev1.PreemptionPolicy]
}

// StripManagedFields is DropManagedFields as a cache.TransformFunc.
func StripManagedFields(obj any) (any, error) { return DropManagedFields(obj), nil }

// Resolve applies options (the root's LeanOptions) to the default
// configuration; nil options are skipped.
func Resolve[O ~func(*Config)](options []O) Config {
	c := Default()
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// New returns a lean transform configured by c, with empty sharing
// tables.
func New(c Config) *Leaner {
	l := &Leaner{cfg: c}
	l.bufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	return l
}

// Transform is the cache.TransformFunc; it never fails.
func (l *Leaner) Transform(obj any) (any, error) { return l.lean(obj), nil }

func (l *Leaner) lean(obj any) any {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		// client-go does not transform tombstones, but a caller may.
		o.Obj = l.lean(o.Obj)
		return o
	case *corev1.Pod:
		l.objectMeta(&o.ObjectMeta)
		l.pod(o)
		return o
	case *unstructured.Unstructured:
		if !l.cfg.KeepManagedFields && o.GetManagedFields() != nil {
			o.SetManagedFields(nil)
		}
		if l.cfg.DropLastApplied {
			if a := o.GetAnnotations(); hasLastApplied(a) {
				delete(a, corev1.LastAppliedConfigAnnotation)
				o.SetAnnotations(a)
			}
		}
		return o
	case metav1.ObjectMetaAccessor:
		// Typed objects and PartialObjectMetadata embed ObjectMeta.
		if om, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok && om != nil {
			l.objectMeta(om)
			return o
		}
	}
	// Any other object with accessors: strip and drop only.
	if m, err := meta.Accessor(obj); err == nil {
		if !l.cfg.KeepManagedFields && m.GetManagedFields() != nil {
			m.SetManagedFields(nil)
		}
		if a := m.GetAnnotations(); l.cfg.DropLastApplied && hasLastApplied(a) {
			m.SetAnnotations(withoutLastApplied(a))
		}
	}
	return obj
}

func hasLastApplied(a map[string]string) bool {
	_, ok := a[corev1.LastAppliedConfigAnnotation]
	return ok
}

// withoutLastApplied returns a copy, never editing the map in place: it may
// be shared by objects already cached.
func withoutLastApplied(a map[string]string) map[string]string {
	c := maps.Clone(a)
	delete(c, corev1.LastAppliedConfigAnnotation)
	return c
}

// str interns s, unless interning is off. Only strings likely repeated
// across objects go through it: interning a unique string (a name, UID or
// IP) costs a copy and saves nothing.
func (l *Leaner) str(s string) string {
	if !l.cfg.Intern || s == "" {
		return s
	}
	return internStr(s)
}

// internSlots is the size of the table in front of unique.Make.
const internSlots = 1 << 12

// internTable is a direct-mapped table of recently interned strings, in
// front of unique.Make: a hit costs a hash and a comparison, where
// unique.Make walks its concurrent map and keeps a weak handle. A slot
// holds the last string interned with its hash, so the table keeps at most
// internSlots strings alive; unique.Make frees the others once no cached
// object holds them.
//
// Each interned string is registered with the memory estimate
// (internal/memsize), which counts it as shared by the objects that take
// it.
var internTable struct {
	seed  maphash.Seed
	slots [internSlots]atomic.Pointer[interned]
}

type interned struct {
	s string
	h *memsize.Shared
}

func init() { internTable.seed = maphash.MakeSeed() }

func internStr(s string) string {
	slot := &internTable.slots[maphash.String(internTable.seed, s)&(internSlots-1)]
	if p := slot.Load(); p != nil && p.s == s {
		p.h.Ref()
		return p.s
	}
	v := unique.Make(s).Value()
	slot.Store(&interned{s: v, h: memsize.Share(v)})
	return v
}

func strT[T ~string](l *Leaner, s T) T { return T(l.str(string(s))) }

func (l *Leaner) strs(s []string) []string {
	for i := range s {
		s[i] = l.str(s[i])
	}
	return s
}

func (l *Leaner) objectMeta(m *metav1.ObjectMeta) {
	if !l.cfg.KeepManagedFields {
		m.ManagedFields = nil
	}
	if l.cfg.DropLastApplied && hasLastApplied(m.Annotations) {
		m.Annotations = withoutLastApplied(m.Annotations)
	}
	m.Namespace = l.str(m.Namespace)
	m.GenerateName = l.str(m.GenerateName)
	m.Labels = l.stringMap(m.Labels)
	m.Annotations = l.stringMap(m.Annotations)
	m.OwnerReferences = l.ownerReferences(m.OwnerReferences)
	m.Finalizers = l.stringSlice(m.Finalizers)
	for i := range m.ManagedFields {
		f := &m.ManagedFields[i]
		f.Manager = l.str(f.Manager)
		f.Operation = strT(l, f.Operation)
		f.APIVersion = l.str(f.APIVersion)
		f.FieldsType = l.str(f.FieldsType)
		f.Subresource = l.str(f.Subresource)
		if f.FieldsV1 != nil && !l.cfg.NoShare {
			// Keyed by the raw bytes themselves: no encoding, no buffer.
			f.FieldsV1 = l.fieldsV1.get(l, f.FieldsV1.GetRawBytes(), f.FieldsV1, keep)
		}
	}
}

// keep is the prepare step of values with nothing to intern.
func keep[T any](_ *Leaner, v T) T { return v }

// maxPooledBuf is the largest key buffer returned to the pool: a rare huge
// value does not pin its buffer.
const maxPooledBuf = 64 << 10

// share returns the copy of v that cached objects share: the one set holds
// under v's key, or else v after prepare (which interns its strings), then
// stored as that copy. encode appends v's canonical encoding, the key, to a
// pooled buffer; when it reports false (a protobuf encoding failed), v is
// prepared and not shared. With sharing off ([LeanNoShare]) v is only
// prepared.
func share[T any](l *Leaner, set *sharedSet[T], v T, encode func([]byte, T) ([]byte, bool), prepare func(*Leaner, T) T) T {
	if l.cfg.NoShare {
		return prepare(l, v)
	}
	bp := l.bufs.Get().(*[]byte)
	key, ok := encode((*bp)[:0], v)
	if ok {
		v = set.get(l, key, v, prepare)
	} else {
		v = prepare(l, v)
	}
	// The map holds a copy of the key: the buffer, grown or not, is free
	// again.
	if cap(key) <= maxPooledBuf {
		*bp = key[:0]
		l.bufs.Put(bp)
	}
	return v
}

// Encoders: the canonical encoding of a value, appended to b.

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// protoMarshaler is what the generated API types implement.
type protoMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// appendProto appends m's protobuf encoding, length-prefixed. Protobuf
// encodes every field of the API types, with map keys sorted, so equal
// encodings mean semantically equal values.
func appendProto(b []byte, m protoMarshaler) ([]byte, bool) {
	n := m.Size()
	b = binary.AppendUvarint(b, uint64(n))
	b = slices.Grow(b, n)
	if _, err := m.MarshalToSizedBuffer(b[len(b) : len(b)+n]); err != nil {
		return b, false
	}
	return b[:len(b)+n], true
}

func encProtoSlice[T any, PT interface {
	*T
	protoMarshaler
}](b []byte, s []T) ([]byte, bool) {
	for i := range s {
		var ok bool
		if b, ok = appendProto(b, PT(&s[i])); !ok {
			return b, false
		}
	}
	return b, true
}

func encProto[PT protoMarshaler](b []byte, p PT) ([]byte, bool) { return appendProto(b, p) }

func encInt[T ~int64 | ~int32](b []byte, p *T) ([]byte, bool) {
	return binary.AppendVarint(b, int64(*p)), true
}

func encBool(b []byte, p *bool) ([]byte, bool) {
	if *p {
		return append(b, 1), true
	}
	return append(b, 0), true
}

func encString[T ~string](b []byte, p *T) ([]byte, bool) { return append(b, *p...), true }

func encStringMap(b []byte, m map[string]string) ([]byte, bool) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendString(b, k)
		b = appendString(b, m[k])
	}
	return b, true
}

func encStrings(b []byte, s []string) ([]byte, bool) {
	for _, e := range s {
		b = appendString(b, e)
	}
	return b, true
}

// encResourceList keeps each quantity's spelling and format: equal
// quantities spelt differently are not shared, so none borrows another's.
func encResourceList(b []byte, rl corev1.ResourceList) ([]byte, bool) {
	for _, k := range slices.Sorted(maps.Keys(rl)) {
		q := rl[k]
		b = appendString(b, string(k))
		b = appendString(b, q.String())
		b = append(b, q.Format...)
		b = append(b, 0)
	}
	return b, true
}

// The kinds of shared values: a nil or empty value is returned as it is.

// shareProtoSlice shares a slice of API structs, keyed by their protobuf
// encoding.
func shareProtoSlice[T any, PT interface {
	*T
	protoMarshaler
}](l *Leaner, set *sharedSet[[]T], s []T, prepare func(*Leaner, []T) []T) []T {
	if len(s) == 0 {
		return s
	}
	return share(l, set, s, encProtoSlice[T, PT], prepare)
}

// shareProtoPtr is shareProtoSlice for a pointer to one value.
func shareProtoPtr[T any, PT interface {
	*T
	protoMarshaler
}](l *Leaner, set *sharedSet[PT], p PT, prepare func(*Leaner, PT) PT) PT {
	if p == nil {
		return p
	}
	return share(l, set, p, encProto[PT], prepare)
}

// sharePtr shares small pointers to scalars (*int64, *bool, …), which the
// API server sets on every Pod.
func sharePtr[T any](l *Leaner, set *sharedSet[*T], p *T, encode func([]byte, *T) ([]byte, bool)) *T {
	if p == nil {
		return p
	}
	return share(l, set, p, encode, keep)
}

func (l *Leaner) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return share(l, &l.stringMaps, m, encStringMap, (*Leaner).internStringMap)
}

func (l *Leaner) internStringMap(m map[string]string) map[string]string {
	if !l.cfg.Intern {
		return m
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[l.str(k)] = l.str(v)
	}
	return c
}

func (l *Leaner) stringSlice(s []string) []string {
	if len(s) == 0 {
		return s
	}
	return share(l, &l.stringSlices, s, encStrings, (*Leaner).strs)
}

func (l *Leaner) ownerReferences(refs []metav1.OwnerReference) []metav1.OwnerReference {
	return shareProtoSlice(l, &l.ownerRefs, refs, (*Leaner).internOwnerReferences)
}

func (l *Leaner) internOwnerReferences(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for i := range refs {
		r := &refs[i]
		r.APIVersion = l.str(r.APIVersion)
		r.Kind = l.str(r.Kind)
		// Many objects share an owner: its name and UID repeat.
		r.Name = l.str(r.Name)
		r.UID = types.UID(l.str(string(r.UID)))
	}
	return refs
}

func (l *Leaner) resourceList(rl corev1.ResourceList) corev1.ResourceList {
	if len(rl) == 0 || l.cfg.NoShare {
		// Keys are constants of the decoder's making; nothing to intern.
		return rl
	}
	return share(l, &l.resourceLists, rl, encResourceList, (*Leaner).internResourceList)
}

func (l *Leaner) internResourceList(rl corev1.ResourceList) corev1.ResourceList {
	c := make(corev1.ResourceList, len(rl))
	for k, q := range rl {
		c[strT(l, k)] = q
	}
	return c
}

func (l *Leaner) pod(p *corev1.Pod) {
	s := &p.Spec
	s.Volumes = shareProtoSlice(l, &l.volumes, s.Volumes, (*Leaner).internVolumes)
	s.InitContainers = shareProtoSlice(l, &l.containers, s.InitContainers, (*Leaner).internContainers)
	s.Containers = shareProtoSlice(l, &l.containers, s.Containers, (*Leaner).internContainers)
	s.EphemeralContainers = shareProtoSlice(l, &l.ephemeral, s.EphemeralContainers, keep)
	s.NodeSelector = l.stringMap(s.NodeSelector)
	s.Tolerations = shareProtoSlice(l, &l.tolerations, s.Tolerations, (*Leaner).internTolerations)
	s.ImagePullSecrets = shareProtoSlice(l, &l.pullSecrets, s.ImagePullSecrets, keep)
	s.TopologySpreadConstraints = shareProtoSlice(l, &l.spread, s.TopologySpreadConstraints, keep)
	s.ReadinessGates = shareProtoSlice(l, &l.readinessGates, s.ReadinessGates, keep)
	s.SecurityContext = shareProtoPtr(l, &l.podSecurity, s.SecurityContext, keep)
	s.Affinity = shareProtoPtr(l, &l.affinity, s.Affinity, keep)
	s.DNSConfig = shareProtoPtr(l, &l.dnsConfig, s.DNSConfig, keep)
	s.Overhead = l.resourceList(s.Overhead)
	s.TerminationGracePeriodSeconds = sharePtr(l, &l.int64s, s.TerminationGracePeriodSeconds, encInt)
	s.ActiveDeadlineSeconds = sharePtr(l, &l.int64s, s.ActiveDeadlineSeconds, encInt)
	s.Priority = sharePtr(l, &l.int32s, s.Priority, encInt)
	s.EnableServiceLinks = sharePtr(l, &l.bools, s.EnableServiceLinks, encBool)
	s.AutomountServiceAccountToken = sharePtr(l, &l.bools, s.AutomountServiceAccountToken, encBool)
	s.PreemptionPolicy = sharePtr(l, &l.preemptPolicies, s.PreemptionPolicy, encString)
	s.RestartPolicy = strT(l, s.RestartPolicy)
	s.DNSPolicy = strT(l, s.DNSPolicy)
	s.ServiceAccountName = l.str(s.ServiceAccountName)
	s.DeprecatedServiceAccount = l.str(s.DeprecatedServiceAccount)
	s.NodeName = l.str(s.NodeName)
	s.Subdomain = l.str(s.Subdomain)
	s.SchedulerName = l.str(s.SchedulerName)
	s.PriorityClassName = l.str(s.PriorityClassName)

	st := &p.Status
	st.Phase = strT(l, st.Phase)
	st.QOSClass = strT(l, st.QOSClass)
	st.Reason = l.str(st.Reason)
	st.Message = l.str(st.Message)
	st.NominatedNodeName = l.str(st.NominatedNodeName)
	st.HostIP = l.str(st.HostIP)
	st.HostIPs = shareProtoSlice(l, &l.hostIPs, st.HostIPs, (*Leaner).internHostIPs)
	// A decoder appends list items one by one, so a slice the cache keeps
	// may have up to twice the room it needs (5 conditions in room for 8):
	// fit gives it exactly its length.
	st.Conditions = fit(st.Conditions)
	st.PodIPs = fit(st.PodIPs)
	st.InitContainerStatuses = fit(st.InitContainerStatuses)
	st.ContainerStatuses = fit(st.ContainerStatuses)
	st.EphemeralContainerStatuses = fit(st.EphemeralContainerStatuses)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type = strT(l, c.Type)
		c.Status = strT(l, c.Status)
		c.Reason = l.str(c.Reason)
		c.Message = l.str(c.Message)
	}
	l.containerStatuses(st.InitContainerStatuses)
	l.containerStatuses(st.ContainerStatuses)
	l.containerStatuses(st.EphemeralContainerStatuses)
}

// fit returns s, or a copy of it without spare capacity when the spare
// room is worth an allocation: the cache keeps s for as long as it keeps
// the object.
func fit[S ~[]E, E any](s S) S {
	var e E
	if spare := (cap(s) - len(s)) * int(unsafe.Sizeof(e)); spare < 64 {
		return s
	}
	return slices.Clone(s)
}

func (l *Leaner) internTolerations(ts []corev1.Toleration) []corev1.Toleration {
	for i := range ts {
		t := &ts[i]
		t.Key = l.str(t.Key)
		t.Operator = strT(l, t.Operator)
		t.Value = l.str(t.Value)
		t.Effect = strT(l, t.Effect)
	}
	return ts
}

func (l *Leaner) internHostIPs(ips []corev1.HostIP) []corev1.HostIP {
	for i := range ips {
		ips[i].IP = l.str(ips[i].IP)
	}
	return ips
}

func (l *Leaner) containerStatuses(cs []corev1.ContainerStatus) {
	for i := range cs {
		c := &cs[i]
		c.Name = l.str(c.Name)
		c.Image = l.str(c.Image)
		c.ImageID = l.str(c.ImageID)
		c.AllocatedResources = l.resourceList(c.AllocatedResources)
		c.Started = sharePtr(l, &l.bools, c.Started, encBool)
		if c.State.Waiting != nil {
			c.State.Waiting.Reason = l.str(c.State.Waiting.Reason)
		}
		if c.State.Terminated != nil {
			c.State.Terminated.Reason = l.str(c.State.Terminated.Reason)
		}
		if c.LastTerminationState.Terminated != nil {
			c.LastTerminationState.Terminated.Reason = l.str(c.LastTerminationState.Terminated.Reason)
		}
	}
}

// internContainers interns the strings of containers about to be shared
// (or, with sharing off, of one object's containers).
func (l *Leaner) internContainers(cs []corev1.Container) []corev1.Container {
	for i := range cs {
		c := &cs[i]
		c.Name = l.str(c.Name)
		c.Image = l.str(c.Image)
		c.Command = l.strs(c.Command)
		c.Args = l.strs(c.Args)
		c.WorkingDir = l.str(c.WorkingDir)
		c.ImagePullPolicy = strT(l, c.ImagePullPolicy)
		c.TerminationMessagePath = l.str(c.TerminationMessagePath)
		c.TerminationMessagePolicy = strT(l, c.TerminationMessagePolicy)
		for j := range c.Ports {
			c.Ports[j].Name = l.str(c.Ports[j].Name)
			c.Ports[j].Protocol = strT(l, c.Ports[j].Protocol)
		}
		for j := range c.Env {
			e := &c.Env[j]
			e.Name = l.str(e.Name)
			e.Value = l.str(e.Value)
			if f := e.ValueFrom; f != nil {
				if f.FieldRef != nil {
					f.FieldRef.APIVersion = l.str(f.FieldRef.APIVersion)
					f.FieldRef.FieldPath = l.str(f.FieldRef.FieldPath)
				}
				if f.ResourceFieldRef != nil {
					f.ResourceFieldRef.ContainerName = l.str(f.ResourceFieldRef.ContainerName)
					f.ResourceFieldRef.Resource = l.str(f.ResourceFieldRef.Resource)
				}
				if f.ConfigMapKeyRef != nil {
					f.ConfigMapKeyRef.Name = l.str(f.ConfigMapKeyRef.Name)
					f.ConfigMapKeyRef.Key = l.str(f.ConfigMapKeyRef.Key)
				}
				if f.SecretKeyRef != nil {
					f.SecretKeyRef.Name = l.str(f.SecretKeyRef.Name)
					f.SecretKeyRef.Key = l.str(f.SecretKeyRef.Key)
				}
			}
		}
		for j := range c.VolumeMounts {
			m := &c.VolumeMounts[j]
			m.Name = l.str(m.Name)
			m.MountPath = l.str(m.MountPath)
			m.SubPath = l.str(m.SubPath)
		}
		c.Resources.Limits = l.resourceList(c.Resources.Limits)
		c.Resources.Requests = l.resourceList(c.Resources.Requests)
	}
	return cs
}

func (l *Leaner) internVolumes(vs []corev1.Volume) []corev1.Volume {
	for i := range vs {
		v := &vs[i]
		v.Name = l.str(v.Name)
		if v.ConfigMap != nil {
			v.ConfigMap.Name = l.str(v.ConfigMap.Name)
		}
		if v.Secret != nil {
			v.Secret.SecretName = l.str(v.Secret.SecretName)
		}
		if v.PersistentVolumeClaim != nil {
			v.PersistentVolumeClaim.ClaimName = l.str(v.PersistentVolumeClaim.ClaimName)
		}
	}
	return vs
}

// Compile-time checks that the shared types are protobuf-encodable.
var (
	_ protoMarshaler = (*resource.Quantity)(nil)
	_ protoMarshaler = (*corev1.Container)(nil)
	_ protoMarshaler = (*metav1.OwnerReference)(nil)
)
