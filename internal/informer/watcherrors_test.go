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
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/listwatch"
)

// TestUserWatchErrorHandler: a handler set on the informer gets each
// error after the factory has recorded it for Ready, but no not-served
// error; it cannot be set once the informer has started.
func TestUserWatchErrorHandler(t *testing.T) {
	h := &Hooks{}
	var got []error
	if err := h.userWatchErrors.set(func(_ context.Context, _ *cache.Reflector, err error) { got = append(got, err) }); err != nil {
		t.Fatal(err)
	}
	handler := h.watchErrorHandler("")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no"))
	handler(context.Background(), nil, forbidden)
	handler(context.Background(), nil, fmt.Errorf("%w: v1, Resource=gadgets: %w", listwatch.ErrNotServed, apierrors.NewNotFound(schema.GroupResource{Resource: "gadgets"}, "")))
	if len(got) != 1 || !errors.Is(got[0], forbidden) {
		t.Errorf("the user's handler got %v, want only the 403", got)
	}
	if err := h.Health(); !errors.Is(err, forbidden) {
		t.Errorf("Health() = %v with a user's handler, want the 403", err)
	}
	h.userWatchErrors.start()
	if err := h.userWatchErrors.set(nil); err == nil {
		t.Error("set after the start: no error")
	}
}
