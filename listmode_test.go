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

package informers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	informers "github.com/kubeinformers/informers"
)

// A transform set on a factory informer replaces the factory's, list pages
// included: the pages reach it whole, as client-go's SetTransform promises,
// rather than already stripped by the lean transform.
func TestSetTransformReplacesPageTransform(t *testing.T) {
	var objs []runtime.Object
	for i := range 20 {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("p%02d", i),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}},
		}})
	}
	f, err := informers.New(fake.NewClientset(objs...), 0, informers.WithLeanMemory(), informers.WithListMode(informers.ListModeList))
	if err != nil {
		t.Fatal(err)
	}
	inf := f.Core().V1().Pods().Informer()
	var whole, stripped atomic.Int32
	if err := inf.SetTransform(func(obj any) (any, error) {
		if pod, ok := obj.(*corev1.Pod); ok {
			if len(pod.ManagedFields) > 0 {
				whole.Add(1)
			} else {
				stripped.Add(1)
			}
		}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown() }()
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	if w, s := whole.Load(), stripped.Load(); w != int32(len(objs)) || s != 0 {
		t.Errorf("the transform set on the informer saw %d pods whole and %d stripped, want all %d whole", w, s, len(objs))
	}
	for _, obj := range inf.GetStore().List() {
		if len(obj.(*corev1.Pod).ManagedFields) == 0 {
			t.Fatalf("%s lost its managedFields: the factory's lean transform still ran", obj.(*corev1.Pod).Name)
		}
	}
}
