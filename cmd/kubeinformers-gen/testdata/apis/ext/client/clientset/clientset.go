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

// Package clientset stands in for client-gen's versioned clientset of the
// fixture API: the generator checks only its method set.
package clientset

// Interface is the clientset.
type Interface interface {
	ThingsV1() ThingsV1Interface
	ThingsV1beta1() ThingsV1beta1Interface
}

// ThingsV1Interface is the client of things.example.com/v1.
type ThingsV1Interface interface {
	Things(namespace string) any
	Sites() any
	Leaves(namespace string) any
	Reviews(namespace string) any
}

// ThingsV1beta1Interface is the client of things.example.com/v1beta1.
type ThingsV1beta1Interface interface {
	Things(namespace string) any
}
