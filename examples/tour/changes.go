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

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// showChanges changes a few objects of the demo cluster through the
// clientset and prints the events the handlers of section 2 receive. The
// listers already reflect each change when its handler runs: the cache is
// updated first.
func (t *tour) showChanges() error {
	heading(t.out, "8. Changes through the clientset, and the events they cause")
	changes := demoChanges()
	for _, c := range changes {
		fmt.Fprintf(t.out, "  %s\n", c.what)
		if err := c.do(t.ctx, t.c.client); err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
	}
	events, err := t.rec.waitFor(t.ctx, len(changes), eventsTimeout)
	fmt.Fprintf(t.out, "  events received (%d of %d expected)\n", len(events), len(changes))
	for _, e := range events {
		fmt.Fprintf(t.out, "    %s\n", e)
	}
	if err != nil {
		return err
	}

	fmt.Fprintln(t.out, "  after the changes")
	if err := printPods(t.out, t.pods, t.c.q.podNamespace, t.c.q.podSelector); err != nil {
		return err
	}
	pods, err := t.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	configMaps, err := t.configMaps.List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out, "    pods %d (%s), configmaps %d\n", len(pods), phaseSummary(pods), len(configMaps))
	return nil
}
