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
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/watchlist"
)

// kindedMetadata is a metadata client whose lists and watches of resource
// return objects of kind gvk: the server says PartialObjectMetadata,
// controller-runtime's cache says the kind, set in its list and watch
// functions. Set there, every transform (ByObject, DefaultTransform, the
// factory's WithTransform or WithResourceOptions, the lean one) sees the
// kind, and none can run before it is set.
type kindedMetadata struct {
	metadata.Interface
	resource schema.GroupVersionResource
	gvk      schema.GroupVersionKind
}

// Resource implements [metadata.Interface].
func (m kindedMetadata) Resource(resource schema.GroupVersionResource) metadata.Getter {
	getter := m.Interface.Resource(resource)
	if resource != m.resource {
		return getter
	}
	return kindedGetter{kindedResource: kindedResource{ResourceInterface: getter, gvk: m.gvk}, getter: getter}
}

// IsWatchListSemanticsUnSupported says what the wrapped client says
// (k8s.io/client-go/util/watchlist): a fake cannot stream.
func (m kindedMetadata) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(m.Interface)
}

// kindedGetter is kindedResource over every namespace, and over one.
type kindedGetter struct {
	kindedResource
	getter metadata.Getter
}

// Namespace implements [metadata.Getter].
func (g kindedGetter) Namespace(ns string) metadata.ResourceInterface {
	return kindedResource{ResourceInterface: g.getter.Namespace(ns), gvk: g.gvk}
}

// kindedResource sets gvk on what its lists and watches return.
type kindedResource struct {
	metadata.ResourceInterface
	gvk schema.GroupVersionKind
}

// List implements [metadata.ResourceInterface].
func (r kindedResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	list, err := r.ResourceInterface.List(ctx, opts)
	if list != nil {
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(r.gvk)
		}
	}
	return list, err
}

// Watch implements [metadata.ResourceInterface].
func (r kindedResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := r.ResourceInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	k := &kindedWatch{Interface: w, gvk: r.gvk, result: make(chan watch.Event), stop: make(chan struct{})}
	go k.loop()
	return k, nil
}

// kindedWatch sets gvk on the metadata-only objects of w's events. Unlike
// watch.Filter's, its loop ends on Stop even while an event waits for a
// reader that has gone.
type kindedWatch struct {
	watch.Interface
	gvk      schema.GroupVersionKind
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

// ResultChan implements [watch.Interface].
func (k *kindedWatch) ResultChan() <-chan watch.Event { return k.result }

// Stop implements [watch.Interface].
func (k *kindedWatch) Stop() {
	k.stopOnce.Do(func() { close(k.stop) })
	k.Interface.Stop()
}

func (k *kindedWatch) loop() {
	defer close(k.result)
	for e := range k.Interface.ResultChan() {
		if m, ok := e.Object.(*metav1.PartialObjectMetadata); ok {
			m.SetGroupVersionKind(k.gvk)
		}
		select {
		case k.result <- e:
		case <-k.stop:
			return
		}
	}
}
