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

package informer

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestName: the core group by version, others by group, and an unknown
// type by its Go type.
func TestName(t *testing.T) {
	for _, c := range []struct {
		resource schema.GroupVersionResource
		typ      reflect.Type
		want     string
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, nil, "pods (v1)"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, nil, "deployments.apps/v1"},
		{schema.GroupVersionResource{}, reflect.TypeFor[*corev1.Secret](), "*v1.Secret"},
	} {
		if got := Name(c.resource, c.typ); got != c.want {
			t.Errorf("Name(%v, %v) = %q, want %q", c.resource, c.typ, got, c.want)
		}
	}
}
