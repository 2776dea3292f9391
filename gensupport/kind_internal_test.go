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

package gensupport

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// TestResolverFactories: the factories a Kind resolves through complete
// the interface accessor.Kind takes: a bound one acts on the factory the
// resource is bound to, the fallback has nothing of its own to run or
// name and hands out what fallback returns.
func TestResolverFactories(t *testing.T) {
	name, err := cache.NewInformerName("gensupport-resolver-factories")
	if err != nil {
		t.Fatal(err)
	}
	factory, err := informers.New(fake.NewClientset(), 0, informers.WithInformerName(name))
	if err != nil {
		t.Fatal(err)
	}
	defer factory.Shutdown()
	b := &boundFactory{b: &Binding{factory: factory}}
	if b.InformerName() != name {
		t.Error("boundFactory.InformerName is not the factory's")
	}
	// Start before any informer exists: it must reach the factory without
	// running the informer below, whose list and watch are nil.
	stop := make(chan struct{})
	b.Start(stop)
	close(stop)
	secrets := b.InformerFor(&corev1.Secret{}, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(nil, &corev1.Secret{}, resync, cache.Indexers{})
	})
	if secrets != factory.InformerFor(&corev1.Secret{}, nil) {
		t.Error("boundFactory.InformerFor is not the factory's shared informer")
	}

	want := cache.NewSharedIndexInformer(nil, &corev1.Pod{}, 0, cache.Indexers{})
	fb := &fallbackFactory{informer: func() cache.SharedIndexInformer { return want }}
	fb.Start(nil)
	if fb.InformerName() != nil {
		t.Error("fallbackFactory names an informer")
	}
	if fb.InformerFor(&corev1.Pod{}, nil) != want {
		t.Error("fallbackFactory.InformerFor is not what fallback returns")
	}
}
