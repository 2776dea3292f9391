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

package informers

import (
	"errors"

	"github.com/kubeinformers/informers/internal/served"
)

// This file holds WithAPIDiscovery: informers of resources that come and
// go. The engine is internal/listwatch/absent.go (a 404 confirmed by
// discovery makes the informer wait) and internal/served (discovery,
// polled only while an informer waits); internal/informer/absence.go
// reports the state to Ready, SyncStatus, Notices, WaitForCacheSync, the
// log and the metrics. The option also makes an informer retry a 403
// itself (internal/listwatch/forbidden.go).

// WithAPIDiscovery makes the factory's informers follow the resources the
// server serves. An informer of a resource the server does not serve (a
// custom resource whose CRD is not installed yet or was deleted, a version
// no longer served, an aggregated API that is gone) does not retry its
// list: it waits for the resource, and
//   - [Factory.WaitForCacheSyncWithContext] does not wait for it, and
//     reports it unsynced, with the reason;
//   - [Factory.Ready] does not fail on it; [Factory.SyncStatus] reports it
//     unsynced, [Factory.Notices] says it waits, and so does the metric
//     kubeinformers_informer_waiting_for_resource (see
//     [APIDiscoveryMetricsProvider]);
//   - it logs one line when its resource goes and one when it comes back.
//
// When the resource becomes served, the informer lists, watches and syncs
// within seconds. When it stops being served, the objects in the cache are
// removed, with delete events to the handlers, and the informer waits
// again.
//
// The factory learns that a resource went from the 404 of a list or watch,
// confirmed with one discovery request, and that it came back by asking
// discovery for the resource's group version, only while an informer
// waits for it: every 500 ms at first, growing to every 5 s. A served
// resource costs nothing. See docs/api-discovery.md.
//
// It also bounds the retry of a forbidden list or watch (403: a grant not
// given yet, or revoked). The informer retries the request itself, after
// 1 s, doubling to at most 10 s (plus up to a tenth at random), where
// client-go's reflector backs off to up to a minute and logs each
// failure; it logs one line when its requests become forbidden and one
// when they are permitted again, and [Factory.Ready] names the 403
// meanwhile.
//
// It needs the factory's kubernetes.Interface, whose discovery client it
// asks: with [WithoutClientset] it is an error from [New]. The client-go
// compatible constructors keep client-go's behaviour unless it is given.
func WithAPIDiscovery() SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		f.apiDiscovery = true
		return f
	}
}

// setUpAPIDiscovery makes the discovery checker of WithAPIDiscovery, once
// every option has run: the client may come after it.
func (f *sharedInformerFactory) setUpAPIDiscovery() {
	if !f.apiDiscovery {
		return
	}
	if f.client == nil || f.client.Discovery() == nil {
		f.invalid(errors.New("WithAPIDiscovery: the factory has no kubernetes.Interface whose discovery client it could ask"))
		return
	}
	f.discovery = served.New(f.client.Discovery())
}
