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
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/shard"
)

// Started is one informer a factory has started, as its
// WaitForCacheSync and its shard health check (shardhealth.go) see it.
type Started struct {
	Name     string
	Type     reflect.Type
	Informer cache.SharedIndexInformer
	Hooks    *Hooks
	Refused  error
	Shard    *shard.Informer // nil for an informer built by InformerFor's newFunc
	Done     <-chan struct{}
}

// WaitForCacheSync waits until every informer of started has synced, its
// first watch has failed for good, or ctx is done, and reports them as the
// factory's WaitForCacheSyncWithContext does: keyed by object type, and
// an error that names each informer not synced with the reason.
func WaitForCacheSync(ctx context.Context, started []Started) cache.SyncResult {
	var wg sync.WaitGroup
	for _, e := range started {
		if e.Refused != nil {
			continue
		}
		wg.Go(func() { waitSynced(ctx, e) })
	}
	wg.Wait()

	res := cache.SyncResult{Synced: make(map[reflect.Type]bool, len(started))}
	var unsynced []string
	for _, e := range started {
		synced := e.Informer.HasSynced() && !e.Hooks.Absent()
		t := e.Type
		if prev, seen := res.Synced[t]; seen {
			synced = synced && prev
		}
		res.Synced[t] = synced
		if !synced {
			unsynced = append(unsynced, e.Name+": "+e.Hooks.NotSynced(e.Refused))
		}
	}
	if len(unsynced) > 0 {
		slices.Sort(unsynced)
		msg := "caches not synced: " + strings.Join(unsynced, "; ")
		if cause := context.Cause(ctx); cause != nil {
			// Wrapping the cause keeps errors.Is(err, context.DeadlineExceeded).
			res.Err = fmt.Errorf("%w; %s", cause, msg)
		} else {
			res.Err = errors.New(msg)
		}
	}
	return res
}

// waitSynced returns once e has synced, its first watch has failed for
// good, it waits for its resource (WithAPIDiscovery), or ctx is done.
func waitSynced(ctx context.Context, e Started) {
	select {
	case <-e.Informer.HasSyncedChecker().Done():
	case <-e.Hooks.Waiting():
	case <-e.Hooks.FirstWatchFailed():
	case <-ctx.Done():
	}
}
