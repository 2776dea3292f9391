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

// Package listwatch builds the list and watch calls of every informer this
// module makes: typed, dynamic and metadata-only, standalone or shared by a
// factory. Keeping them in one place means that a request option (a tweak,
// a selector, a shard filter) or a health hook is added once for all forms.
package listwatch

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/settle"
)

// Requests is one namespace's list and watch calls for one resource: a
// typed client such as client.CoreV1().Pods(ns), a dynamic or a metadata
// client's Resource(gvr).Namespace(ns), all reduced to the same two calls.
type Requests struct {
	List  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

	// source and newList, set by Of for a generated typed client of
	// client-go, let Protobuf (protobuf.go) make the same calls with
	// another content type.
	source  restSource
	newList func() runtime.Object
	// empty, set by Of, returns an empty list of the client's list type
	// (absent.go).
	empty func() runtime.Object
}

// Client is the part of a typed, dynamic or metadata resource client that
// an informer needs. L is its list type.
type Client[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Of reduces a resource client to its Requests.
func Of[L runtime.Object](c Client[L]) Requests {
	r := Requests{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, opts)
		},
		Watch: c.Watch,
		empty: newList[L],
	}
	if source, ok := any(c).(restSource); ok {
		r.source, r.newList = source, newList[L]
	}
	return r
}

// Options are what decide an informer's list and watch calls, the same in
// each of its namespaces: the factory resolves them once, into its spec.
type Options struct {
	// Resource names the informer in errors.
	Resource schema.GroupVersionResource
	// Requests returns the calls for a namespace. It is called on every
	// list and watch, as client-go's generated informers do, so that a
	// clientset whose accessors return fresh clients behaves the same.
	// Nil means there is no client: every call fails with an error naming
	// Missing.
	Requests func(namespace string) Requests
	// Missing names the client that is needed when Requests is nil, such
	// as "the kubernetes.Interface is nil".
	Missing string
	// Tweak changes the options of every request, after the caller's own
	// selectors were set.
	Tweak func(*metav1.ListOptions)
	// Mode is how the informer gets its initial state (listmode.go). The
	// reflector learns it from the ListerWatcher built with
	// [cache.ToListWatcherWithWatchListSemantics] and [Semantics].
	Mode Mode
	// Client is the client the requests go through, as passed to
	// Semantics: a fake client has no watch-list semantics.
	Client any
	// Pretransform, if set, transforms each page of a list as it arrives;
	// its Transform must then be the informer's transform.
	Pretransform *Pretransform
	// Example is an object of the informer's type: a handover's bookmarks
	// are of that type, as the reflector checks.
	Example runtime.Object
	// Departures, if set, makes a handover's deletions tombstones; the
	// informer's transform must then be Departures.Transform's.
	Departures *Departures
	// Protobuf makes the calls of a generated typed client ask for
	// protobuf whatever its configured content type (Requests.Protobuf).
	Protobuf bool
	// Strip, if it leaves anything out, makes the calls of a generated
	// typed client of a built-in type decode protobuf responses without
	// it (Requests.Stripped): for a lean cache, which would drop it.
	Strip Strip
	// PagedFallback makes ModeAuto's LIST, when the informer does not
	// stream, a consistent paged one, as ModeConsistentList's: for a lean,
	// projected (KeepFields) or metadata-only cache, whose peak then
	// follows the transformed pages instead of one whole
	// resourceVersion=0 response.
	PagedFallback bool
	// Discovery, if set, makes the informer follow the cluster: wait for
	// a resource the server does not serve instead of retrying
	// (absent.go), and retry forbidden requests itself (forbidden.go).
	Discovery Discovery
}

// Config says how to make the requests of one informer in one namespace:
// its Options, and what is wired per namespace (the namespace, the shard,
// the cache, and the hooks the calls report to).
type Config struct {
	Options
	// Namespace is passed to Requests; empty for cluster-scoped resources
	// and for all namespaces.
	Namespace string
	// Observe, if set, is told the outcome of every list and of every
	// watch it starts: nil on success. The factory's readiness uses it.
	Observe func(err error)
	// Watched, if set, is told the outcome of every watch request, once
	// it has returned: from then on the server sends every change, so the
	// factory's "synced" waits for the first one (informer.go). stream is
	// whether it asked for a watch-list stream (sendInitialEvents), which
	// stands in for the initial list.
	Watched func(err error, stream bool)
	// Count, if set, is told the outcome of every list request (list
	// true) and every watch request, for the factory's metrics: nil on
	// success. An empty shard's, which sends none, is not counted.
	Count func(list bool, err error)
	// HandedOver, if set, is told how long each shard handover took.
	HandedOver func(time.Duration)
	// Shard, if set, shards the informer: see [Sharder].
	Shard Sharder
	// Notice, if set, is told once that an informer meant to stream lists
	// instead, and why.
	Notice func(msg string)
	// Store returns the informer's cache, once it exists. A shard handover
	// (shard.go) reads from it what the informer gives up, and waits on it.
	Store func() cache.Store
	// Streams, if set, is told how the informer's watch-list streams are
	// doing, for the factory's Ready (stall.go).
	Streams *Streams
	// Absent, if set, is told each time the resource stops (true) or
	// starts again (false) being served, as Options.Discovery finds.
	Absent func(absent bool)
	// Forbidden, if set, is told the error when the source's requests
	// become forbidden, and nil when one succeeds again (forbidden.go).
	Forbidden func(err error)
	// Budget, if set, is the informer's memory budget, which its lists
	// and watches keep to (budget.go).
	Budget *budget.Account
	// Released, if set, is told how many objects a budget stop took out
	// of the cache, past its handlers (budget.go).
	Released func(n int)
}

// New returns the ListWatch for cfg.
func New(cfg Config) *cache.ListWatch {
	// fo is nil unless the informer follows the cluster (follow.go).
	var fo *follower
	var ab *absence
	if cfg.Discovery != nil {
		fo = newFollower(&cfg)
		ab = &fo.absence
	}
	prepare := func(verb string, opts *metav1.ListOptions) (Requests, error) {
		if cfg.Requests == nil {
			return Requests{}, fmt.Errorf("informers: cannot %s %s: %s", verb, cfg.Resource, cfg.Missing)
		}
		if cfg.Tweak != nil {
			cfg.Tweak(opts)
		}
		r := cfg.Requests(cfg.Namespace)
		switch {
		case cfg.Strip.Any():
			accept := ""
			if cfg.Protobuf {
				accept = AcceptProtobuf
			}
			if p, ok := r.Stripped(cfg.Resource.Resource, accept, cfg.Strip); ok {
				r = p
			}
		case cfg.Protobuf:
			if p, ok := r.Protobuf(cfg.Resource.Resource); ok {
				r = p
			}
		}
		if fo != nil {
			r = fo.wrap(r)
		}
		return r, nil
	}
	observe := func(err error) {
		if cfg.Observe != nil {
			cfg.Observe(err)
		}
	}
	// fake is whether the test kit (internal/settle) may follow the
	// informer: asked once, so that over a real client none of the kit's
	// code runs per watch or per event.
	fake := settle.IsFake(cfg.Client)
	// sh is nil for an informer that is not sharded (shard.go).
	var sh *sharded
	if cfg.Shard != nil {
		sh = &sharded{cfg: &cfg, markers: fake}
	}
	mode := &listMode{cfg: &cfg, absence: ab, fake: fake}
	bud := newBudgeted(&cfg)
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		r, err := prepare("list", &opts)
		if err != nil {
			observe(err)
			return nil, err
		}
		waited, err := bud.beforeList(ctx, &opts)
		if err != nil {
			return nil, err // the informer stops: its context is done
		}
		var cur Shard
		if sh != nil {
			var empty runtime.Object
			if cur, empty = sh.beforeList(&opts); empty != nil {
				// An empty shard: no request, so no outcome to observe.
				return empty, nil
			}
		}
		mode.list(&opts, waited)
		obj, err := r.List(ctx, opts)
		requestErr := err
		if err == nil && sh != nil {
			err = sh.afterList(cur, obj, opts.ShardSelector)
		}
		if err == nil && cfg.Pretransform != nil {
			err = cfg.Pretransform.page(cfg.Namespace, opts.Continue == "", obj)
		}
		if err == nil {
			if err = bud.page(opts.Continue == "", obj); err != nil {
				// Stopped over its budget: the pages gathered so far
				// are dropped, and the next list waits (budget.go).
				cfg.count(true, requestErr)
				return nil, err
			}
		}
		// Observed before counted: whoever sees the count (a metric, a
		// test) finds Ready already reporting the error.
		observe(err)
		cfg.count(true, requestErr)
		return obj, err
	}
	watchFunc := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		r, err := prepare("watch", &opts)
		if err != nil {
			observe(err)
			return nil, err
		}
		stream := opts.SendInitialEvents != nil && *opts.SendInitialEvents
		if err := bud.stoppedWatch(); err != nil {
			// Stopped over its budget: a stream falls back to the
			// list, which waits (budget.go).
			return nil, err
		}
		if stream && mode.abandoned.Load() {
			// The stream stalled once (stall.go): the reflector lists.
			return nil, errStreamAbandoned
		}
		if cfg.Pretransform != nil && stream {
			cfg.Pretransform.streamStarted(cfg.Namespace)
		}
		// opened is told that the watch runs: the outcome of its request,
		// or nil for an empty shard's, which sends none.
		opened := func(err error) {
			mode.watched(opts, err)
			if cfg.Watched != nil {
				cfg.Watched(err, opts.SendInitialEvents != nil && *opts.SendInitialEvents)
			}
		}
		watched := func(err error) {
			observe(err)
			cfg.count(false, err)
			opened(err)
		}
		var w watch.Interface
		if sh != nil {
			w, err = sh.watch(ctx, r, opts, watched, opened, observe)
		} else {
			w, err = r.Watch(ctx, opts)
			watched(err)
		}
		if err == nil && stream {
			w = mode.watchStream(ctx, w)
		}
		if err == nil {
			w = bud.watch(ctx, w, stream)
		}
		return w, err
	}
	// Only the context forms: cache.ListWatch's List and Watch fall back
	// to them with context.Background().
	return &cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFunc}
}

// count tells Count, if set, a request's outcome.
func (c *Config) count(list bool, err error) {
	if c.Count != nil {
		c.Count(list, err)
	}
}
