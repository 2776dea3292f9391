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
	"errors"
	"testing"
)

// TestChainTransformsError: the chain stops at the first transform that
// fails.
func TestChainTransformsError(t *testing.T) {
	failed := errors.New("first failed")
	called := false
	chain := ChainTransforms(
		func(any) (any, error) { return nil, failed },
		func(obj any) (any, error) { called = true; return obj, nil })
	if _, err := chain(1); !errors.Is(err, failed) || called {
		t.Errorf("chain: %v (second called: %v), want the first's error and no second call", err, called)
	}
}
