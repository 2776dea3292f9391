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

// Package served tells whether the API server serves a resource, from
// discovery, and waits until it does. The factory's informers under
// WithAPIDiscovery ask it when a list or watch answers 404 Not Found
// (internal/listwatch/absent.go).
//
// # Why discovery, and only while something waits
//
// A resource that goes away (its CRD deleted, a version no longer served,
// an aggregated API removed) is noticed by the informer itself, at no
// cost: the server ends the watch (a CRD's storage is torn down about a
// second after the CRD goes) and the next request answers 404. A 404 can
// also mean something else (a misspelt resource, a request the server
// routed elsewhere), so it is confirmed with one discovery request for the
// resource's group version.
//
// A resource that comes back sends nothing to a client that is not
// watching it. A watch on CustomResourceDefinitions would say so at once,
// but needs a grant to list them that many controllers do not have, says
// nothing about aggregated APIs, and caches every CRD's schema. Here, the
// informers waiting for resources of one group version share one poller,
// which asks discovery for that group version alone (a few hundred bytes).
//
// # How often discovery is asked
//
// While nothing waits, no request is made. While something waits, a
// resource is seen within 5 s of being served. The requests for one group
// version are paced, across pollers: a poller asks no sooner than an
// interval after the group version's last request (Served's included),
// and the interval doubles at each request from 500 ms up to 5 s; it
// starts again at 500 ms only after 10 s without a request. So a group
// version costs at most one request every 5 s once the interval has
// grown, however often informers stop and start waiting: a resource that
// discovery lists but whose requests still answer 404 makes its informer
// leave and wait again at each retry, and gets one request every 5 s, not
// one per retry. Served itself asks at once: it confirms a 404 that just
// happened, once each time a resource goes (internal/listwatch/absent.go).
package served

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/wake"
)

// Discovery is the part of a discovery client that Checker uses.
type Discovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// Intervals between the discovery requests for a group version: the
// first, and the most it grows to. After twice MaxInterval without a
// request the interval starts again at FirstInterval.
const (
	FirstInterval = 500 * time.Millisecond
	MaxInterval   = 5 * time.Second
)

// Checker answers for one server. Its zero value is not usable: use New.
type Checker struct {
	discovery Discovery
	first     time.Duration
	max       time.Duration

	mu      sync.Mutex
	pollers map[schema.GroupVersion]*poller
	// paces are the group versions asked so far: one entry each, a few
	// dozen at most.
	paces map[schema.GroupVersion]*pace
}

// pace is when a group version was last asked, and how long after that a
// poller may ask again.
type pace struct {
	last time.Time
	gap  time.Duration
}

// New returns a Checker that asks d, polling at FirstInterval growing to
// MaxInterval; tests may pass shorter intervals with NewWithIntervals.
func New(d Discovery) *Checker { return NewWithIntervals(d, FirstInterval, MaxInterval) }

// NewWithIntervals is New with the poll intervals given.
func NewWithIntervals(d Discovery, first, maxInterval time.Duration) *Checker {
	return &Checker{discovery: d, first: first, max: maxInterval, pollers: map[schema.GroupVersion]*poller{}, paces: map[schema.GroupVersion]*pace{}}
}

// Served reports whether the server serves gvr now, with one discovery
// request. A group version the server does not know is not served; an
// error is any other failure, when nothing can be said.
func (c *Checker) Served(gvr schema.GroupVersionResource) (bool, error) {
	resources, err := c.resources(gvr.GroupVersion())
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(resources, named(gvr.Resource)), nil
}

// named matches the resource called name.
func named(name string) func(metav1.APIResource) bool {
	return func(r metav1.APIResource) bool { return r.Name == name }
}

// ofKind matches a resource, not a subresource, of kind.
func ofKind(kind string) func(metav1.APIResource) bool {
	return func(r metav1.APIResource) bool { return r.Kind == kind && !strings.Contains(r.Name, "/") }
}

// resources asks discovery, at once, for the resources the server serves
// in gv: none, without an error, for a group version it does not serve.
func (c *Checker) resources(gv schema.GroupVersion) ([]metav1.APIResource, error) {
	c.asked(gv, time.Now())
	list, err := c.discovery.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", gv, err)
	}
	return list.APIResources, nil
}

// asked records a request for gv made at now, and sets the interval
// before the next (the package's comment says how it grows).
func (c *Checker) asked(gv schema.GroupVersion, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.paces[gv]
	switch {
	case p == nil:
		p = &pace{gap: c.first}
		c.paces[gv] = p
	case now.Sub(p.last) >= 2*c.max:
		p.gap = c.first
	default:
		p.gap = min(2*p.gap, c.max)
	}
	p.last = now
}

// delay is how long a poller waits, from now, before it asks for gv.
func (c *Checker) delay(gv schema.GroupVersion, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.paces[gv]
	if p == nil {
		return 0
	}
	return max(0, p.last.Add(p.gap).Sub(now))
}

// Wait returns nil once discovery says gvr is served, or ctx's cause when
// ctx is done first. Waiters of one group version share one poller; it
// stops when the last of them returns.
func (c *Checker) Wait(ctx context.Context, gvr schema.GroupVersionResource) error {
	return c.wait(ctx, gvr.GroupVersion(), named(gvr.Resource))
}

// WaitKind is Wait for a resource of gvk, for a caller that knows the kind
// and not yet its resource (a REST mapper does not know a kind before it
// is served).
func (c *Checker) WaitKind(ctx context.Context, gvk schema.GroupVersionKind) error {
	return c.wait(ctx, gvk.GroupVersion(), ofKind(gvk.Kind))
}

func (c *Checker) wait(ctx context.Context, gv schema.GroupVersion, match func(metav1.APIResource) bool) error {
	p := c.join(gv)
	defer c.leave(p)
	// Only an answer given after Wait was called counts: a caller whose
	// request just answered 404 must not take an older answer for a yes
	// and retry at once, over and over.
	answered := p.answered.Next()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-answered:
		}
		answered = p.answered.Next()
		p.mu.Lock()
		served := slices.ContainsFunc(p.resources, match)
		p.mu.Unlock()
		if served {
			return nil
		}
	}
}

// poller asks discovery for one group version while it has waiters. Each
// answer wakes the waiters to look at resources.
type poller struct {
	gv       schema.GroupVersion
	waiters  int // guarded by Checker.mu
	stop     chan struct{}
	answered wake.Signal

	mu        sync.Mutex
	resources []metav1.APIResource
}

func (c *Checker) join(gv schema.GroupVersion) *poller {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pollers[gv]
	if p == nil {
		p = &poller{gv: gv, stop: make(chan struct{})}
		c.pollers[gv] = p
		go c.poll(p)
	}
	p.waiters++
	return p
}

func (c *Checker) leave(p *poller) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.waiters--; p.waiters == 0 {
		delete(c.pollers, p.gv)
		close(p.stop)
	}
}

// poll asks at the pace of the group version's requests (asked, delay)
// until stopped. A failed request keeps the last answer: the waiters go
// on waiting.
func (c *Checker) poll(p *poller) {
	for {
		t := time.NewTimer(c.delay(p.gv, time.Now()))
		select {
		case <-p.stop:
			t.Stop()
			return
		case <-t.C:
		}
		select {
		case <-p.stop:
			return // the last waiter left as the timer fired
		default:
		}
		if resources, err := c.resources(p.gv); err == nil {
			p.mu.Lock()
			p.resources = resources
			p.mu.Unlock()
			p.answered.Broadcast()
		}
	}
}
