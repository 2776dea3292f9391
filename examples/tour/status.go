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
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeinformers/informers"
)

// showStatus shows the factory's status: Ready for a /readyz endpoint,
// SyncStatus per informer, then an informer that cannot sync (its resource
// is not served) named by Ready with the server's answer, and RemoveInformer,
// which stops it while the others keep running.
func (t *tour) showStatus() error {
	heading(t.out, "5. Status: Ready(), SyncStatus() and RemoveInformer()")
	fmt.Fprintf(t.out, "  Ready(): %s\n", readyString(t.factory.Ready()))
	t.printSyncStatus()

	// Requested after Start, so Start again.
	if _, err := t.factory.ForResource(gadgetsGVR); err != nil {
		return err
	}
	t.factory.StartWithContext(t.ctx)
	fmt.Fprintf(t.out, "  ForResource(%s), a resource the server does not serve, started\n", resourceName(gadgetsGVR))
	notReady, err := waitForFailure(t.ctx, t.factory)
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out, "    Ready(): %s\n", notReady)

	removed := t.factory.RemoveInformer(gadgetsGVR)
	fmt.Fprintf(t.out, "  RemoveInformer(%s): %t\n", resourceName(gadgetsGVR), removed)
	fmt.Fprintf(t.out, "    Ready(): %s\n", readyString(t.factory.Ready()))
	return nil
}

// printSyncStatus prints whether each started informer has synced, by
// InformerID: its resource and, unless typed, its form.
func (t *tour) printSyncStatus() {
	status := t.factory.SyncStatus()
	ids := make([]informers.InformerID, 0, len(status))
	for id := range status {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b informers.InformerID) int { return strings.Compare(a.String(), b.String()) })
	width := 0
	for _, id := range ids {
		width = max(width, len(id.String()))
	}
	fmt.Fprintf(t.out, "  SyncStatus(): %d informers\n", len(ids))
	for _, id := range ids {
		state := "not synced"
		if status[id] {
			state = "synced"
		}
		fmt.Fprintf(t.out, "    %-*s  %s\n", width, id, state)
	}
}

// waitForFailure waits until Ready reports an informer that has failed,
// not just one that has not synced yet, and returns what it reports.
func waitForFailure(ctx context.Context, factory informers.Factory) (string, error) {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, syncTimeout, true, func(context.Context) (bool, error) {
		last = readyString(factory.Ready())
		return strings.Contains(last, ": not synced: "), nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for Ready to name the failing informer (last: %s): %w", last, err)
	}
	return last, nil
}

func readyString(err error) string {
	if err == nil {
		return "nil (ready)"
	}
	return err.Error()
}
