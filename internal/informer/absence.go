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
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/meter"
)

// absence is whether an informer's resource is served, under
// WithAPIDiscovery (internal/listwatch/absent.go): each of its sources (one
// per namespace) reports when its list or watch finds the resource gone
// and when it finds it back. The informer waits for its resource while
// any source does. It logs one line when it starts waiting and one when it
// stops, never one per request.
type absence struct {
	name     string
	resource schema.GroupVersionResource
	metrics  *meter.Hooks

	mu      sync.Mutex
	sources map[string]bool
	// waiting is closed while the informer waits, and replaced by an open
	// one when it stops: WaitForCacheSync selects on it.
	waiting chan struct{}
}

func (a *absence) init(name string, resource schema.GroupVersionResource, metrics *meter.Hooks) {
	a.name, a.resource, a.metrics = name, resource, metrics
	a.sources = map[string]bool{}
	a.waiting = make(chan struct{})
}

// set records that source found the resource gone (absent) or back.
func (a *absence) set(source string, absent bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	was := len(a.sources) > 0
	if absent {
		a.sources[source] = true
	} else {
		delete(a.sources, source)
	}
	now := len(a.sources) > 0
	if was == now {
		return
	}
	a.metrics.SetWaiting(now)
	log := klog.Background().WithValues("informer", a.name, "resource", a.resource.String())
	if now {
		close(a.waiting)
		log.Info("The server does not serve the informer's resource: the informer waits for it, with none of its objects cached")
		return
	}
	a.waiting = make(chan struct{})
	log.Info("The server serves the informer's resource again: the informer lists and watches it")
}

// is reports whether the informer waits for its resource.
func (a *absence) is() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sources) > 0
}

// closedWhileWaiting returns a channel that is closed while the informer
// waits for its resource, or once it starts to.
func (a *absence) closedWhileWaiting() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting
}

// reason says what the informer waits for.
func (a *absence) reason() string {
	return fmt.Sprintf("waits for its resource: the server does not serve %s (WithAPIDiscovery)", a.resource)
}
