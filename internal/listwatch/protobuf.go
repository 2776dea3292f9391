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

package listwatch

import (
	"context"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// ContentTypeProtobuf and AcceptProtobuf are the content types of a client
// that asks for protobuf and takes JSON where the server has no protobuf:
// what client-go's generated clients of built-in types ask for when the
// rest.Config leaves the content type to them, and what kube-controller-
// manager configures (with "*/*" as its fallback).
const (
	ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"
	AcceptProtobuf      = ContentTypeProtobuf + ",application/json"
)

// ProtobufConfig returns the config of the root's NewForConfig clientset:
// config itself when it sets a content type, else a copy that asks for
// protobuf with a JSON fallback, as kube-controller-manager's clients do.
// The dynamic and metadata clients are built from config, not from this
// copy: they choose their own content types.
func ProtobufConfig(config *rest.Config) *rest.Config {
	if config.ContentType != "" || config.AcceptContentTypes != "" {
		return config
	}
	c := rest.CopyConfig(config)
	c.ContentType = ContentTypeProtobuf
	c.AcceptContentTypes = AcceptProtobuf
	return c
}

// restSource is a generated typed client of client-go (gentype.Client and
// the clients built on it): the REST client of its group version and its
// namespace.
type restSource interface {
	GetClient() rest.Interface
	GetNamespace() string
}

// newList returns an empty list of type L, a pointer to a list struct.
func newList[L runtime.Object]() runtime.Object {
	return reflect.New(reflect.TypeFor[L]().Elem()).Interface().(runtime.Object)
}

// Protobuf returns the calls of r that ask for protobuf (AcceptProtobuf)
// on resource, whatever content type the client was configured with: the
// same requests as the typed client's, through its own REST client (its
// transport, rate limiter and warning handler), with another Accept
// header. The response is decoded by its Content-Type, so a server that
// answers in JSON is still understood. ok is false when r does not come
// from a generated typed client with a REST client (the fake clientset,
// which encodes nothing); r is then to be used as it is.
func (r Requests) Protobuf(resource string) (p Requests, ok bool) {
	get, ok := r.rest(resource, AcceptProtobuf)
	if !ok {
		return r, false
	}
	newList := r.newList
	return Requests{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := newList()
			if err := get(&opts).Do(ctx).Into(list); err != nil {
				return nil, err
			}
			return list, nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return get(&opts).Watch(ctx)
		},
	}, true
}

// rest returns how to build r's requests on resource through the typed
// client's own REST client, with the Accept header accept ("": the one a
// generated client of a built-in type sends); ok is false when r does not
// come from a generated typed client with a REST client.
func (r Requests) rest(resource, accept string) (get func(*metav1.ListOptions) *rest.Request, ok bool) {
	if r.source == nil {
		return nil, false
	}
	client := r.source.GetClient()
	if client == nil || reflect.ValueOf(client).Kind() == reflect.Pointer && reflect.ValueOf(client).IsNil() {
		return nil, false
	}
	namespace := r.source.GetNamespace()
	return func(opts *metav1.ListOptions) *rest.Request {
		var timeout time.Duration
		if opts.TimeoutSeconds != nil {
			timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
		}
		req := client.Get()
		if accept != "" {
			req = req.SetHeader("Accept", accept)
		} else {
			// What every generated client of a built-in type does: ask
			// for protobuf unless the client's config sets a content type.
			req = req.UseProtobufAsDefault()
		}
		return req.
			NamespaceIfScoped(namespace, namespace != "").
			Resource(resource).
			VersionedParams(opts, scheme.ParameterCodec).
			Timeout(timeout)
	}, true
}
