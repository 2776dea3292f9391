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
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
)

// logForbidden logs, once each way, that a source of the informer
// (a namespace, named only where there are several) is forbidden to list
// or watch its resource, and that it is permitted again: under
// WithAPIDiscovery, internal/listwatch/forbidden.go retries forbidden
// requests itself, at most ListWatch's ForbiddenMaxInterval apart, and
// tells the hooks only when the state changes. Ready names the error
// meanwhile (health).
func (h *Hooks) logForbidden(source string, err error) {
	log := klog.Background().WithValues("informer", h.absence.name)
	if source != "" {
		log = log.WithValues("namespace", source)
	}
	if err != nil {
		log.Info("The informer's requests are forbidden: it retries until they are granted", "err", err, "maxInterval", listwatch.ForbiddenMaxInterval)
		return
	}
	log.Info("The informer's requests are permitted again")
}
