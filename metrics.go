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
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/meter"
)

// This file holds the factories' metrics: the provider interface a metrics
// library implements (the Prometheus one is the module
// github.com/kubeinformers/informers/metrics), the process-wide provider,
// and the metrics each informer and each sharded factory gets from it when
// it starts. internal/meter holds the provider (Provider), the factory's
// name and shard metrics (Factory), and reports into the metrics.
//
// Without a provider nothing here runs: no handler is added, no handler or
// transform is wrapped for metrics, nothing is allocated. (Every informer's
// transform ends with the memory estimate's sampling, internal/memsize,
// which MemoryStatus reads with or without a provider.) The provider in force when an
// informer starts is the one it reports into, for its whole life; a factory
// made before SetMetricsProvider reports as well as one made after.

// GaugeMetric is a gauge that goes up and down by one.
type GaugeMetric interface {
	Inc()
	Dec()
}

// SettableGaugeMetric is a gauge that is set to a value.
type SettableGaugeMetric interface {
	Set(float64)
}

// CounterMetric is a counter.
type CounterMetric interface {
	Inc()
}

// HistogramMetric records observations, such as durations in seconds.
type HistogramMetric interface {
	Observe(float64)
}

// MetricsID names the informer a metric is about. Its fields are the
// bounded labels of every informer metric: there is no per-object or
// per-namespace label.
type MetricsID struct {
	// Factory names the factory: the name given with client-go's
	// WithInformerName, or else a process-unique default
	// ("kubeinformers-factory-1", ...). Two factories of one process never
	// share it.
	Factory string
	// Form tells apart the informers one factory holds for one resource
	// (typed or dynamic, and metadata).
	Form Form
	// Resource is the resource listed and watched. For an informer built
	// by InformerFor for a type this module does not know, Resource holds
	// the Go type, such as "*v1.Widget", and Group and Version are empty.
	Resource schema.GroupVersionResource
}

// The values of the event type and result arguments of [MetricsProvider].
const (
	MetricsEventAdd    = meter.EventAdd
	MetricsEventUpdate = meter.EventUpdate
	MetricsEventDelete = meter.EventDelete

	MetricsResultSuccess = meter.ResultSuccess
	MetricsResultError   = meter.ResultError
)

// MetricsProvider makes the metrics the factories report, in the way of
// client-go's workqueue.MetricsProvider: one constructor per metric and
// label set, each called once per informer (or per factory) when it
// starts. Calls for a label set that was deleted return fresh metrics,
// starting from zero. A provider must be safe for concurrent use.
//
// The module github.com/kubeinformers/informers/metrics implements it for
// Prometheus; install a provider with [SetMetricsProvider].
type MetricsProvider interface {
	// NewObjectsMetric counts the objects in the informer's cache.
	NewObjectsMetric(id MetricsID) GaugeMetric
	// NewSyncedMetric is 1 once the informer has synced, else 0.
	NewSyncedMetric(id MetricsID) SettableGaugeMetric
	// NewSyncDurationMetric is the seconds from the informer's start to
	// its sync.
	NewSyncDurationMetric(id MetricsID) SettableGaugeMetric
	// NewEventsMetric counts the changes the cache applied, by eventType:
	// MetricsEventAdd, MetricsEventUpdate or MetricsEventDelete. A resync
	// is not a change.
	NewEventsMetric(id MetricsID, eventType string) CounterMetric
	// NewListsMetric counts list requests by result: MetricsResultSuccess
	// or MetricsResultError. Each page is a request.
	NewListsMetric(id MetricsID, result string) CounterMetric
	// NewWatchesMetric counts watch requests by result.
	NewWatchesMetric(id MetricsID, result string) CounterMetric
	// NewHandlerLagMetric observes, for every event and every handler
	// added while the provider is installed, the seconds from the event's
	// arrival in the informer's queue to the handler's call.
	NewHandlerLagMetric(id MetricsID) HistogramMetric
	// DeleteInformerMetrics drops every series of the informer: it was
	// removed (RemoveInformer) or its factory shut down.
	DeleteInformerMetrics(id MetricsID)

	// NewShardOwnedMetric is the fraction of the hash space that the
	// factory's membership assigns to it, from 0 to 1.
	NewShardOwnedMetric(factory string) SettableGaugeMetric
	// NewShardMembersMetric is the number of members the hash space is
	// divided among.
	NewShardMembersMetric(factory string) SettableGaugeMetric
	// NewShardHandoversMetric counts the changes of the factory's ranges.
	NewShardHandoversMetric(factory string) CounterMetric
	// NewShardHandoverDurationMetric observes the seconds each informer
	// took to move its watch to new ranges.
	NewShardHandoverDurationMetric(factory string) HistogramMetric
	// DeleteShardMetrics drops the factory's shard series.
	DeleteShardMetrics(factory string)
}

// ResourceVersionMetricsProvider is what a [MetricsProvider] also
// implements to report [Factory.WaitForResourceVersion] and the waits of
// the readyourwrites package; the Prometheus binding (the metrics module)
// does. It is a separate interface so that a provider written before it
// still compiles.
type ResourceVersionMetricsProvider interface {
	// NewResourceVersionWaitMetric observes, for every wait that reached
	// the informer, the seconds the wait took.
	NewResourceVersionWaitMetric(id MetricsID) HistogramMetric
	// NewResourceVersionWaitErrorsMetric counts the waits that ended in
	// an error at the informer: ctx done, a version that cannot be
	// ordered, the informer stopped.
	NewResourceVersionWaitErrorsMetric(id MetricsID) CounterMetric
}

// APIDiscoveryMetricsProvider is what a [MetricsProvider] also implements
// to report the informers that wait for their resource under
// [WithAPIDiscovery]; the Prometheus binding (the metrics module) does.
type APIDiscoveryMetricsProvider interface {
	// NewWaitingForResourceMetric is 1 while the informer waits for its
	// resource, which the server does not serve, else 0.
	NewWaitingForResourceMetric(id MetricsID) SettableGaugeMetric
}

// MemoryMetricsProvider is what a [MetricsProvider] also implements to
// report the estimate of the heap each informer's cache retains
// ([Factory.MemoryStatus]); the Prometheus binding (the metrics module)
// does.
type MemoryMetricsProvider interface {
	// NewBytesMetric is the estimate of the heap bytes the cache retains.
	NewBytesMetric(id MetricsID) SettableGaugeMetric
}

// BudgetMetricsProvider is what a [MetricsProvider] also implements to
// report the informers stopped over a memory budget ([WithMemoryBudget]);
// the Prometheus binding does.
type BudgetMetricsProvider interface {
	NewOverBudgetMetric(id MetricsID) SettableGaugeMetric
}

// metricsProvider is the process-wide provider; none means off.
var metricsProvider meter.Provider[MetricsProvider]

// SetMetricsProvider makes every factory of the process report into p:
// each informer that starts afterwards, in a factory made before or after,
// reports into it until it stops. A nil p turns metrics off for informers
// started afterwards. Event handlers report their lag only when added
// after the provider was set.
//
// The Prometheus binding calls it (metrics.Register); call it yourself only
// for another metrics library.
func SetMetricsProvider(p MetricsProvider) { metricsProvider.Set(p) }

// startMetrics starts e's metrics if a provider is installed; the caller
// holds f.lock and runs e right after. It returns a stop function to call
// when e's informer has returned, or nil.
func (f *sharedInformerFactory) startMetrics(e *entry) func() {
	p, ok := metricsProvider.Get()
	if !ok {
		return nil
	}
	id := MetricsID{Factory: f.metrics.Name(f.informerName), Form: e.id.Form, Resource: e.id.Resource}
	if id.Resource.Resource == "" && e.id.Type != nil {
		id.Resource = schema.GroupVersionResource{Resource: e.id.Type.String()}
	}
	// internal/meter/provider.go, internal/informer/run.go
	return e.hooks.StartMetrics(meter.NewInformer(p, id), e.informer, e.base, e.refused != nil, e.id)
}

// startShardMetrics starts the factory's shard metrics if a provider is
// installed; the caller holds f.lock.
func (f *sharedInformerFactory) startShardMetrics() *meter.Shard {
	p, ok := metricsProvider.Get()
	if !ok {
		return nil
	}
	return f.metrics.StartShard(meter.NewShard(p, f.metrics.Name(f.informerName)))
}
