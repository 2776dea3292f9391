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
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file makes an informer wait for a resource the server does not
// serve (WithAPIDiscovery), instead of retrying its LIST for ever: a CRD
// not installed yet or deleted, a version no longer served, an aggregated
// API gone.
//
// A list or watch that answers 404 Not Found, confirmed by discovery
// (Options.Served, internal/served), marks the source absent and:
//   - if the informer's cache holds objects, a list returns an empty list,
//     so that the reflector's Replace removes them with delete events, and
//     a watch returns its error, so that the reflector lists;
//   - otherwise the call blocks until discovery says the resource is
//     served (or the informer stops), then makes its request again, with
//     the reflector's own options: a list lists, a watch-list stream
//     streams, and a watch resumes from the reflector's resourceVersion (a
//     recreated resource answers 410 Gone, and the reflector relists).
//
// Nothing is retried on a timer of its own and nothing is logged per
// retry: the source reports each change of state once (Config.Absent).

// Discovery tells whether the server serves a resource and waits until it
// does; internal/served implements it.
type Discovery interface {
	Served(gvr schema.GroupVersionResource) (bool, error)
	Wait(ctx context.Context, gvr schema.GroupVersionResource) error
}

// ErrNotServed marks the error of a request for a resource that the server
// does not serve, as discovery confirmed; it wraps the server's 404.
var ErrNotServed = errors.New("not served")

// absence is one source's view of whether its resource is served.
type absence struct {
	cfg    *Config
	absent atomic.Bool
}

// notServed reports whether err says that the resource is not served: a
// 404 that discovery confirms, or any 404 while the source already knows
// it absent (no discovery request per retry).
func (a *absence) notServed(err error) bool {
	if err == nil || !apierrors.IsNotFound(err) {
		return false
	}
	if a.absent.Load() {
		return true
	}
	served, derr := a.cfg.Discovery.Served(a.cfg.Resource)
	return derr == nil && !served
}

// set records the state and tells Config.Absent when it changes.
func (a *absence) set(absent bool) {
	if a.absent.CompareAndSwap(!absent, absent) && a.cfg.Absent != nil {
		a.cfg.Absent(absent)
	}
}

// cached reports whether the informer's cache holds objects.
func (a *absence) cached() bool {
	if a.cfg.Store == nil {
		return false
	}
	store := a.cfg.Store()
	return store != nil && len(store.ListKeys()) > 0
}

// notServedError wraps the server's 404 with ErrNotServed.
func (a *absence) notServedError(err error) error {
	return fmt.Errorf("%w: %s: %w", ErrNotServed, a.cfg.Resource, err)
}
