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
	"fmt"
	"slices"
	"strings"
)

// Ready is the factory's Ready over the informers it has started: nil when
// every one has synced and its last list or watch succeeded, else one
// error that names each that has not, with why (NotSynced, or the last
// error it got). An informer that waits for its resource
// (WithAPIDiscovery) is not named: the cluster lacks it, the informer is
// not at fault. It makes no request and takes no lock an informer holds.
func Ready(started []Started) error {
	var problems []string
	var stopped []error
	for _, e := range started {
		if e.Hooks.Absent() {
			continue
		}
		if err := e.Hooks.Stopped(); err != nil {
			problems = append(problems, err.Error()) // it names the informer
			stopped = append(stopped, err)
		} else if !e.Informer.HasSynced() {
			problems = append(problems, e.Name+": "+e.Hooks.NotSynced(e.Refused))
		} else if err := e.Hooks.Health(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: failing: %v", e.Name, err))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return &notReady{msg: "informers not ready: " + strings.Join(problems, "; "), stopped: stopped}
}

// notReady is Ready's error; errors.Is finds the memory budget's stops in
// it (the root's ErrOverMemoryBudget).
type notReady struct {
	msg     string
	stopped []error
}

func (e *notReady) Error() string   { return e.msg }
func (e *notReady) Unwrap() []error { return e.stopped }
