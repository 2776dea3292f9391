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
	"fmt"
	"slices"
	"strings"
)

// This file holds the health check a factory under WithShardMembership
// registers with its membership (sharding.Membership.AddHealthCheck): a
// replica that cannot serve its share gives it up. The membership applies
// the grace and the assignment (the Health section of sharding.Membership);
// this check says what "cannot serve" means for a factory.

// ShardHealth fails while at least one informer that follows the
// membership is failing: its last list or watch failed (a 410 Gone or an
// expired resource version excepted: the reflector just lists again), or
// its first watch was refused in a way a retry will not fix (forbidden,
// not found, ...): the conditions the factory's Ready reports. An informer
// that has not finished its first list without an error yet, one removed
// or stopped, and one that does not follow the membership (unsharded, or
// with its own selector) do not count.
//
// One failing informer is enough, not all of them: the share is one range
// of every sharded resource, so a replica that cannot list one of them
// leaves that resource's part of its range served by nobody, while a
// replica whose RBAC or API discovery is right could serve it. When the
// failure is the same everywhere (a resource missing or forbidden on every
// replica, an API server down), every member fails its check, and the
// membership then divides the space among all of them as before.
//
// A replica that has given its share up owns nothing, and its informers
// then cache nothing but still probe (internal/listwatch: one LIST of
// limit 1 a second), so that this check sees when they can list again.
//
// It makes no request and holds no lock an informer holds; it runs on the
// membership's goroutine at every renewal.
func ShardHealth(started []Started) error {
	var problems []string
	for _, e := range started {
		if e.Shard == nil || !e.Shard.Following() {
			continue
		}
		select {
		case <-e.Done:
			continue // stopped: Shutdown, its context ended, or refused
		default:
		}
		if err := e.Hooks.Health(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", e.Name, err))
		} else if err := e.Hooks.FirstWatchFailure(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: the first watch failed: %v", e.Name, err))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return errors.New("sharded informers failing: " + strings.Join(problems, "; "))
}
