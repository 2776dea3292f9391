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
	"errors"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/listwatch"
)

// protobufWatchStream returns the protobuf watch stream of an ADDED event
// for each of pods (protobuf Pods), as the API server frames it.
func protobufWatchStream(tb testing.TB, pods [][]byte) []byte {
	tb.Helper()
	// Objects go in an envelope, events bare (protobuf.RawSerializer is
	// the stream serializer).
	s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	raw := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)
	var stream bytes.Buffer
	w := protobuf.LengthDelimitedFramer.NewFrameWriter(&stream)
	for _, p := range pods {
		pod := &corev1.Pod{}
		if err := pod.Unmarshal(p); err != nil {
			tb.Fatal(err)
		}
		pod.APIVersion, pod.Kind = "v1", "Pod"
		var obj bytes.Buffer
		if err := s.Encode(pod, &obj); err != nil {
			tb.Fatal(err)
		}
		event := &metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: obj.Bytes()}}
		var frame bytes.Buffer
		if err := raw.Encode(event, &frame); err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(frame.Bytes()); err != nil {
			tb.Fatal(err)
		}
	}
	return stream.Bytes()
}

// clientGoWatchDecoder is what client-go's REST client decodes a protobuf
// watch response with (rest.Request.Watch).
func clientGoWatchDecoder(tb testing.TB, body io.ReadCloser) watch.Decoder {
	tb.Helper()
	negotiator := runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), corev1.SchemeGroupVersion)
	objects, events, framer, err := negotiator.StreamDecoder(runtime.ContentTypeProtobuf, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), events), objects)
}

// BenchmarkProtobufWatch is the CPU cost per Pod of decoding a protobuf
// watch-list stream and making each Pod lean: with client-go's decoder
// (decode=client-go), with this library's, which reads the envelopes in
// place (decode=in-place), and with this library's, which also leaves
// managedFields out before they are built (decode=in-place-strip). Compare
// with benchstat:
//
//	go test -run '^$' -bench ProtobufWatch -count 6 . | tee /tmp/pbwatch.txt
//	benchstat -col /decode /tmp/pbwatch.txt
func BenchmarkProtobufWatch(b *testing.B) {
	stream := protobufWatchStream(b, benchPods(b, decodePage))
	for _, tc := range []struct {
		name string
		dec  func(io.ReadCloser) watch.Decoder
	}{
		{"decode=client-go", func(r io.ReadCloser) watch.Decoder { return clientGoWatchDecoder(b, r) }},
		{"decode=in-place", func(r io.ReadCloser) watch.Decoder {
			return listwatch.NewWatchDecoder(r, listwatch.NewObjectDecoder(scheme.Scheme, listwatch.Strip{}))
		}},
		{"decode=in-place-strip", func(r io.ReadCloser) watch.Decoder {
			return listwatch.NewWatchDecoder(r, listwatch.NewObjectDecoder(scheme.Scheme, listwatch.Strip{ManagedFields: true}))
		}},
	} {
		for _, transform := range []struct {
			name string
			fn   cache.TransformFunc
		}{{"none", nil}, {"lean", informers.TransformLean()}} {
			b.Run(tc.name+"/transform="+transform.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					d := tc.dec(io.NopCloser(bytes.NewReader(stream)))
					for n := 0; ; n++ {
						_, obj, err := d.Decode()
						if errors.Is(err, io.EOF) {
							if n != decodePage {
								b.Fatalf("decoded %d events, want %d", n, decodePage)
							}
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						if transform.fn != nil {
							if _, err := transform.fn(obj); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*decodePage), "ns/pod")
			})
		}
	}
}
