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
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// pbPod is a Pod as the API server stores one written by two managers
// and kubectl apply: managedFields, the last-applied annotation and
// other annotations, labels, a spec and a status.
func pbPod(name string) *corev1.Pod {
	fields := func(manager string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			Time: &metav1.Time{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "42",
			Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"Pod"}`,
				"example.com/kept":                 "yes",
			},
			ManagedFields:     []metav1.ManagedFieldsEntry{fields("kubectl"), fields("kubelet")},
			CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)),
		},
		Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "registry.example/web:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
}

// pbObjects are objects of every layout the decoder knows: objects, a
// list, a status, a bookmark; each with its GroupVersionKind.
func pbObjects() []runtime.Object {
	onlyLastApplied := pbPod("only-last-applied")
	onlyLastApplied.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: "{}"}
	bare := pbPod("bare")
	bare.Annotations, bare.ManagedFields, bare.Labels = nil, nil, nil
	node := &corev1.Node{ObjectMeta: pbPod("node").ObjectMeta}
	node.Namespace = ""
	cm := &corev1.ConfigMap{ObjectMeta: pbPod("cm").ObjectMeta, Data: map[string]string{"k": strings.Repeat("v", 300)}}
	return []runtime.Object{
		pbPod("web-0"),
		onlyLastApplied,
		bare,
		node,
		cm,
		&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "43", Continue: "token"}, Items: []corev1.Pod{*pbPod("a"), *bare, *pbPod("b")}},
		&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "44"}},
		&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "45", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}},
	}
}

// encodeProtobuf encodes obj as the API server does: the magic and a
// runtime.Unknown.
func encodeProtobuf(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	obj = obj.DeepCopyObject()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var b bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// clientGoObjects is the decoder of client-go's typed clients.
func clientGoObjects(t testing.TB) runtime.Decoder {
	t.Helper()
	d, err := runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion).Decoder(runtime.ContentTypeProtobuf, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stripReference is what decode-then-strip leaves: obj with strip applied
// to its metadata (and its items').
func stripReference(obj runtime.Object, strip Strip) runtime.Object {
	obj = obj.DeepCopyObject()
	one := func(m *metav1.ObjectMeta) {
		if strip.ManagedFields {
			m.ManagedFields = nil
		}
		if strip.LastApplied {
			delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
		}
	}
	switch o := obj.(type) {
	case *corev1.PodList:
		for i := range o.Items {
			one(&o.Items[i].ObjectMeta)
		}
	case metav1.ObjectMetaAccessor:
		one(o.GetObjectMeta().(*metav1.ObjectMeta))
	}
	return obj
}

var strips = []Strip{{}, {ManagedFields: true}, {LastApplied: true}, {ManagedFields: true, LastApplied: true}}

// Decoding in place, with or without stripping, gives what client-go's
// decoder gives followed by the same stripping, for every layout.
func TestObjectDecoderMatchesClientGo(t *testing.T) {
	reference := clientGoObjects(t)
	for _, obj := range pbObjects() {
		data := encodeProtobuf(t, obj)
		want, err := runtime.Decode(reference, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, strip := range strips {
			got, err := NewObjectDecoder(scheme.Scheme, strip).Decode(bytes.Clone(data))
			if err != nil {
				t.Fatalf("%T %+v: %v", obj, strip, err)
			}
			if w := stripReference(want, strip); !apiequality.Semantic.DeepEqual(got, w) {
				t.Errorf("%T with %+v:\n got %+v\nwant %+v", obj, strip, got, w)
			}
			if got.GetObjectKind().GroupVersionKind() != (schema.GroupVersionKind{}) {
				t.Errorf("%T: TypeMeta %v, want it empty as client-go leaves it", obj, got.GetObjectKind().GroupVersionKind())
			}
		}
	}
}

// Stripping leaves the decoded Pod without what it strips, and keeps
// everything else of its metadata.
func TestObjectDecoderStrips(t *testing.T) {
	got, err := NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true, LastApplied: true}).Decode(encodeProtobuf(t, pbPod("web")))
	if err != nil {
		t.Fatal(err)
	}
	pod := got.(*corev1.Pod)
	if pod.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", pod.ManagedFields)
	}
	if _, ok := pod.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("last-applied annotation kept")
	}
	if pod.Annotations["example.com/kept"] != "yes" || pod.Labels["app"] != "web" || pod.UID == "" || pod.Spec.NodeName != "node-1" {
		t.Errorf("stripped too much: %+v", pod)
	}
}

// pbWatchStream frames each event as the API server streams protobuf: a
// 4-byte length, then a bare metav1.WatchEvent whose object has the
// magic and envelope.
func pbWatchStream(t testing.TB, events ...watch.Event) []byte {
	t.Helper()
	raw := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)
	var stream bytes.Buffer
	w := protobuf.LengthDelimitedFramer.NewFrameWriter(&stream)
	for _, e := range events {
		var frame bytes.Buffer
		we := &metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: encodeProtobuf(t, e.Object)}}
		if err := raw.Encode(we, &frame); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(frame.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return stream.Bytes()
}

func pbEvents() []watch.Event {
	return []watch.Event{
		{Type: watch.Added, Object: pbPod("a")},
		{Type: watch.Modified, Object: pbPod("a")},
		{Type: watch.Bookmark, Object: pbObjects()[8]},
		{Type: watch.Deleted, Object: pbPod("a")},
		{Type: watch.Error, Object: pbObjects()[7]},
	}
}

// decodeAll reads every event of d until its error.
func decodeAll(d watch.Decoder) ([]watch.Event, error) {
	var out []watch.Event
	for {
		typ, obj, err := d.Decode()
		if err != nil {
			return out, err
		}
		out = append(out, watch.Event{Type: typ, Object: obj})
	}
}

func clientGoWatch(t testing.TB, mediaType string, body io.ReadCloser) watch.Decoder {
	t.Helper()
	objects, events, framer, err := runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion).StreamDecoder(mediaType, nil)
	if err != nil {
		t.Fatal(err)
	}
	return restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), events), objects)
}

// A protobuf watch stream decodes to client-go's events, stripped, and
// ends with io.EOF as client-go's does.
func TestWatchDecoderMatchesClientGo(t *testing.T) {
	stream := pbWatchStream(t, pbEvents()...)
	want, err := decodeAll(clientGoWatch(t, runtime.ContentTypeProtobuf, io.NopCloser(bytes.NewReader(stream))))
	if !errors.Is(err, io.EOF) {
		t.Fatalf("client-go: %v", err)
	}
	for _, strip := range strips {
		got, err := decodeAll(NewWatchDecoder(io.NopCloser(bytes.NewReader(bytes.Clone(stream))), NewObjectDecoder(scheme.Scheme, strip)))
		if !errors.Is(err, io.EOF) {
			t.Fatalf("%+v: ended with %v, want io.EOF", strip, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%+v: %d events, want %d", strip, len(got), len(want))
		}
		for i := range want {
			if got[i].Type != want[i].Type || !apiequality.Semantic.DeepEqual(got[i].Object, stripReference(want[i].Object, strip)) {
				t.Errorf("%+v: event %d: got %s %+v, want %s %+v", strip, i, got[i].Type, got[i].Object, want[i].Type, want[i].Object)
			}
		}
	}
}

// A large event gets a buffer of its own, and the next small one decodes
// as well.
func TestWatchDecoderLargeEvent(t *testing.T) {
	big := pbPod("big")
	big.Annotations["example.com/big"] = strings.Repeat("x", 2*keptBuffer)
	stream := pbWatchStream(t, watch.Event{Type: watch.Added, Object: pbPod("small")}, watch.Event{Type: watch.Added, Object: big}, watch.Event{Type: watch.Added, Object: pbPod("after")})
	got, err := decodeAll(NewWatchDecoder(io.NopCloser(bytes.NewReader(stream)), NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true})))
	if !errors.Is(err, io.EOF) || len(got) != 3 {
		t.Fatalf("%d events, then %v", len(got), err)
	}
	if n := len(got[1].Object.(*corev1.Pod).Annotations["example.com/big"]); n != 2*keptBuffer {
		t.Errorf("the large annotation has %d bytes, want %d", n, 2*keptBuffer)
	}
	if got[2].Object.(*corev1.Pod).Name != "after" {
		t.Errorf("the event after the large one is %v", got[2].Object)
	}
}

// A stream cut inside an event ends with io.ErrUnexpectedEOF, as
// client-go's; bad events are errors that say what is wrong.
func TestWatchDecoderErrors(t *testing.T) {
	stream := pbWatchStream(t, watch.Event{Type: watch.Added, Object: pbPod("a")})
	frame := func(payload []byte) []byte {
		return binary.BigEndian.AppendUint32(nil, uint32(len(payload))) //nolint:gosec // test payloads are small
	}
	event := func(typ string, object []byte) []byte {
		var b bytes.Buffer
		we := &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: object}}
		if err := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme).Encode(we, &b); err != nil {
			t.Fatal(err)
		}
		return append(frame(b.Bytes()), b.Bytes()...)
	}
	unknownKind := encodeProtobuf(t, pbPod("a"))
	unknownKind = bytes.Replace(unknownKind, []byte("Pod"), []byte("Pxd"), 1)
	for _, tc := range []struct {
		name   string
		stream []byte
		want   error
		msg    string
	}{
		{"empty stream", nil, io.EOF, ""},
		{"cut in the length", stream[:2], io.ErrUnexpectedEOF, ""},
		{"cut after the length", stream[:4], io.ErrUnexpectedEOF, ""},
		{"cut in the event", stream[:len(stream)-1], io.ErrUnexpectedEOF, ""},
		{"too long", binary.BigEndian.AppendUint32(nil, maxEvent+1), nil, "exceeds the limit"},
		{"invalid type", event("FOO", encodeProtobuf(t, pbPod("a"))), nil, "got invalid watch event type: FOO"},
		{"object not protobuf", event("ADDED", []byte(`{"kind":"Pod"}`)), nil, "unable to decode watch event: data is not a protobuf message"},
		{"object of an unknown kind", event("ADDED", unknownKind), nil, `no kind "Pxd" is registered`},
		{"truncated varint", append(frame([]byte{0x0a, 0x80}), 0x0a, 0x80), nil, "truncated"},
		{"unsupported wire type", append(frame([]byte{0x0b}), 0x0b), nil, "wire type 3"},
	} {
		_, _, err := NewWatchDecoder(io.NopCloser(bytes.NewReader(tc.stream)), NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true})).Decode()
		switch {
		case tc.want != nil && err != tc.want: //nolint:errorlint // watch.StreamWatcher compares these errors with ==
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		case tc.want == nil && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.msg)
		}
	}
}

// Bad metadata inside an object that is stripped is an error naming the
// kind, not a panic or an object built from part of it.
func TestObjectDecoderBadMetadata(t *testing.T) {
	// A Pod whose metadata (field 1) claims 127 bytes and has 3.
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: []byte{0x0a, 0x7f, 0x0a, 0x01, 'a'}}
	body, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	bad := append(bytes.Clone(protobufMagic), body...)
	if _, err := NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true}).Decode(bad); err == nil || !strings.Contains(err.Error(), "/v1, Kind=Pod") {
		t.Errorf("got %v, want an error naming /v1, Kind=Pod", err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"empty", nil, "not a protobuf message"},
		{"magic only", protobufMagic, "Object 'Kind' is missing"},
		{"content encoding", append(bytes.Clone(protobufMagic), 0x1a, 0x04, 'g', 'z', 'i', 'p'), `content encoding "gzip"`},
	} {
		if _, err := NewObjectDecoder(scheme.Scheme, Strip{}).Decode(tc.data); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.msg)
		}
	}
}

// Only types whose field 1 is their ObjectMeta, and lists of them, are
// stripped.
func TestLayoutOf(t *testing.T) {
	for _, tc := range []struct {
		obj  any
		want layout
	}{
		{&corev1.Pod{}, layoutObject},
		{&corev1.Node{}, layoutObject},
		{&corev1.PodList{}, layoutList},
		{&metav1.Status{}, layoutOther},
		{&metav1.WatchEvent{}, layoutOther},
		{corev1.Pod{}, layoutOther},
		{new(int), layoutOther},
	} {
		if got := layoutOf(reflect.TypeOf(tc.obj)); got != tc.want {
			t.Errorf("%T: %d, want %d", tc.obj, got, tc.want)
		}
	}
}

// FuzzObjectDecoder: no input makes the decoder panic, and whatever
// client-go decodes, the in-place decoder without stripping decodes to
// the same object.
func FuzzObjectDecoder(f *testing.F) {
	for _, obj := range pbObjects() {
		f.Add(encodeProtobuf(f, obj))
	}
	reference := clientGoObjects(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strip := range strips {
			_, _ = NewObjectDecoder(scheme.Scheme, strip).Decode(bytes.Clone(data))
		}
		want, err := runtime.Decode(reference, bytes.Clone(data))
		if err != nil {
			return
		}
		got, err := NewObjectDecoder(scheme.Scheme, Strip{}).Decode(bytes.Clone(data))
		if err != nil {
			// client-go's Unknown tolerates what no server sends (groups,
			// unknown wire types in the envelope, a content encoding,
			// which it ignores and decodes the raw bytes as they are);
			// ours names it.
			if !strings.Contains(err.Error(), "wire type") && !strings.Contains(err.Error(), "content encoding") {
				t.Fatalf("client-go decoded %T, ours failed: %v", want, err)
			}
			return
		}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})
}

// FuzzWatchDecoder: no stream makes the watch decoder panic or read past
// its input.
func FuzzWatchDecoder(f *testing.F) {
	f.Add(pbWatchStream(f, pbEvents()...))
	f.Fuzz(func(_ *testing.T, stream []byte) {
		d := NewWatchDecoder(io.NopCloser(bytes.NewReader(stream)), NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true, LastApplied: true}))
		for range 100 {
			if _, _, err := d.Decode(); err != nil {
				return
			}
		}
	})
}

// The sniffing decoder hands a JSON stream to client-go's JSON decoder
// and a protobuf one to the in-place decoder, and names a first byte it
// does not know.
func TestSniffingDecoder(t *testing.T) {
	var js bytes.Buffer
	enc := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	for _, e := range pbEvents() {
		obj := e.Object.DeepCopyObject()
		gvks, _, _ := scheme.Scheme.ObjectKinds(obj)
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		raw, err := runtime.Encode(enc, obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}, &js); err != nil {
			t.Fatal(err)
		}
	}
	want, err := decodeAll(clientGoWatch(t, runtime.ContentTypeJSON, io.NopCloser(bytes.NewReader(js.Bytes()))))
	if !errors.Is(err, io.EOF) || len(want) != len(pbEvents()) {
		t.Fatalf("client-go: %d events, %v", len(want), err)
	}
	strip := Strip{ManagedFields: true}
	for name, stream := range map[string][]byte{"json": js.Bytes(), "protobuf": pbWatchStream(t, pbEvents()...)} {
		d := &sniffingDecoder{body: io.NopCloser(bytes.NewReader(stream)), objects: NewObjectDecoder(scheme.Scheme, strip), gv: corev1.SchemeGroupVersion}
		got, err := decodeAll(d)
		if !errors.Is(err, io.EOF) || len(got) != len(want) {
			t.Fatalf("%s: %d events, then %v", name, len(got), err)
		}
		for i := range want {
			w := want[i].Object
			if name == "protobuf" {
				w = stripReference(w, strip)
			}
			if got[i].Type != want[i].Type || !apiequality.Semantic.DeepEqual(got[i].Object, w) {
				t.Errorf("%s: event %d: got %s %+v, want %s %+v", name, i, got[i].Type, got[i].Object, want[i].Type, w)
			}
		}
	}
	d := &sniffingDecoder{body: io.NopCloser(strings.NewReader("<html>")), objects: NewObjectDecoder(scheme.Scheme, strip)}
	if _, _, err := d.Decode(); err == nil || !strings.Contains(err.Error(), "starts with byte 0x3c") {
		t.Errorf("got %v, want an error naming the byte 0x3c", err)
	}
	d = &sniffingDecoder{body: io.NopCloser(strings.NewReader("")), objects: NewObjectDecoder(scheme.Scheme, strip)}
	if _, _, err := d.Decode(); err != io.EOF { //nolint:errorlint // watch.StreamWatcher compares io.EOF with ==
		t.Errorf("an empty response: %v, want io.EOF", err)
	}
}

// pbServer serves one namespace's Pods as the API server does, in
// protobuf when asked for it and in JSON otherwise, and records the
// Accept header of each request.
type pbServer struct {
	mu     sync.Mutex
	accept []string
	status int  // if set, every response is this error
	hangup bool // if set, the server closes every connection unanswered
	// list and stream are the protobuf responses.
	list, stream []byte
}

func newPBServer(t *testing.T) *pbServer {
	return &pbServer{list: encodeProtobuf(t, pbObjects()[5]), stream: pbWatchStream(t, pbEvents()[:4]...)}
}

func (s *pbServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.accept = append(s.accept, r.Header.Get("Accept"))
	status, hangup := s.status, s.hangup
	s.mu.Unlock()
	if hangup {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	proto := strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf)
	if status != 0 {
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":%d,"message":"pods is forbidden"}`, status)
		return
	}
	list := pbObjects()[5]
	events := pbEvents()[:4]
	switch {
	case proto && r.URL.Query().Get("watch") == "true":
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		_, _ = w.Write(s.stream)
	case proto:
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(s.list)
	case r.URL.Query().Get("watch") == "true":
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		enc := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
		for _, e := range events {
			obj := e.Object.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
			raw, _ := runtime.Encode(enc, obj)
			_ = enc.Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}, w)
		}
	default:
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		l := list.DeepCopyObject()
		l.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		_ = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{}).Encode(l, w)
	}
}

// Stripped makes the typed client's requests with the Accept header it
// is given (the client's own when none), decodes protobuf without what it
// strips and JSON as client-go does, and returns the server's errors as
// client-go's calls do.
func TestStrippedRequests(t *testing.T) {
	s := newPBServer(t)
	srv := httptest.NewServer(s)
	defer srv.Close()
	strip := Strip{ManagedFields: true, LastApplied: true}
	wantList := pbObjects()[5].(*corev1.PodList)
	for _, tc := range []struct {
		name, contentType, accept, wantAccept string
		stripped                              bool
	}{
		{"client default, protobuf", "", "", "application/vnd.kubernetes.protobuf,application/json", true},
		{"client JSON", "application/json", "", "application/json, */*", false},
		{"client JSON, asked for protobuf", "application/json", AcceptProtobuf, AcceptProtobuf, true},
	} {
		s.mu.Lock()
		s.accept = nil
		s.mu.Unlock()
		client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: tc.contentType}})
		r, ok := Of(client.CoreV1().Pods("ns")).Stripped("pods", tc.accept, strip)
		if !ok {
			t.Fatalf("%s: a generated client's calls were not replaced", tc.name)
		}
		obj, err := r.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list: %v", tc.name, err)
		}
		want := runtime.Object(wantList)
		if tc.stripped {
			want = stripReference(wantList, strip)
		}
		if !apiequality.Semantic.DeepEqual(obj, want) {
			t.Errorf("%s: list: got %+v, want %+v", tc.name, obj, want)
		}
		w, err := r.Watch(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: watch: %v", tc.name, err)
		}
		var got []watch.Event
		for e := range w.ResultChan() {
			got = append(got, e)
		}
		w.Stop()
		if len(got) != 4 {
			t.Fatalf("%s: %d events, want 4: %v", tc.name, len(got), got)
		}
		for i, e := range pbEvents()[:4] {
			want := e.Object
			if tc.stripped {
				want = stripReference(want, strip)
			}
			if got[i].Type != e.Type || !apiequality.Semantic.DeepEqual(got[i].Object, want) {
				t.Errorf("%s: event %d: got %s %+v, want %s %+v", tc.name, i, got[i].Type, got[i].Object, e.Type, want)
			}
		}
		s.mu.Lock()
		for _, a := range s.accept {
			if a != tc.wantAccept {
				t.Errorf("%s: a request asked for %q, want %q", tc.name, a, tc.wantAccept)
			}
		}
		s.mu.Unlock()
	}

	s.status = http.StatusForbidden
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	r, _ := Of(client.CoreV1().Pods("ns")).Stripped("pods", "", strip)
	if _, err := r.List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list: %v, want Forbidden", err)
	}
	if _, err := r.Watch(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("watch: %v, want Forbidden", err)
	}
	// A connection that ends before the response: the watch is an empty
	// one, as client-go's Watch returns, which the reflector restarts.
	s.mu.Lock()
	s.status, s.hangup = 0, true
	s.mu.Unlock()
	w, err := r.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("a watch without a response: %v, want an empty watch", err)
	}
	if _, open := <-w.ResultChan(); open {
		t.Error("the empty watch sent an event")
	}
	srv.Close()
	if _, err := r.Watch(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("a watch of a closed server succeeded")
	}
	if _, ok := Of(client.CoreV1().Pods("ns")).Stripped("pods", "", strip); !ok {
		t.Fatal("not replaced")
	}
	if _, ok := (Requests{}).Stripped("pods", "", strip); ok {
		t.Error("calls without a client were replaced")
	}
}

// Fields of every wire type that the stripping does not know are kept,
// not misread: a newer server's metadata field of any type survives into
// the generated Unmarshal, which skips it as client-go's does.
func TestStripKeepsUnknownFields(t *testing.T) {
	pod := pbPod("unknown")
	data := encodeProtobuf(t, pod)
	u, err := readUnknown(data)
	if err != nil {
		t.Fatal(err)
	}
	// The Pod's metadata (field 1) with unknown fields appended: field 98
	// fixed32, 99 fixed64, 100 varint, 101 bytes.
	f, err := nextField(u.raw, 0)
	if err != nil || f.num != fieldObjectMeta {
		t.Fatalf("the Pod does not start with its metadata: %+v, %v", f, err)
	}
	tag := func(num protowire.Number, wire protowire.Type) []byte { return protowire.AppendTag(nil, num, wire) }
	var extra []byte
	extra = append(append(extra, tag(98, protowire.Fixed32Type)...), 1, 2, 3, 4)
	extra = append(append(extra, tag(99, protowire.Fixed64Type)...), 0x86, 0, 1, 2, 3, 4, 5, 6)
	extra = append(append(extra, tag(100, protowire.VarintType)...), 0x96, 0x01)
	extra = append(append(extra, tag(101, protowire.BytesType)...), 2, 'h', 'i')
	meta := append(bytes.Clone(f.body), extra...)
	stripped, err := NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true, LastApplied: true}).stripMeta(bytes.Clone(meta))
	if err != nil || !bytes.HasSuffix(stripped, extra) || len(stripped) >= len(meta) {
		t.Fatalf("stripMeta kept %d of %d bytes (%v), want the unknown fields at its end and managedFields gone", len(stripped), len(meta), err)
	}
	msg := append([]byte{0x0a}, binary.AppendUvarint(nil, uint64(len(meta)))...)
	msg = append(msg, meta...)
	msg = append(msg, u.raw[f.end:]...)
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: msg}
	body, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	in := append(bytes.Clone(protobufMagic), body...)
	want, err := runtime.Decode(clientGoObjects(t), bytes.Clone(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true, LastApplied: true}).Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	if w := stripReference(want, Strip{ManagedFields: true, LastApplied: true}); !apiequality.Semantic.DeepEqual(got, w) {
		t.Errorf("got %+v\nwant %+v", got, w)
	}
}

// A varint longer than 64 bits is an error, not a wrap-around.
func TestVarintOverflow(t *testing.T) {
	if _, err := nextField(bytes.Repeat([]byte{0xff}, 11), 0); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("got %v, want an overflow", err)
	}
	if f, err := nextField([]byte{0x08, 0x96, 0x01}, 0); err != nil || f.num != 1 || f.wire != protowire.VarintType || f.end != 3 {
		t.Errorf("nextField(field 1 = varint 150) = %+v, %v", f, err)
	}
}
