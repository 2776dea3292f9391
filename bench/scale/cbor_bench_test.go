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

package main

import (
	"bytes"
	"fmt"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The encodings of a custom resource LIST that BenchmarkDecodeUnstructured
// compares, by the media type the server answers in.
var unstructuredEncodings = []struct{ name, mediaType string }{
	{"json", runtime.ContentTypeJSON},
	{"cbor", runtime.ContentTypeCBOR},
}

// BenchmarkDecodeUnstructured is the CPU cost per custom resource of what a
// LIST page costs a dynamic informer on the client, in JSON and in CBOR: a
// page of 500 operator-style custom resources (about 3 KB of JSON each:
// labels, annotations, server-side-apply managedFields, an ownerReference,
// a nested spec, status conditions), encoded once as kube-apiserver encodes
// it, decoded per iteration by the very decoder client-go's dynamic client
// picks for the response's media type (dynamic.ConfigFor's serializers,
// with ClientsAllowCBOR on so that it has the CBOR one), and each item added
// to an indexer with the namespace index, as the reflector's Replace does.
//
//	go test -run '^$' -bench DecodeUnstructured -benchmem -count 6 . | tee /tmp/cbor.txt
//	benchstat -col /enc /tmp/cbor.txt
func BenchmarkDecodeUnstructured(b *testing.B) {
	pages := encodeUnstructuredPages(b, decodePage)
	decoders := dynamicDecoders(b)
	for _, enc := range unstructuredEncodings {
		data, decoder := pages[enc.mediaType], decoders[enc.mediaType]
		b.Run("enc="+enc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			cpu0 := processCPU()
			for b.Loop() {
				list, err := decodeUnstructuredList(decoder, data)
				if err != nil {
					b.Fatal(err)
				}
				store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
				for i := range list.Items {
					if err := store.Add(&list.Items[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			// The process's CPU time (the garbage collector's included)
			// says more than the wall time on a shared machine.
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*decodePage)/1000, "cpu-µs/obj")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*decodePage)/1000, "µs/obj")
			b.ReportMetric(float64(len(data))/decodePage, "wireB/obj")
		})
	}
}

// TestDecodeUnstructuredEquivalent checks that the benchmark's two pages
// carry the same objects: each decodes, by the dynamic client's decoder
// for its media type, to a list semantically equal to the one encoded, so
// that the benchmark compares two encodings of the same work.
func TestDecodeUnstructuredEquivalent(t *testing.T) {
	const n = 20
	want := unstructuredPage(n)
	pages := encodeUnstructuredPages(t, n)
	decoders := dynamicDecoders(t)
	var sizes []int
	for _, enc := range unstructuredEncodings {
		got, err := decodeUnstructuredList(decoders[enc.mediaType], pages[enc.mediaType])
		if err != nil {
			t.Fatalf("%s: %v", enc.name, err)
		}
		if len(got.Items) != n {
			t.Fatalf("%s: decoded %d items, want %d", enc.name, len(got.Items), n)
		}
		if !equality(got.Object, want.Object) {
			t.Errorf("%s: the list's own fields differ:\n got %v\nwant %v", enc.name, got.Object, want.Object)
		}
		for i := range got.Items {
			if !equality(got.Items[i].Object, want.Items[i].Object) {
				t.Errorf("%s: item %d differs:\n got %v\nwant %v", enc.name, i, got.Items[i].Object, want.Items[i].Object)
			}
		}
		sizes = append(sizes, len(pages[enc.mediaType])/n)
	}
	// The object is meant to be a typical operator's custom resource.
	if sizes[0] < 2000 || sizes[0] > 5000 {
		t.Errorf("a custom resource is %d bytes of JSON, want 2–5 KB", sizes[0])
	}
	if sizes[1] >= sizes[0] {
		t.Errorf("a custom resource is %d bytes of CBOR, not fewer than its %d of JSON", sizes[1], sizes[0])
	}
}

// equality compares unstructured content by value and by type: both
// decoders give int64 for integers and string for strings, so an int64
// that came back as a float64 is a difference.
func equality(a, b map[string]any) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// dynamicDecoders returns, by media type, the decoders that client-go's
// dynamic client uses for a response: the serializers of the negotiated
// serializer that dynamic.ConfigFor installs (its DecoderToVersion returns
// them as they are), built with ClientsAllowCBOR on, as under
// KUBE_FEATURE_ClientsAllowCBOR=true.
func dynamicDecoders(tb testing.TB) map[string]runtime.Decoder {
	tb.Helper()
	clientfeaturestesting.SetFeatureDuringTest(tb, clientfeatures.ClientsAllowCBOR, true)
	config := dynamic.ConfigFor(&rest.Config{})
	decoders := map[string]runtime.Decoder{}
	for _, enc := range unstructuredEncodings {
		info, ok := runtime.SerializerInfoForMediaType(config.NegotiatedSerializer.SupportedMediaTypes(), enc.mediaType)
		if !ok {
			tb.Fatalf("the dynamic client has no serializer for %s", enc.mediaType)
		}
		decoders[enc.mediaType] = config.NegotiatedSerializer.DecoderToVersion(info.Serializer, nil)
	}
	return decoders
}

// decodeUnstructuredList decodes a LIST response as the dynamic client's
// List does (rest.Result.Into an UnstructuredList).
func decodeUnstructuredList(decoder runtime.Decoder, data []byte) (*unstructured.UnstructuredList, error) {
	var list unstructured.UnstructuredList
	out, _, err := decoder.Decode(data, nil, &list)
	if err != nil {
		return nil, err
	}
	if out != &list {
		return nil, fmt.Errorf("decoded a %T, not the UnstructuredList asked for", out)
	}
	return &list, nil
}

// encodeUnstructuredPages encodes a page of n custom resources as
// kube-apiserver answers a LIST of a custom resource, by media type: JSON
// through the unstructured JSON scheme, CBOR through apimachinery's CBOR
// serializer with the nondeterministic (unsorted map keys) encoding that
// the server's response writer asks for when CBORServingAndStorage is on.
func encodeUnstructuredPages(tb testing.TB, n int) map[string][]byte {
	tb.Helper()
	list := unstructuredPage(n)
	encoders := map[string]runtime.Encoder{
		runtime.ContentTypeJSON: unstructured.UnstructuredJSONScheme,
		runtime.ContentTypeCBOR: runtime.UseNondeterministicEncoding(cbor.NewSerializer(unstructuredscheme.NewUnstructuredCreator(), unstructuredscheme.NewUnstructuredObjectTyper())),
	}
	pages := map[string][]byte{}
	for mediaType, encoder := range encoders {
		var buf bytes.Buffer
		if err := encoder.Encode(list, &buf); err != nil {
			tb.Fatalf("encoding the page as %s: %v", mediaType, err)
		}
		pages[mediaType] = buf.Bytes()
	}
	return pages
}

// unstructuredPage is a LIST page of n custom resources.
func unstructuredPage(n int) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": "databases.example.com/v1",
		"kind":       "PostgresClusterList",
		"metadata":   map[string]any{"resourceVersion": "81234", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6ODEyMzQsInN0YXJ0IjoicGctNDk5In0"},
	}}
	for i := range n {
		list.Items = append(list.Items, unstructured.Unstructured{Object: customResource(i)})
	}
	return list
}

// customResource is the i-th custom resource of a page: an operator's
// PostgresCluster as it reads after the user applied it with server-side
// apply and the operator wrote its status, about 3 KB of JSON.
func customResource(i int) map[string]any {
	name := fmt.Sprintf("pg-%03d", i)
	namespace := fmt.Sprintf("team-%d", i%7)
	uid := fmt.Sprintf("3f2b8c1e-9d4a-4b7e-8c21-%012d", i)
	spec := `{"f:spec":{"f:postgresVersion":{},"f:instances":{},"f:image":{},"f:resources":{"f:limits":{"f:cpu":{},"f:memory":{}},"f:requests":{"f:cpu":{},"f:memory":{}}},"f:storage":{"f:size":{},"f:storageClassName":{}},"f:backups":{"f:schedule":{},"f:retention":{}},"f:users":{},"f:parameters":{"f:max_connections":{},"f:shared_buffers":{},"f:work_mem":{}}},"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/part-of":{},"f:team":{},"f:tier":{}}}}`
	status := `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"BackupReady\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyInstances":{},"f:primary":{}}}`
	return map[string]any{
		"apiVersion": "databases.example.com/v1",
		"kind":       "PostgresCluster",
		"metadata": map[string]any{
			"name":              name,
			"namespace":         namespace,
			"uid":               uid,
			"resourceVersion":   fmt.Sprint(80000 + i),
			"generation":        int64(3 + i%4),
			"creationTimestamp": "2026-11-30T08:15:42Z",
			"labels": map[string]any{
				"app.kubernetes.io/name":     "postgres",
				"app.kubernetes.io/instance": name,
				"app.kubernetes.io/part-of":  "payments",
				"team":                       "payments",
				"tier":                       "database",
			},
			"annotations": map[string]any{
				"databases.example.com/backup-owner": "sre-payments@example.com",
				"databases.example.com/maintenance":  "sun:02:00-sun:03:00",
			},
			"finalizers": []any{"databases.example.com/finalizer"},
			"ownerReferences": []any{map[string]any{
				"apiVersion":         "platform.example.com/v1",
				"kind":               "Tenant",
				"name":               "payments",
				"uid":                "9c0d6a7e-1f3b-4e2a-9b5c-7d8e6f4a3b21",
				"controller":         true,
				"blockOwnerDeletion": true,
			}},
			"managedFields": []any{
				map[string]any{
					"manager":    "kubectl",
					"operation":  "Apply",
					"apiVersion": "databases.example.com/v1",
					"time":       "2026-11-30T08:15:42Z",
					"fieldsType": "FieldsV1",
					"fieldsV1":   mustJSON(spec),
				},
				map[string]any{
					"manager":     "postgres-operator",
					"operation":   "Update",
					"apiVersion":  "databases.example.com/v1",
					"time":        "2026-11-30T08:17:03Z",
					"fieldsType":  "FieldsV1",
					"fieldsV1":    mustJSON(status),
					"subresource": "status",
				},
			},
		},
		"spec": map[string]any{
			"postgresVersion": int64(16),
			"instances":       int64(3),
			"image":           "registry.example.com/postgres:16.4-r2",
			"resources": map[string]any{
				"limits":   map[string]any{"cpu": "2", "memory": "4Gi"},
				"requests": map[string]any{"cpu": "500m", "memory": "2Gi"},
			},
			"storage": map[string]any{"size": "50Gi", "storageClassName": "fast-ssd"},
			"backups": map[string]any{"schedule": "0 3 * * *", "retention": int64(14)},
			"users": []any{
				map[string]any{"name": "app", "databases": []any{"payments"}, "options": "LOGIN"},
				map[string]any{"name": "reporting", "databases": []any{"payments", "ledger"}, "options": "LOGIN NOSUPERUSER"},
			},
			"parameters": map[string]any{"max_connections": "200", "shared_buffers": "1GB", "work_mem": "16MB"},
		},
		"status": map[string]any{
			"observedGeneration": int64(3 + i%4),
			"readyInstances":     int64(3),
			"primary":            name + "-0",
			"conditions": []any{
				map[string]any{
					"type":               "Ready",
					"status":             "True",
					"reason":             "AllInstancesReady",
					"message":            "3 of 3 instances are ready",
					"lastTransitionTime": "2026-11-30T08:17:03Z",
				},
				map[string]any{
					"type":               "BackupReady",
					"status":             "True",
					"reason":             "BackupSucceeded",
					"message":            "the last backup finished at 2026-11-30T03:12:09Z",
					"lastTransitionTime": "2026-11-30T03:12:09Z",
				},
			},
		},
	}
}

// mustJSON decodes a JSON object into unstructured content, integers as
// int64, as the unstructured JSON scheme does.
func mustJSON(s string) map[string]any {
	var obj map[string]any
	if err := utiljson.Unmarshal([]byte(s), &obj); err != nil {
		panic(err)
	}
	return obj
}
