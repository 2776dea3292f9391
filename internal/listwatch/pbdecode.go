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
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/projection"
)

// This file decodes the API server's protobuf for a lean informer without
// building what its cache drops. client-go decodes a watch event through
// two envelopes (the metav1.WatchEvent, then the object's
// runtime.Unknown), copying the object's bytes at each, and
// then builds every metadata.managedFields entry, which the lean
// transform throws away. Here the envelopes are read in place and the
// dropped fields are cut out of the object's bytes before the generated
// Unmarshal sees them. The objects are otherwise what client-go's codec
// returns: the same Go types from the same Unmarshal, with an empty
// TypeMeta.

// Stripped returns the calls of r on resource that decode protobuf
// responses without what strip leaves out; JSON and CBOR responses are
// decoded as client-go decodes them. The requests are the typed client's
// own, through its REST client, with the Accept header accept ("": the
// one the client itself sends, protobuf unless its config sets a content
// type, so a client configured for JSON still gets JSON). ok is
// false when r does not come from a generated typed client with a REST
// client; r is then to be used as it is.
//
// The watch is made as client-go's rest.Request.Watch makes it (not rate
// limited; a connection that ends before the response makes an empty
// watch, which the reflector restarts), but through Stream, which hands
// over the body to be decoded here.
func (r Requests) Stripped(resource, accept string, strip Strip) (Requests, bool) {
	get, ok := r.rest(resource, accept)
	if !ok {
		return r, false
	}
	newList := r.newList
	objects := NewObjectDecoder(scheme.Scheme, strip)
	gv := r.source.GetClient().APIVersion()
	return Requests{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			res := get(&opts).Do(ctx)
			if err := res.Error(); err != nil {
				return nil, err
			}
			list := newList()
			raw, _ := res.Raw()
			if !bytes.HasPrefix(raw, protobufMagic) {
				// JSON or CBOR: client-go's decoder of the response's
				// content type.
				if err := res.Into(list); err != nil {
					return nil, err
				}
				return list, nil
			}
			obj, err := objects.Decode(raw)
			if err != nil {
				return nil, err
			}
			if status, ok := obj.(*metav1.Status); ok {
				if status.Status != metav1.StatusSuccess {
					return nil, apierrors.FromObject(status)
				}
				return list, nil
			}
			if reflect.TypeOf(obj) != reflect.TypeOf(list) {
				return nil, fmt.Errorf("listing %s: the server sent a %T, want a %T", resource, obj, list)
			}
			return obj, nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			body, err := get(&opts).Throttle(nil).Stream(ctx)
			if err != nil {
				if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
					return watch.NewEmptyWatch(), nil
				}
				return nil, err
			}
			return watch.NewStreamWatcherWithLogger(klog.FromContext(ctx),
				&sniffingDecoder{body: body, objects: objects, gv: gv},
				// What client-go reports a decoding error as.
				apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"),
			), nil
		},
	}, true
}

// sniffingDecoder decodes a watch response whose content type it learns
// from its first byte: a protobuf stream starts with a frame length, whose
// first byte is 0 (events are under 16 MiB), JSON with '{' or white space,
// CBOR with its self-described tag (0xd9).
type sniffingDecoder struct {
	body    io.ReadCloser
	objects *ObjectDecoder
	gv      schema.GroupVersion
	d       watch.Decoder
}

func (s *sniffingDecoder) Decode() (watch.EventType, runtime.Object, error) {
	if s.d == nil {
		br := bufio.NewReader(s.body)
		first, err := br.Peek(1)
		if err != nil {
			return "", nil, err
		}
		body := readCloser{Reader: br, Closer: s.body}
		var mediaType string
		switch first[0] {
		case 0:
			s.d = NewWatchDecoder(body, s.objects)
		case '{', ' ', '\t', '\r', '\n':
			mediaType = runtime.ContentTypeJSON
		case 0xd9:
			mediaType = runtime.ContentTypeCBOR
		default:
			return "", nil, fmt.Errorf("watch response of unknown content type: it starts with byte %#x", first[0])
		}
		if s.d == nil {
			codecs := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
			objectDecoder, eventDecoder, framer, err := runtime.NewClientNegotiator(codecs, s.gv).StreamDecoder(mediaType, nil)
			if err != nil {
				return "", nil, err
			}
			s.d = restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), eventDecoder), objectDecoder)
		}
	}
	return s.d.Decode()
}

// Close closes the body, which ends a Decode waiting on it.
func (s *sniffingDecoder) Close() { _ = s.body.Close() }

type readCloser struct {
	io.Reader
	io.Closer
}

// protobufMagic starts every protobuf body and embedded object of the API
// server (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Strip says what a decode leaves out of each object's metadata.
type Strip struct {
	// ManagedFields leaves out metadata.managedFields.
	ManagedFields bool
	// LastApplied leaves out the annotation
	// kubectl.kubernetes.io/last-applied-configuration.
	LastApplied bool
	// Project, if set, leaves out every field of the objects of its type
	// that it does not keep (internal/projection).
	Project *projection.Projection
}

// Any reports whether s leaves anything out.
func (s Strip) Any() bool { return s.ManagedFields || s.LastApplied || s.Project != nil }

// meta reports whether s leaves anything out of metadata itself.
func (s Strip) meta() bool { return s.ManagedFields || s.LastApplied }

// Protobuf field numbers this file reads (k8s.io/apimachinery's
// generated.proto files).
const (
	fieldUnknownTypeMeta = 1 // runtime.Unknown.typeMeta
	fieldUnknownRaw      = 2 // runtime.Unknown.raw
	fieldUnknownEncoding = 3 // runtime.Unknown.contentEncoding
	fieldTypeMetaVersion = 1 // runtime.TypeMeta.apiVersion
	fieldTypeMetaKind    = 2 // runtime.TypeMeta.kind
	fieldEventType       = 1 // metav1.WatchEvent.type
	fieldEventObject     = 2 // metav1.WatchEvent.object
	fieldRawExtRaw       = 1 // runtime.RawExtension.raw
	fieldObjectMeta      = 1 // every top-level type's metadata
	fieldListItems       = 2 // every list type's items
	fieldAnnotations     = 12
	fieldManagedFields   = 17
	fieldMapKey          = 1

	wireLen = protowire.BytesType
)

// field is one field of a message: its number, wire type, where it starts
// (its tag), where its tag ends, where it ends, and for a length-delimited
// field its contents.
type field struct {
	num                protowire.Number
	wire               protowire.Type
	start, tagEnd, end int
	body               []byte
}

var errTruncated = errors.New("truncated protobuf message")

// wireError is protowire's error of code n, with a truncation not
// io.ErrUnexpectedEOF, which a watch stream takes for the end of the
// stream inside an event.
func wireError(n int) error {
	if err := protowire.ParseError(n); err != io.ErrUnexpectedEOF { //nolint:errorlint // protowire returns it as it is
		return err
	}
	return errTruncated
}

// nextField reads the field at b[i:], with protowire's parsing of tags,
// varints and lengths. Groups, which no API server sends, are refused.
func nextField(b []byte, i int) (field, error) {
	f := field{start: i}
	num, typ, n := protowire.ConsumeTag(b[i:])
	if n < 0 {
		return f, wireError(n)
	}
	if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
		return f, fmt.Errorf("protobuf wire type %d is not supported", typ)
	}
	f.num, f.wire, f.tagEnd = num, typ, i+n
	m := protowire.ConsumeFieldValue(num, typ, b[f.tagEnd:])
	if m < 0 {
		return f, wireError(m)
	}
	f.end = f.tagEnd + m
	if typ == protowire.BytesType {
		f.body, _ = protowire.ConsumeBytes(b[f.tagEnd:f.end])
	}
	return f, nil
}

// unknown is a runtime.Unknown read in place: raw is a sub-slice of the
// message, not a copy.
type unknown struct {
	apiVersion, kind []byte
	raw              []byte
	encoding         []byte
}

// readUnknown reads a protobuf body or embedded object: the magic, then a
// runtime.Unknown.
func readUnknown(data []byte) (unknown, error) {
	var u unknown
	if !bytes.HasPrefix(data, protobufMagic) {
		return u, fmt.Errorf("data is not a protobuf message: want the prefix %v", protobufMagic)
	}
	b := data[len(protobufMagic):]
	for i := 0; i < len(b); {
		f, err := nextField(b, i)
		if err != nil {
			return u, fmt.Errorf("runtime.Unknown: %w", err)
		}
		i = f.end
		if f.wire != wireLen {
			continue
		}
		switch f.num {
		case fieldUnknownTypeMeta:
			for j := 0; j < len(f.body); {
				g, err := nextField(f.body, j)
				if err != nil {
					return u, fmt.Errorf("runtime.TypeMeta: %w", err)
				}
				j = g.end
				switch {
				case g.wire == wireLen && g.num == fieldTypeMetaVersion:
					u.apiVersion = g.body
				case g.wire == wireLen && g.num == fieldTypeMetaKind:
					u.kind = g.body
				}
			}
		case fieldUnknownRaw:
			u.raw = f.body
		case fieldUnknownEncoding:
			u.encoding = f.body
		}
	}
	return u, nil
}

// ObjectDecoder decodes the protobuf objects of one scheme, leaving out
// what its Strip says. It is safe for concurrent use.
type ObjectDecoder struct {
	scheme *runtime.Scheme
	strip  Strip
	// metaFirst caches, per Go type, whether its protobuf field 1 is its
	// metav1.ObjectMeta (or a list's metav1.ListMeta with items in field
	// 2), which is what stripping relies on, and whether its objects are
	// of the projection's type.
	metaFirst sync.Map // reflect.Type -> typeInfo
}

// typeInfo is what stripping knows of a Go type.
type typeInfo struct {
	layout    layout
	projected bool
}

// layout is how stripping finds the metadata of a type's message.
type layout int

const (
	layoutOther layout = iota // nothing is stripped
	layoutObject
	layoutList
)

// NewObjectDecoder returns a decoder of scheme's types.
func NewObjectDecoder(scheme *runtime.Scheme, strip Strip) *ObjectDecoder {
	return &ObjectDecoder{scheme: scheme, strip: strip}
}

// Decode decodes data, a protobuf object with its magic and envelope
// (what a LIST response or a watch event's object holds). The bytes of
// data may be changed: callers pass a buffer they no longer need.
func (d *ObjectDecoder) Decode(data []byte) (runtime.Object, error) {
	return d.decode(data, d.strip.Any())
}

// decode decodes data, stripped if strip is set.
func (d *ObjectDecoder) decode(data []byte, strip bool) (runtime.Object, error) {
	u, err := readUnknown(data)
	if err != nil {
		return nil, err
	}
	if len(u.encoding) > 0 {
		return nil, fmt.Errorf("protobuf object with content encoding %q is not supported", u.encoding)
	}
	gv, err := schema.ParseGroupVersion(string(u.apiVersion))
	if err != nil {
		return nil, err
	}
	gvk := gv.WithKind(string(u.kind))
	if gvk.Kind == "" {
		return nil, runtime.NewMissingKindErr(fmt.Sprintf("protobuf object of apiVersion %q", u.apiVersion))
	}
	if gvk.Version == "" {
		return nil, runtime.NewMissingVersionErr(fmt.Sprintf("protobuf object of kind %q", u.kind))
	}
	obj, err := d.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	m, ok := obj.(interface {
		Reset()
		Unmarshal([]byte) error
	})
	if !ok {
		return nil, fmt.Errorf("%T cannot be decoded from protobuf", obj)
	}
	raw := u.raw
	if strip {
		if raw, err = d.stripMessage(reflect.TypeOf(obj), raw); err != nil {
			return nil, fmt.Errorf("%s: %w", gvk, err)
		}
	}
	m.Reset()
	if err := m.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	// As client-go's typed clients decode (runtime.WithoutVersionDecoder):
	// a typed object's TypeMeta is left empty.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj, nil
}

// stripped counts the objects whose metadata a decode stripped (each item
// of a list, each object of a watch event), in this process.
var stripped atomic.Int64

// StrippedObjects returns how many objects this process has decoded
// without what a lean cache drops: what the e2e suite and the scale
// harness check to know that the path ran.
func StrippedObjects() int64 { return stripped.Load() }

func (d *ObjectDecoder) typeInfo(t reflect.Type) typeInfo {
	if l, ok := d.metaFirst.Load(t); ok {
		return l.(typeInfo)
	}
	l := typeInfo{layout: layoutOf(t)}
	if p := d.strip.Project; p != nil {
		switch l.layout {
		case layoutObject:
			l.projected = t == p.Type()
		case layoutList:
			items, _ := t.Elem().FieldByName("Items")
			l.projected = reflect.PointerTo(items.Type.Elem()) == p.Type()
		}
	}
	d.metaFirst.Store(t, l)
	return l
}

// layoutOf reads t's struct tags: an object has its ObjectMeta as
// protobuf field 1; a list has its ListMeta as field 1 and its items, a
// slice of such objects, as field 2.
func layoutOf(t reflect.Type) layout {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return layoutOther
	}
	t = t.Elem()
	var meta, items reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch num := projection.ProtobufNumber(f.Tag.Get("protobuf")); num {
		case fieldObjectMeta:
			meta = f.Type
		case fieldListItems:
			items = f.Type
		}
	}
	switch {
	case meta == reflect.TypeFor[metav1.ObjectMeta]():
		return layoutObject
	case meta == reflect.TypeFor[metav1.ListMeta]() && items != nil && items.Kind() == reflect.Slice &&
		layoutOf(reflect.PointerTo(items.Elem())) == layoutObject:
		return layoutList
	}
	return layoutOther
}

// stripMessage cuts what d leaves out of the message b of type t, in
// place, and returns the shortened message.
func (d *ObjectDecoder) stripMessage(t reflect.Type, b []byte) ([]byte, error) {
	info := d.typeInfo(t)
	object := func(b []byte) ([]byte, error) {
		var err error
		if info.projected {
			if b, err = d.strip.Project.Cut(b); err != nil {
				return nil, err
			}
		}
		if d.strip.meta() {
			if b, err = rewrite(b, fieldObjectMeta, d.stripMeta); err != nil {
				return nil, err
			}
		}
		stripped.Add(1)
		return b, nil
	}
	switch info.layout {
	case layoutObject:
		return object(b)
	case layoutList:
		return rewrite(b, fieldListItems, object)
	}
	return b, nil
}

// lastApplied is the key of kubectl's last-applied annotation.
var lastApplied = []byte(corev1.LastAppliedConfigAnnotation)

// stripMeta cuts managedFields and the last-applied annotation out of an
// ObjectMeta message, in place.
func (d *ObjectDecoder) stripMeta(b []byte) ([]byte, error) {
	w := 0
	for i := 0; i < len(b); {
		f, err := nextField(b, i)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		i = f.end
		if f.wire == wireLen {
			switch {
			case f.num == fieldManagedFields && d.strip.ManagedFields:
				continue
			case f.num == fieldAnnotations && d.strip.LastApplied:
				key, err := mapKey(f.body)
				if err != nil {
					return nil, fmt.Errorf("metadata.annotations: %w", err)
				}
				if bytes.Equal(key, lastApplied) {
					continue
				}
			}
		}
		w = keep(b, w, f)
	}
	return b[:w], nil
}

// keep moves field f of b to b[w:], where w <= f.start, and returns the
// index after it.
func keep(b []byte, w int, f field) int {
	if w == f.start {
		return f.end
	}
	return w + copy(b[w:], b[f.start:f.end])
}

// mapKey returns the key of a map entry message.
func mapKey(b []byte) ([]byte, error) {
	for i := 0; i < len(b); {
		f, err := nextField(b, i)
		if err != nil {
			return nil, err
		}
		i = f.end
		if f.wire == wireLen && f.num == fieldMapKey {
			return f.body, nil
		}
	}
	return nil, nil
}

// rewrite applies fn to the body of every length-delimited field num of
// the message b, in place, and returns the message with each such field's
// length rewritten. fn returns a prefix of the body it is given, so the
// message only shrinks.
func rewrite(b []byte, num protowire.Number, fn func([]byte) ([]byte, error)) ([]byte, error) {
	w := 0
	for i := 0; i < len(b); {
		f, err := nextField(b, i)
		if err != nil {
			return nil, err
		}
		i = f.end
		if f.wire != wireLen || f.num != num {
			w = keep(b, w, f)
			continue
		}
		body, err := fn(f.body)
		if err != nil {
			return nil, err
		}
		// The tag, then the new length, then the body. The new length
		// takes no more bytes than the old, and the body starts after the
		// old length, so nothing is overwritten before it is read.
		w += copy(b[w:], b[f.start:f.tagEnd])
		w = len(protowire.AppendVarint(b[:w], uint64(len(body))))
		w += copy(b[w:], body)
	}
	return b[:w], nil
}

// maxEvent bounds one watch event, as client-go's streaming decoder does.
const maxEvent = 16 << 20

// keptBuffer is the largest frame buffer a WatchDecoder keeps between
// events; a larger event gets a buffer of its own.
const keptBuffer = 64 << 10

// WatchDecoder decodes a protobuf watch stream: each event is a 4-byte
// big-endian length, then a metav1.WatchEvent. It
// implements watch.Decoder; its errors are those watch.StreamWatcher
// expects (io.EOF at the end of the stream, io.ErrUnexpectedEOF inside an
// event, the body's own read errors otherwise).
type WatchDecoder struct {
	body    io.ReadCloser
	objects *ObjectDecoder
	head    [4]byte
	buf     []byte
}

// NewWatchDecoder returns a decoder of the protobuf watch stream body.
func NewWatchDecoder(body io.ReadCloser, objects *ObjectDecoder) *WatchDecoder {
	return &WatchDecoder{body: body, objects: objects}
}

// Decode reads the next event.
func (d *WatchDecoder) Decode() (watch.EventType, runtime.Object, error) {
	if _, err := io.ReadFull(d.body, d.head[:]); err != nil {
		return "", nil, err
	}
	n := binary.BigEndian.Uint32(d.head[:])
	if n > maxEvent {
		return "", nil, fmt.Errorf("watch event of %d bytes exceeds the limit of %d", n, maxEvent)
	}
	frame := d.buf
	if int(n) > keptBuffer {
		frame = make([]byte, n)
	} else if cap(frame) < int(n) {
		d.buf = make([]byte, keptBuffer)
		frame = d.buf
	}
	frame = frame[:n]
	if _, err := io.ReadFull(d.body, frame); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", nil, err
	}
	// A frame is a bare metav1.WatchEvent (the stream's serializer is
	// protobuf.RawSerializer); its object has the magic and envelope.
	var typ, object []byte
	for i := 0; i < len(frame); {
		f, err := nextField(frame, i)
		if err != nil {
			return "", nil, fmt.Errorf("metav1.WatchEvent: %w", err)
		}
		i = f.end
		switch {
		case f.wire == wireLen && f.num == fieldEventType:
			typ = f.body
		case f.wire == wireLen && f.num == fieldEventObject:
			for j := 0; j < len(f.body); {
				g, err := nextField(f.body, j)
				if err != nil {
					return "", nil, fmt.Errorf("metav1.WatchEvent.object: %w", err)
				}
				j = g.end
				if g.wire == wireLen && g.num == fieldRawExtRaw {
					object = g.body
				}
			}
		}
	}
	var t watch.EventType
	// A switch on string(typ) compares without allocating a string.
	switch string(typ) {
	case string(watch.Added):
		t = watch.Added
	case string(watch.Modified):
		t = watch.Modified
	case string(watch.Deleted):
		t = watch.Deleted
	case string(watch.Bookmark):
		t = watch.Bookmark
	case string(watch.Error):
		t = watch.Error
	default:
		return "", nil, fmt.Errorf("got invalid watch event type: %s", typ)
	}
	// A bookmark is decoded whole: its annotations say whether it ends
	// the initial events of a watch-list stream, and it is never cached.
	obj, err := d.objects.decode(object, t != watch.Bookmark && d.objects.strip.Any())
	if err != nil {
		return "", nil, fmt.Errorf("unable to decode watch event: %w", err)
	}
	return t, obj, nil
}

// Close closes the stream; a Decode waiting on it returns.
func (d *WatchDecoder) Close() { _ = d.body.Close() }

var _ watch.Decoder = (*WatchDecoder)(nil)
