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
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// benchPodList is a LIST response of 500 Pods as the API server encodes
// it.
func benchPodList(b *testing.B) []byte {
	list := &corev1.PodList{}
	for i := range 500 {
		list.Items = append(list.Items, *pbPod(fmt.Sprintf("web-%d", i)))
	}
	return encodeProtobuf(b, list)
}

// BenchmarkObjectDecoderStrip measures the wire parsing of a lean decode:
// a page of 500 Pods decoded without managedFields and the last-applied
// annotation.
func BenchmarkObjectDecoderStrip(b *testing.B) {
	data := benchPodList(b)
	d := NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true, LastApplied: true})
	buf := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, data)
		if _, err := d.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStripMeta measures the wire parsing alone: the metadata of
// every item of the page rewritten, without the generated Unmarshal.
func BenchmarkStripMeta(b *testing.B) {
	data := benchPodList(b)
	u, err := readUnknown(data)
	if err != nil {
		b.Fatal(err)
	}
	d := NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true, LastApplied: true})
	buf := make([]byte, len(u.raw))
	b.SetBytes(int64(len(u.raw)))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, u.raw)
		if _, err := d.stripMessage(typeOfPodList, buf); err != nil {
			b.Fatal(err)
		}
	}
}

var typeOfPodList = reflect.TypeFor[*corev1.PodList]()
