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
	"errors"
	"testing"
)

// TestHealthSources: the health of an informer over several namespaces
// names each failing one, in order, until it succeeds again.
func TestHealthSources(t *testing.T) {
	var h health
	h.observe("b", errors.New("forbidden b"))
	h.observe("a", errors.New("forbidden a"))
	if err := h.last(); err == nil || err.Error() != "namespace a: forbidden a; namespace b: forbidden b" {
		t.Errorf("last: %v", err)
	}
	h.observe("a", nil)
	h.observe("b", nil)
	if err := h.last(); err != nil {
		t.Errorf("last after success: %v", err)
	}
}
