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

package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	upstream "k8s.io/client-go/informers"
)

const (
	acceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"
	contentJSON    = "application/json"
	contentProto   = "application/vnd.kubernetes.protobuf"
)

// wireServer is a minimal API server for pods and configmaps in namespace
// "ns": a LIST answers one object, a watch one more, each encoded as the
// request's Accept header asks (protobuf if it names it first, else
// JSON). It refuses watch-list streams, so the reflector lists. It
// records the Accept header of every request, by resource and verb.
type wireServer struct {
	*httptest.Server
	mu     sync.Mutex
	accept map[string][]string // "pods list" → Accept headers
}

func newWireServer(t *testing.T) *wireServer {
	s := &wireServer{accept: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *wireServer) accepts(resource, verb string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accept[resource+" "+verb])
}

func (s *wireServer) serve(w http.ResponseWriter, r *http.Request) {
	resource := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	watching := r.URL.Query().Get("watch") == "true"
	verb := "list"
	if watching {
		verb = "watch"
	}
	s.mu.Lock()
	s.accept[resource+" "+verb] = append(s.accept[resource+" "+verb], r.Header.Get("Accept"))
	s.mu.Unlock()

	mediaType := contentJSON
	if strings.HasPrefix(r.Header.Get("Accept"), contentProto) {
		mediaType = contentProto
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	encoder := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	object := func(name, rv string) runtime.Object {
		meta := metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, UID: types.UID("uid-" + name),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}}}
		if resource == "configmaps" {
			return &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}}
		}
		return &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: "node-1"}}
	}
	switch {
	case !watching:
		var list runtime.Object
		switch o := object("a", "9").(type) {
		case *corev1.Pod:
			list = &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.Pod{*o}}
		case *corev1.ConfigMap:
			list = &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.ConfigMap{*o}}
		}
		w.Header().Set("Content-Type", mediaType)
		if err := encoder.Encode(list, w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	case r.URL.Query().Get("sendInitialEvents") == "true":
		http.Error(w, "watch-list streams are not served here", http.StatusBadRequest)
	default:
		raw, err := runtime.Encode(encoder, object("b", "11"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", mediaType+";stream=watch")
		w.WriteHeader(http.StatusOK)
		stream := streaming.NewEncoder(info.StreamSerializer.NewFrameWriter(w), info.StreamSerializer.Serializer)
		if err := stream.Encode(&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// config returns a client config for the server with the content types
// given ("" leaves them to client-go).
func (s *wireServer) config(contentType, accept string) *rest.Config {
	return &rest.Config{Host: s.URL, ContentConfig: rest.ContentConfig{ContentType: contentType, AcceptContentTypes: accept}}
}

// syncPods starts f, waits until its pod informer holds both pods (one
// listed, one watched), and stops it.
func syncPods(t *testing.T, f interface {
	Start(<-chan struct{})
	Shutdown()
}, informer cache.SharedIndexInformer) []*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithCancel(syncCtx(t))
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	waitFor(t, ctx, func() bool { return len(informer.GetStore().List()) == 2 })
	var pods []*corev1.Pod
	for _, o := range informer.GetStore().List() {
		pods = append(pods, o.(*corev1.Pod))
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

func onlyAccept(t *testing.T, s *wireServer, resource, want string) {
	t.Helper()
	for _, verb := range []string{"list", "watch"} {
		got := s.accepts(resource, verb)
		if len(got) == 0 {
			t.Errorf("no %s %s request", resource, verb)
		}
		for _, a := range got {
			if a != want {
				t.Errorf("%s %s asked for %q, want %q", resource, verb, a, want)
			}
		}
	}
}

// Without WithProtobuf a factory sends what client-go's factory sends over
// the same clientset, request by request: JSON for a clientset built for
// JSON, client-go's own protobuf preference for one that sets no content
// type.
func TestProtobufNotAskedSendsWhatClientGoSends(t *testing.T) {
	for _, tc := range []struct {
		name                string
		contentType, accept string
		want                string
	}{
		// client-go adds "*/*" when only ContentType is set.
		{"clientset for JSON", contentJSON, "", contentJSON + ", */*"},
		{"clientset for JSON, Accept set", contentJSON, contentJSON, contentJSON},
		{"clientset with client-go's defaults", "", "", acceptProtobuf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][]string
			for i, ours := range []bool{false, true} {
				s := newWireServer(t)
				client := kubernetes.NewForConfigOrDie(s.config(tc.contentType, tc.accept))
				if ours {
					f, err := informers.New(client, 0)
					if err != nil {
						t.Fatal(err)
					}
					syncPods(t, f, f.Core().V1().Pods().Informer())
				} else {
					f := upstream.NewSharedInformerFactory(client, 0)
					syncPods(t, f, f.Core().V1().Pods().Informer())
				}
				onlyAccept(t, s, "pods", tc.want)
				got[i] = append(s.accepts("pods", "list"), s.accepts("pods", "watch")...)
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Errorf("Accept headers: client-go's factory %q, ours %q", got[0], got[1])
			}
		})
	}
}

// WithProtobuf makes the typed informers of a clientset built for JSON ask
// for protobuf, and decode it: the cache holds the same objects as over
// JSON.
func TestWithProtobuf(t *testing.T) {
	caches := map[bool][]*corev1.Pod{}
	for _, proto := range []bool{false, true} {
		s := newWireServer(t)
		client := kubernetes.NewForConfigOrDie(s.config(contentJSON, contentJSON))
		var opts []informers.SharedInformerOption
		want := contentJSON
		if proto {
			opts, want = append(opts, informers.WithProtobuf()), acceptProtobuf
		}
		f, err := informers.New(client, 0, opts...)
		if err != nil {
			t.Fatal(err)
		}
		caches[proto] = syncPods(t, f, f.Core().V1().Pods().Informer())
		onlyAccept(t, s, "pods", want)
	}
	if len(caches[true]) != 2 || !reflect.DeepEqual(caches[false], caches[true]) {
		t.Errorf("caches differ:\nJSON     %v\nprotobuf %v", caches[false], caches[true])
	}
}

// ResourceOptions.Protobuf turns protobuf on for one resource only.
func TestResourceOptionsProtobuf(t *testing.T) {
	s := newWireServer(t)
	client := kubernetes.NewForConfigOrDie(s.config(contentJSON, contentJSON))
	f, err := informers.New(client, 0, informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("pods"), informers.ResourceOptions{Protobuf: true}))
	if err != nil {
		t.Fatal(err)
	}
	pods, cms := f.Core().V1().Pods().Informer(), f.Core().V1().ConfigMaps().Informer()
	ctx, cancel := context.WithCancel(syncCtx(t))
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	waitFor(t, ctx, func() bool { return len(pods.GetStore().List()) == 2 && len(cms.GetStore().List()) == 2 })
	onlyAccept(t, s, "pods", acceptProtobuf)
	onlyAccept(t, s, "configmaps", contentJSON)
}

// NewForConfig asks for protobuf with a JSON fallback when the config
// leaves the content type open, and keeps a content type the user set.
func TestNewForConfigProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name                string
		contentType, accept string
		want                string
	}{
		{"no content type", "", "", acceptProtobuf},
		{"JSON set", contentJSON, "", contentJSON + ", */*"},
		{"Accept set", "", contentJSON, contentJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newWireServer(t)
			cfg := s.config(tc.contentType, tc.accept)
			f, err := informers.NewForConfig(cfg, 0)
			if err != nil {
				t.Fatal(err)
			}
			syncPods(t, f, f.Core().V1().Pods().Informer())
			onlyAccept(t, s, "pods", tc.want)
			if cfg.ContentType != tc.contentType || cfg.AcceptContentTypes != tc.accept {
				t.Errorf("NewForConfig changed the caller's config to %q/%q", cfg.ContentType, cfg.AcceptContentTypes)
			}
		})
	}
}

// Protobuf on a resource that is not built in is an error that names the
// resource and the option; under the client-go compatible constructor the
// resource's informers do not run.
func TestProtobufBadInput(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	_, err := informers.New(fake.NewClientset(), 0, informers.WithResourceOptions(gadgets, informers.ResourceOptions{Protobuf: true}))
	if err == nil || !strings.Contains(err.Error(), gadgets.String()) || !strings.Contains(err.Error(), "Protobuf") {
		t.Fatalf("New: %v, want an error naming %v and Protobuf", err, gadgets)
	}
}

// A fake clientset encodes nothing: with WithProtobuf its informers sync
// from it as without.
func TestProtobufFakeClient(t *testing.T) {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}})
	f, err := informers.New(client, 0, informers.WithProtobuf())
	if err != nil {
		t.Fatal(err)
	}
	pods := syncPods(t, f, f.Core().V1().Pods().Informer())
	if pods[0].Name+" "+pods[1].Name != "a b" {
		t.Errorf("pods %s %s, want a b", pods[0].Name, pods[1].Name)
	}
}

// The lean transform (with LeanDropLastApplied) makes the same object of a Pod decoded from protobuf
// as of one decoded from JSON.
func TestLeanTransformOnProtobuf(t *testing.T) {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "5", UID: "u",
			Labels:      map[string]string{"app": "x"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"big":"json"}`, "keep": "me"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}},
		Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "img", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	lean := informers.TransformLean(informers.LeanDropLastApplied())
	decoded := map[string]*corev1.Pod{}
	for _, mediaType := range []string{contentJSON, contentProto} {
		info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), pod)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := runtime.Decode(scheme.Codecs.UniversalDecoder(corev1.SchemeGroupVersion), data)
		if err != nil {
			t.Fatalf("%s: %v", mediaType, err)
		}
		out, err := lean(obj)
		if err != nil {
			t.Fatalf("%s: %v", mediaType, err)
		}
		p := out.(*corev1.Pod)
		if len(p.ManagedFields) > 0 || p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" || p.Annotations["keep"] != "me" {
			t.Errorf("%s: lean pod keeps managedFields %v, annotations %v", mediaType, p.ManagedFields, p.Annotations)
		}
		decoded[mediaType] = p
	}
	if !reflect.DeepEqual(decoded[contentJSON], decoded[contentProto]) {
		t.Errorf("lean pods differ:\nJSON     %+v\nprotobuf %+v", decoded[contentJSON], decoded[contentProto])
	}
}
