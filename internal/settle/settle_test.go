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

package settle

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	fakemetadata "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
)

// TestIsFake: client-go's typed, dynamic and metadata fakes are fakes; a
// real clientset, a wrapper that hides a fake behind kubernetes.Interface,
// and nil are not; and asking costs a real client no allocation (it is
// asked once per informer the factory builds).
func TestIsFake(t *testing.T) {
	scheme := runtime.NewScheme()
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		client any
		want   bool
	}{
		"typed fake":    {fake.NewClientset(), true},
		"dynamic fake":  {fakedynamic.NewSimpleDynamicClient(scheme), true},
		"metadata fake": {fakemetadata.NewSimpleMetadataClient(scheme), true},
		"real":          {clientset, false},
		"wrapped fake":  {struct{ kubernetes.Interface }{fake.NewClientset()}, false},
		"nil":           {nil, false},
	} {
		if got := IsFake(tc.client); got != tc.want {
			t.Errorf("%s: IsFake = %v, want %v", name, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { IsFake(clientset) }); n != 0 {
		t.Errorf("IsFake of a real client allocates %v times", n)
	}
}
