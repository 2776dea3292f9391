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

package dynamicinformer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers"
)

// DynamicSharedInformerFactory hands out one shared dynamic informer per
// resource, of *unstructured.Unstructured objects.
type DynamicSharedInformerFactory interface {
	// Start runs, in goroutines, every informer requested so far that is
	// not running yet, until stopCh is closed.
	Start(stopCh <-chan struct{})

	// ForResource returns the shared informer of gvr.
	ForResource(gvr schema.GroupVersionResource) informers.GenericInformer

	// WaitForCacheSync blocks until every started informer has synced or
	// stopCh is closed, and reports each by resource.
	WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool

	// Shutdown marks the factory as shut down, so that Start does nothing
	// from then on, and blocks until every informer goroutine has ended
	// (close the channels they were started with first, or meanwhile). It
	// may be called many times, also concurrently.
	Shutdown()
}

// TweakListOptionsFunc changes the options of every list and watch request.
type TweakListOptionsFunc func(*metav1.ListOptions)
