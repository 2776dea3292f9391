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

// Package internalinterfaces holds the small interfaces and option types
// that the factory and the per-group packages share. It exists, as in
// client-go, so that group packages can reach the factory without an import
// cycle.
package internalinterfaces

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// NewInformerFunc builds the [cache.SharedIndexInformer] for one type from a
// clientset and a resync period. The factory calls it at most once per type.
type NewInformerFunc func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer

// SharedInformerFactory is the part of the informer factory that group and
// version packages need: they ask it for the one shared informer of a type.
type SharedInformerFactory interface {
	// Start runs every informer requested so far that is not running yet.
	Start(stopCh <-chan struct{})
	// InformerFor returns the shared informer for obj's type, creating it
	// with newFunc the first time.
	InformerFor(obj runtime.Object, newFunc NewInformerFunc) cache.SharedIndexInformer
	// InformerName is the identity informers register their GVR under for
	// metrics, or nil for none.
	InformerName() *cache.InformerName
}

// TweakListOptionsFunc changes the [metav1.ListOptions] of every list and
// watch call, for example to set a label or field selector.
type TweakListOptionsFunc func(*metav1.ListOptions)

// InformerOptions configures an informer built by one of the
// New…InformerWithOptions functions.
type InformerOptions struct {
	// ResyncPeriod is how often handlers get every object again as an
	// update. Zero, the default, disables resync.
	ResyncPeriod time.Duration

	// Indexers are added to the informer's indexer.
	Indexers cache.Indexers

	// InformerName identifies the informer in metrics. Create it once at
	// start-up with [cache.NewInformerName]; nil publishes no metrics.
	InformerName *cache.InformerName

	// TweakListOptions, if not nil, changes the options of every list and
	// watch request.
	TweakListOptions TweakListOptionsFunc
}
