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

// Package schemetype builds the typed informers of resources whose Go types
// live only in a runtime.Scheme: an operator's own kubebuilder types, which
// have deep-copy functions and scheme registration but no generated
// clientset. It lists and watches them through a REST client that decodes
// with the scheme's codecs, so that every object is decoded once, into its
// Go type, and never converted from unstructured on a read.
//
// The result is a binding (internal/binding), which the factory builds and
// runs like any bound typed resource: the same options, life cycle and
// reporting as the built-in ones.
package schemetype

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/listwatch"
)

// parameters encodes list options into a request's query, as client-go's
// metadata client does: the query is the same for every group version, so
// it needs no registration of the resource's group version in the user's
// scheme.
var (
	parameterScheme = runtime.NewScheme()
	parameters      = runtime.NewParameterCodec(parameterScheme)
	versionV1       = schema.GroupVersion{Version: "v1"}
)

func init() {
	metav1.AddToGroupVersion(parameterScheme, versionV1)
}

// Resource returns resource bound to the Go type scheme registers for gvk,
// listed and watched through config (and httpClient, if not nil) with the
// scheme's codecs. It is an error, naming gvk, when the scheme has no type
// or list type for gvk, or the type is not a pointer to a struct with
// object metadata.
func Resource(config *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, gvk schema.GroupVersionKind, resource schema.GroupVersionResource, namespaced bool) (*binding.Resource, error) {
	example, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", gvk, err)
	}
	t := reflect.TypeOf(example)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%v: its Go type %v is not a pointer to a struct", gvk, t)
	}
	if _, ok := example.(metav1.Object); !ok {
		return nil, fmt.Errorf("%v: its Go type %v has no object metadata", gvk, t)
	}
	if err := binding.ValidateResource(resource); err != nil {
		return nil, fmt.Errorf("%v as %v: %w", gvk, resource, err)
	}
	client, reqs, err := clientAndRequests(config, httpClient, scheme, gvk, resource)
	if err != nil {
		return nil, err
	}
	return &binding.Resource{
		Resource:   resource,
		Namespaced: namespaced,
		Type:       t,
		Example:    example,
		Client:     client,
		Requests:   reqs,
		Missing:    "the REST client is nil",
		Typed:      func(i cache.SharedIndexInformer) cache.SharedIndexInformer { return i },
	}, nil
}

// Requests returns the list and watch calls of resource, per namespace,
// decoding into the Go types scheme registers for gvk and its list, for an
// informer that no factory builds (one of controller-runtime's
// Options.NewInformer).
func Requests(config *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, gvk schema.GroupVersionKind, resource schema.GroupVersionResource) (func(namespace string) listwatch.Requests, error) {
	_, reqs, err := clientAndRequests(config, httpClient, scheme, gvk, resource)
	return reqs, err
}

// clientAndRequests is the REST client of gvk's group version and the
// list and watch calls of resource through it.
func clientAndRequests(config *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, gvk schema.GroupVersionKind, resource schema.GroupVersionResource) (*rest.RESTClient, func(namespace string) listwatch.Requests, error) {
	list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, nil, fmt.Errorf("%v: the scheme has no list type: %w", gvk, err)
	}
	client, err := restClient(config, httpClient, scheme, gvk.GroupVersion())
	if err != nil {
		return nil, nil, fmt.Errorf("%v: %w", gvk, err)
	}
	return client, func(namespace string) listwatch.Requests { return requests(client, resource.Resource, namespace, list) }, nil
}

// restClient is a client of one group version that decodes into the
// scheme's Go types without converting them.
func restClient(config *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, gv schema.GroupVersion) (*rest.RESTClient, error) {
	if config == nil {
		return nil, errors.New("the REST config is nil")
	}
	cfg := rest.CopyConfig(config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if httpClient == nil {
		return rest.RESTClientFor(cfg)
	}
	return rest.RESTClientForConfigAndClient(cfg, httpClient)
}

// requests are the list and watch calls of resource in namespace ("" for
// all namespaces or a cluster-scoped resource); list is an empty list of
// the resource's list type, copied for each list.
func requests(client rest.Interface, resource, namespace string, list runtime.Object) listwatch.Requests {
	request := func(opts *metav1.ListOptions) *rest.Request {
		return client.Get().
			NamespaceIfScoped(namespace, namespace != "").
			Resource(resource).
			SpecificallyVersionedParams(opts, parameters, versionV1)
	}
	return listwatch.Requests{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out := list.DeepCopyObject()
			if err := request(&opts).Do(ctx).Into(out); err != nil {
				return nil, err
			}
			return out, nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return request(&opts).Watch(ctx)
		},
	}
}
