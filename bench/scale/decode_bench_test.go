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
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
)

// decodePage is the page size of a paged LIST, as the reflector asks.
const decodePage = 500

// BenchmarkDecodeSync is the CPU cost per Pod of what a LIST page costs an
// informer on the client: decoding a page of 500 harness Pods from the
// wire, as client-go's REST client decodes it (the clientset's codecs, by
// the response's media type), optionally making each Pod lean, and adding
// them to an indexer with the namespace index. It compares JSON with
// protobuf, the encoding's share of the cost to sync, and protobuf-nomf
// measures the same page without managedFields: the most a decoder that
// skipped them could save. Compare with
// benchstat:
//
//	go test -run '^$' -bench DecodeSync -count 6 . | tee /tmp/decode.txt
//	benchstat -col /encoding /tmp/decode.txt
func BenchmarkDecodeSync(b *testing.B) {
	raw := benchPods(b, decodePage)
	// benchPods' managedFields repeat one JSON object, which protobuf
	// carries as bytes but JSON cannot: give them one valid object of
	// the same size.
	fields := `{"f:metadata":{"f:labels":{".":{}`
	for i := 0; len(fields) < 1400; i++ {
		fields += fmt.Sprintf(`,"f:app.kubernetes.io/name-%d":{}`, i)
	}
	fields += `}}}`
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "100"}}
	for _, r := range raw {
		var p corev1.Pod
		if err := p.Unmarshal(r); err != nil {
			b.Fatal(err)
		}
		for i := range p.ManagedFields {
			p.ManagedFields[i].FieldsV1 = metav1.NewFieldsV1(fields)
		}
		list.Items = append(list.Items, p)
	}
	// What a decoder that skips managedFields would decode at best: the
	// same page without them (encoding=protobuf-nomf).
	bare := list.DeepCopy()
	for i := range bare.Items {
		bare.Items[i].ManagedFields = nil
	}
	for _, cacheKind := range []string{"full", "lean"} {
		for _, encoding := range []string{"json", "protobuf", "protobuf-nomf"} {
			mediaType, page := "application/vnd.kubernetes.protobuf", list
			switch encoding {
			case "json":
				mediaType = "application/json"
			case "protobuf-nomf":
				page = bare
			}
			info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
			if !ok {
				b.Fatalf("no serializer for %s", mediaType)
			}
			var buf bytes.Buffer
			if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(page, &buf); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			decoder := scheme.Codecs.WithoutConversion().DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
			b.Run("cache="+cacheKind+"/encoding="+encoding, func(b *testing.B) {
				var transform cache.TransformFunc
				if cacheKind == "lean" {
					transform = informers.TransformLean()
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				cpu0 := processCPU()
				for b.Loop() {
					obj, _, err := decoder.Decode(data, nil, &corev1.PodList{})
					if err != nil {
						b.Fatal(err)
					}
					pods := obj.(*corev1.PodList)
					store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
					for i := range pods.Items {
						var o any = &pods.Items[i]
						if transform != nil {
							if o, err = transform(o); err != nil {
								b.Fatal(err)
							}
						}
						if err := store.Add(o); err != nil {
							b.Fatal(err)
						}
					}
				}
				// The process's CPU time (the garbage collector's included)
				// says more than the wall time on a shared machine.
				b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*decodePage)/1000, "cpu-µs/pod")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*decodePage)/1000, "µs/pod")
				b.ReportMetric(float64(len(data))/decodePage, "wireB/pod")
			})
		}
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
