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

// Package clientgo lets code that takes client-go's factory type share a
// [informers.SharedInformerFactory] of this module.
//
// Libraries such as k8s.io/cloud-provider take
// [clientgoinformers.SharedInformerFactory]. Passing them [Adapt] of your
// factory, instead of a second client-go factory, keeps one cache and one
// watch per resource for the whole program.
//
// The root package does not import k8s.io/client-go/informers; only
// programs that import this package link it in.
package clientgo

import (
	"context"
	"reflect"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internalinterfaces"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoinformers "k8s.io/client-go/informers"
	clientgointernalinterfaces "k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/tools/cache"
)

// Adapt returns f as client-go's [clientgoinformers.SharedInformerFactory].
//
// The result is a view, not a copy: every accessor returns the informer f
// holds for that resource, building it in f (with f's namespace, resync,
// transform and informer names) if f has none yet, so
//
//	Adapt(f).Core().V1().Pods().Informer() == f.Core().V1().Pods().Informer()
//
// whichever side asks first. Start, StartWithContext, Shutdown,
// WaitForCacheSync, WaitForCacheSyncWithContext, ForResource, InformerFor
// and InformerName act on f.
//
// Each call builds a new view of a few kilobytes; its accessors allocate
// nothing. Adapt once and pass the view around. f must not be nil.
func Adapt(f informers.SharedInformerFactory) clientgoinformers.SharedInformerFactory {
	if f == nil {
		// A nil view would only fail later, far from the mistake.
		panic("clientgo.Adapt: nil SharedInformerFactory")
	}
	a := &adapter{f: f}
	a.init(f) // groups.init: points every kind accessor at f
	return a
}

// adapter is the view Adapt returns. The group accessors (Core, Apps, …)
// come from the generated groups tree it embeds.
type adapter struct {
	f informers.SharedInformerFactory
	groups
}

var _ clientgoinformers.SharedInformerFactory = (*adapter)(nil)

// Start runs the factory's informers that are not running yet.
func (a *adapter) Start(stopCh <-chan struct{}) { a.f.Start(stopCh) }

// StartWithContext runs the factory's informers that are not running yet.
func (a *adapter) StartWithContext(ctx context.Context) { a.f.StartWithContext(ctx) }

// Shutdown shuts the factory down and waits for its informers to end.
func (a *adapter) Shutdown() { a.f.Shutdown() }

// WaitForCacheSync waits for the factory's started informers to sync.
func (a *adapter) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return a.f.WaitForCacheSync(stopCh)
}

// WaitForCacheSyncWithContext waits for the factory's started informers to sync.
func (a *adapter) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return a.f.WaitForCacheSyncWithContext(ctx)
}

// ForResource returns the factory's informer for resource. Its error is
// the factory's, such as [informers.ErrUnknownResource].
func (a *adapter) ForResource(resource schema.GroupVersionResource) (clientgoinformers.GenericInformer, error) {
	inf, err := a.f.ForResource(resource)
	if err != nil {
		// Not inf: a nil informers.GenericInformer would become a non-nil
		// clientgoinformers.GenericInformer holding nil.
		return nil, err
	}
	return inf, nil
}

// InformerFor returns the factory's informer for obj's type, building it
// with newFunc if the factory has none.
func (a *adapter) InformerFor(obj runtime.Object, newFunc clientgointernalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	// Both function types are func(kubernetes.Interface, time.Duration)
	// cache.SharedIndexInformer, so this converts without wrapping.
	return a.f.InformerFor(obj, internalinterfaces.NewInformerFunc(newFunc))
}

// InformerName returns the factory's informer name, if it has one.
func (a *adapter) InformerName() *cache.InformerName { return a.f.InformerName() }
