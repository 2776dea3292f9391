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

package crcache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/schemetype"
)

// customInformer builds the informer of one slot with the caller's
// [cache.Options].NewInformer, which takes a ListerWatcher: the cache
// lists and watches as controller-runtime does and runs the informer
// itself, as no factory can run an informer it did not build.
func (c *Cache) customInformer(e *entry, p parts, obj runtime.Object) (toolscache.SharedIndexInformer, error) {
	var requests func(namespace string) listwatch.Requests
	switch e.key.form {
	case formUnstructured:
		resource := c.dynamic.Resource(e.resource)
		requests = func(ns string) listwatch.Requests {
			return listwatch.Of[*unstructured.UnstructuredList](resource.Namespace(ns))
		}
	case formMetadata:
		resource := p.metadata.Resource(e.resource)
		requests = func(ns string) listwatch.Requests {
			return listwatch.Of[*metav1.PartialObjectMetadataList](resource.Namespace(ns))
		}
	default:
		var err error
		requests, err = schemetype.Requests(c.config.restConfig, c.config.httpClient, c.config.scheme, e.key.gvk, e.resource)
		if err != nil {
			return nil, err
		}
	}
	// splitForCustom gave the slot one namespace at most.
	namespace := p.restricted
	if len(p.namespaces) == 1 {
		namespace = p.namespaces[0]
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			p.tweak(&opts)
			return requests(namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			p.tweak(&opts)
			return requests(namespace).Watch(ctx, opts)
		},
	}
	informer := c.config.newInformer(lw, obj, p.resync, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
	})
	if err := informer.SetTransform(p.transform); err != nil {
		return nil, err
	}
	return informer, nil
}
