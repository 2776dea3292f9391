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
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestCRLine(t *testing.T) {
	sum := func(v string, heap, cpu, get, list float64) *summary {
		return &summary{Variant: v, N: 10, Runs: []result{{}}, HeapPerObj: stat{Median: heap}, CPU: stat{Median: cpu}, Get: stat{Median: get}, List: stat{Median: list}}
	}
	r := map[string]*summary{crVariant: sum(crVariant, 12000, 4, 10000, 500000)}
	if crMeasured(r) {
		t.Fatal("crMeasured without a crcache run = true")
	}
	r[crcacheVariant] = sum(crcacheVariant, 4800, 3, 5000, 400000)
	r[crcacheKeepVariant] = sum(crcacheKeepVariant, 2400, 1.5, 2000, 100000)
	if !crMeasured(r) {
		t.Fatal("crMeasured with every run = false")
	}
	rep := &runReport{Counts: []int{10}, Repeats: 1, Variants: []string{crVariant, crcacheVariant, crcacheKeepVariant}, Results: map[int]map[string]*summary{10: r}}
	want := "bench-scale-cr N=10: heap crcache/cr=0.40 crcache-keep/cr=0.20; cpu crcache/cr=0.75 crcache-keep/cr=0.38; get crcache/cr=0.50; list crcache/cr=0.80"
	if got := crLine(rep, 10); got != want {
		t.Errorf("crLine =\n %s\nwant\n %s", got, want)
	}
	if lines := summaryLines(rep); !strings.Contains(lines, want+"\n") {
		t.Errorf("summaryLines lacks the cr line:\n%s", lines)
	}
	if table := crTableText(rep, 10); !strings.Contains(table, "| crcache-keep | 2.40 KB ±0% | 0.20× | 1.50 s ±0% | 0.38× | 2000 ns ±0% | 0.20× | 100.0 µs ±0% | 0.20× |") {
		t.Errorf("crTableText lacks crcache-keep's row:\n%s", table)
	}
	if table := crTableText(&runReport{Counts: []int{10}, Variants: []string{"ours"}, Results: rep.Results}, 10); table != "" {
		t.Errorf("crTableText without cr runs = %q, want empty", table)
	}
}

func TestPodsInNamespace(t *testing.T) {
	for _, n := range []int{1, 49, 50, 300, 499, 500, 501, 30000, 30017} {
		sum := 0
		for ns := range namespaces {
			got := podsInNamespace(n, ns)
			want := 0
			for i := range n {
				if podAt(i).ns == fmt.Sprintf("bench-%d", ns) {
					want++
				}
			}
			if got != want {
				t.Errorf("podsInNamespace(%d, %d) = %d, want %d", n, ns, got, want)
			}
			sum += got
		}
		if sum != n {
			t.Errorf("N=%d: the namespaces hold %d Pods", n, sum)
		}
	}
}

// fakeReader serves the n Pods the harness loads from memory, as a cache
// would: what measureReads asks for and checks must match load.go.
type fakeReader struct {
	pods []corev1.Pod
	gets int
}

func newFakeReader(n int) *fakeReader {
	r := &fakeReader{}
	for i := range n {
		p := podAt(i)
		r.pods = append(r.pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: p.ns, Name: p.name,
			Labels: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%03d", i/podsPerRS)},
		}})
	}
	return r
}

func (r *fakeReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.gets++
	for i := range r.pods {
		if r.pods[i].Namespace == key.Namespace && r.pods[i].Name == key.Name {
			*obj.(*corev1.Pod) = *r.pods[i].DeepCopy()
			return nil
		}
	}
	return errors.New("not found")
}

func (r *fakeReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	var items []corev1.Pod
	for _, p := range r.pods {
		if p.Namespace == o.Namespace && o.LabelSelector.Matches(labels.Set(p.Labels)) {
			items = append(items, *p.DeepCopy())
		}
	}
	list.(*corev1.PodList).Items = items
	return nil
}

var _ client.Reader = &fakeReader{}

func TestMeasureReads(t *testing.T) {
	for _, n := range []int{300, 1234} {
		r := newFakeReader(n)
		rd, err := measureReads(context.Background(), r, n)
		if err != nil {
			t.Fatalf("N=%d: %v", n, err)
		}
		if r.gets != getBatches*getsPerBatch || rd.getNs <= 0 || rd.listNs <= 0 {
			t.Errorf("N=%d: %d Gets, %v ns per Get, %v ns per List", n, r.gets, rd.getNs, rd.listNs)
		}
		if rd.listItems <= 0 || rd.listItems > podsPerRS {
			t.Errorf("N=%d: %v Pods per List, want 1..%d", n, rd.listItems, podsPerRS)
		}
	}
	// A reader that returns the wrong Pods fails the measurement.
	r := newFakeReader(300)
	r.pods[0].Labels = nil
	if _, err := measureReads(context.Background(), r, 300); err == nil || !strings.Contains(err.Error(), "want 50") {
		t.Errorf("a List short of a Pod: err = %v", err)
	}
}
