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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
)

// ExampleFactory_WaitForResourceVersion waits for one write by its
// resource version, the building block of the readyourwrites package's Writes.
func ExampleFactory_WaitForResourceVersion() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset()
	factory, err := informers.New(client, 0)
	if err != nil {
		panic(err)
	}
	defer factory.Shutdown()
	defer cancel()
	lister := factory.Core().V1().ConfigMaps().Lister()
	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		panic(err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prices", ResourceVersion: "42"}}
	written, err := client.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if err := factory.WaitForResourceVersion(ctx, configMaps, "shop", written.ResourceVersion); err != nil {
		panic(err)
	}
	cached, err := lister.ConfigMaps("shop").Get("prices")
	fmt.Println(cached.Name, cached.ResourceVersion, err)
	// Output:
	// prices 42 <nil>
}
