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

package main

import "testing"

// TestPodNamesUnique: every Pod the harness may load (-n up to 200000) has
// its own name; a clash makes the second apply fail with an immutable
// field error, as it once did at about 77,000 Pods.
func TestPodNamesUnique(t *testing.T) {
	seen := make(map[string]int, 200000)
	for i := range 200000 {
		p := podAt(i)
		key := p.ns + "/" + p.name
		if j, ok := seen[key]; ok {
			t.Fatalf("Pods %d and %d are both %s", j, i, key)
		}
		seen[key] = i
	}
}
