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

package informers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internalinterfaces"
)

// sharedInformerFactory is the one implementation of SharedInformerFactory.
// Its name and the option type built on it match client-go's, so that
// SharedInformerOption has the very same signature.
type sharedInformerFactory struct {
	client           kubernetes.Interface
	namespace        string
	tweakListOptions internalinterfaces.TweakListOptionsFunc
	defaultResync    time.Duration
	customResync     map[reflect.Type]time.Duration
	transform        cache.TransformFunc
	informerName     *cache.InformerName

	// optionErrs collects what the options found wrong. New returns them;
	// the client-go compatible constructors log them.
	optionErrs []error

	// groups caches the group accessors (generated, factory_groups.go).
	groups groups

	lock sync.Mutex
	// informers holds the one informer per object type; entries are never
	// replaced, which is what lets the accessors cache them.
	informers map[reflect.Type]cache.SharedIndexInformer
	// startedInformers records which informers Start has run, so Start can
	// be called again for informers requested later.
	startedInformers map[reflect.Type]bool
	// wg counts running informer goroutines, for Shutdown.
	wg sync.WaitGroup
	// shuttingDown is set by Shutdown; Start does nothing afterwards.
	shuttingDown bool
}

var _ SharedInformerFactory = &sharedInformerFactory{}

// NewSharedInformerFactory returns a factory for informers over all
// namespaces, with defaultResync as the resync period of every informer
// (zero: no resync).
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory returns a factory whose informers only
// see namespace and whose list and watch calls go through tweakListOptions.
//
// Deprecated: use [NewSharedInformerFactoryWithOptions] with [WithNamespace]
// and [WithTweakListOptions].
func NewFilteredSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, namespace string, tweakListOptions internalinterfaces.TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions returns a factory configured by
// options. It accepts whatever client-go's does; an option with a bad value
// is logged and then behaves as it does in client-go. Use [New] to get such
// mistakes back as an error instead.
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f := newFactory(client, defaultResync, options)
	for _, err := range f.optionErrs {
		klog.Background().Error(err, "Ignoring an invalid informer factory option")
	}
	return f
}

// New returns a factory configured by options, like
// [NewSharedInformerFactoryWithOptions], but checks its input first: a nil
// client, a negative resync period or an invalid option value is an error
// that names the problem, and no factory is returned.
func New(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) (SharedInformerFactory, error) {
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("the kubernetes.Interface is nil"))
	}
	if defaultResync < 0 {
		errs = append(errs, fmt.Errorf("the default resync period %v is negative", defaultResync))
	}
	f := newFactory(client, defaultResync, options)
	if err := errors.Join(append(errs, f.optionErrs...)...); err != nil {
		return nil, fmt.Errorf("informers: %w", err)
	}
	return f, nil
}

func newFactory(client kubernetes.Interface, defaultResync time.Duration, options []SharedInformerOption) *sharedInformerFactory {
	f := &sharedInformerFactory{
		client:           client,
		namespace:        metav1.NamespaceAll,
		defaultResync:    defaultResync,
		customResync:     make(map[reflect.Type]time.Duration),
		informers:        make(map[reflect.Type]cache.SharedIndexInformer),
		startedInformers: make(map[reflect.Type]bool),
	}
	for i, opt := range options {
		if opt == nil {
			f.optionErrs = append(f.optionErrs, fmt.Errorf("option %d is nil", i))
			continue
		}
		// Options return the factory they configure; upstream trusts that
		// pointer, so do we, but never lose it to a nil.
		if next := opt(f); next != nil {
			f = next
		}
	}
	return f
}

// InformerName returns the identity set by [WithInformerName], or nil.
func (f *sharedInformerFactory) InformerName() *cache.InformerName {
	return f.informerName
}

func (f *sharedInformerFactory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

func (f *sharedInformerFactory) StartWithContext(ctx context.Context) {
	f.lock.Lock()
	defer f.lock.Unlock()

	if f.shuttingDown {
		return
	}
	for informerType, informer := range f.informers {
		if f.startedInformers[informerType] {
			continue
		}
		f.wg.Go(func() {
			informer.RunWithContext(ctx)
		})
		f.startedInformers[informerType] = true
	}
}

func (f *sharedInformerFactory) Shutdown() {
	// Setting shuttingDown under the lock orders it after any Start in
	// progress, so wg.Wait below sees every goroutine Start added.
	f.lock.Lock()
	f.shuttingDown = true
	f.lock.Unlock()

	f.wg.Wait()
	f.informerName.Release()
}

func (f *sharedInformerFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

func (f *sharedInformerFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	started := f.startedSnapshot()

	// Wait on the informers' sync signals instead of polling them.
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, informer := range started {
		checkers = append(checkers, informer.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "" /* no logging */, checkers...)

	res := cache.SyncResult{Synced: make(map[reflect.Type]bool, len(started))}
	for informerType, informer := range started {
		synced := informer.HasSynced()
		res.Synced[informerType] = synced
		if !synced {
			// WaitFor only returns early when ctx is done, so the cause is
			// set; it says more than ctx.Err().
			res.Err = context.Cause(ctx)
		}
	}
	return res
}

// startedSnapshot returns the informers Start has run so far.
func (f *sharedInformerFactory) startedSnapshot() map[reflect.Type]cache.SharedIndexInformer {
	f.lock.Lock()
	defer f.lock.Unlock()
	started := make(map[reflect.Type]cache.SharedIndexInformer, len(f.startedInformers))
	for informerType, informer := range f.informers {
		if f.startedInformers[informerType] {
			started[informerType] = informer
		}
	}
	return started
}

// InformerFor returns the shared informer for obj's type. The first call
// for a type builds it with newFunc, the type's resync period (see
// [WithCustomResyncConfig]) and the factory's transform, if any.
//
// Like client-go, it still builds informers after Shutdown, but Start no
// longer runs them.
func (f *sharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.lock.Lock()
	defer f.lock.Unlock()

	informerType := reflect.TypeOf(obj)
	if informer, exists := f.informers[informerType]; exists {
		return informer
	}
	resyncPeriod, exists := f.customResync[informerType]
	if !exists {
		resyncPeriod = f.defaultResync
	}
	informer := newFunc(f.client, resyncPeriod)
	if f.transform != nil {
		if err := informer.SetTransform(f.transform); err != nil {
			// SetTransform only fails on a running informer, which a fresh
			// one from newFunc should never be; say so instead of dropping it.
			klog.Background().Error(err, "Cannot set the factory transform", "type", informerType)
		}
	}
	f.informers[informerType] = informer
	return informer
}
