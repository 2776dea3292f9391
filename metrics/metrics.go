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

// Package metrics exports the metrics of every informer factory of
// github.com/kubeinformers/informers to Prometheus. Call [Register] once,
// early in main:
//
//	if err := metrics.Register(prometheus.DefaultRegisterer); err != nil { ... }
//
// or, in a controller-runtime manager, with its
// sigs.k8s.io/controller-runtime/pkg/metrics.Registry. From then on, each
// informer that starts, in any factory of the process, made before or after,
// reports into the registry until it is removed or its factory shuts down.
//
// Every informer series has the labels factory (the name given with
// client-go's WithInformerName, else a process-unique default), group,
// version, resource, and form (typed, dynamic or metadata: one factory may
// hold a resource in two forms). There is no per-object or per-namespace
// label. The families:
//
//	kubeinformers_informer_objects                 gauge: objects in the cache
//	kubeinformers_informer_synced                  gauge: 1 once synced, else 0
//	kubeinformers_informer_sync_duration_seconds   gauge: from start to sync
//	kubeinformers_informer_events_total{type}      counter: add, update, delete applied
//	kubeinformers_informer_list_total{result}      counter: list requests, success or error
//	kubeinformers_informer_watch_total{result}     counter: watch requests, success or error
//	kubeinformers_informer_handler_lag_seconds     histogram: event arrival to handler call
//	kubeinformers_informer_rv_wait_seconds         histogram: WaitForResourceVersion and Writes.Wait calls that reached the informer
//	kubeinformers_informer_rv_wait_errors_total    counter: those waits that ended in an error at the informer
//	kubeinformers_informer_waiting_for_resource    gauge: 1 while it waits for a resource the server does not serve (WithAPIDiscovery)
//	kubeinformers_informer_bytes                   gauge: estimate of the heap its cache retains (Factory.MemoryStatus)
//
// A sharded factory (informers.WithShardMembership, WithShard or
// WithShardSelector) also reports, with the label factory only:
//
//	kubeinformers_shard_owned_ratio                 gauge: its share of the hash space, 0 to 1
//	kubeinformers_shard_members                     gauge: members the space is divided among
//	kubeinformers_shard_handovers_total             counter: changes of its ranges
//	kubeinformers_shard_handover_duration_seconds   histogram: one informer's handover
//
// The module also holds a Grafana dashboard (dashboard.json) and alert rules
// (alerts.yaml, a PrometheusRule) built on these names.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	informers "github.com/kubeinformers/informers"
)

var (
	informerLabels = []string{"factory", "group", "version", "resource", "form"}
	shardLabels    = []string{"factory"}

	objects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_informer_objects",
		Help: "Number of objects in the informer's cache.",
	}, informerLabels)
	synced = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_informer_synced",
		Help: "Whether the informer has synced: 1 once its initial list is in the cache and its first watch has returned, else 0.",
	}, informerLabels)
	syncDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_informer_sync_duration_seconds",
		Help: "Seconds from the informer's start to its first sync; absent until it has synced.",
	}, informerLabels)
	events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubeinformers_informer_events_total",
		Help: "Total number of changes the informer's cache applied, by type (add, update, delete); resyncs are not counted.",
	}, append(informerLabels[:len(informerLabels):len(informerLabels)], "type"))
	lists = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubeinformers_informer_list_total",
		Help: "Total number of list requests the informer sent, one per page, by result (success, error).",
	}, append(informerLabels[:len(informerLabels):len(informerLabels)], "result"))
	watches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubeinformers_informer_watch_total",
		Help: "Total number of watch requests the informer sent, by result (success, error).",
	}, append(informerLabels[:len(informerLabels):len(informerLabels)], "result"))
	handlerLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubeinformers_informer_handler_lag_seconds",
		Help:    "Seconds from an event's arrival in the informer's queue to each event handler's call.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms to 16 s
	}, informerLabels)

	rvWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubeinformers_informer_rv_wait_seconds",
		Help:    "Seconds a read-your-writes wait (WaitForResourceVersion, Writes.Wait) took, for each informer it waited on.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18), // 0.5 ms to 65 s: a bookmark comes about once a minute
	}, informerLabels)
	rvWaitErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubeinformers_informer_rv_wait_errors_total",
		Help: "Total number of read-your-writes waits that ended in an error at the informer: context done, a version that cannot be ordered, the informer stopped.",
	}, informerLabels)
	overBudget = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_informer_over_budget",
		Help: "1 while the informer is stopped over its memory budget (informers.WithMemoryBudget, ResourceOptions.MemoryBudget), else 0.",
	}, informerLabels)
	waitingForResource = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_informer_waiting_for_resource",
		Help: "Whether the informer waits for its resource, which the server does not serve (WithAPIDiscovery): 1 while it waits, else 0.",
	}, informerLabels)
	cacheBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_informer_bytes",
		Help: "Estimate of the heap bytes the informer's cache retains: its objects times the estimated bytes per object (sampled as they enter the cache, store overhead included).",
	}, informerLabels)

	shardOwned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_shard_owned_ratio",
		Help: "Fraction of the shard hash space assigned to the factory (by its membership or its fixed shard), from 0 to 1.",
	}, shardLabels)
	shardMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubeinformers_shard_members",
		Help: "Number of members the shard hash space is divided among, as the factory sees it.",
	}, shardLabels)
	shardHandovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubeinformers_shard_handovers_total",
		Help: "Total number of changes of the factory's shard ranges.",
	}, shardLabels)
	shardHandoverDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubeinformers_shard_handover_duration_seconds",
		Help:    "Seconds one informer took to move its watch to new shard ranges.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 13), // 5 ms to 20 s
	}, shardLabels)

	collectors = []prometheus.Collector{
		objects, synced, syncDuration, events, lists, watches, handlerLag, rvWait, rvWaitErrors, waitingForResource, overBudget, cacheBytes,
		shardOwned, shardMembers, shardHandovers, shardHandoverDuration,
	}
)

// Register registers the informer metrics with reg and makes every
// informer factory of the process report into them (see the package
// documentation). It can be called again, with the same or another
// registerer: the metrics are registered with each. It returns an error if
// reg refuses them, for example because other collectors of the same names
// are registered; metrics already registered with reg are not an error.
func Register(reg prometheus.Registerer) error {
	if reg == nil {
		return errors.New("metrics: Register: the prometheus.Registerer is nil")
	}
	var errs []error
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) && already.ExistingCollector == c {
				continue
			}
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	informers.SetMetricsProvider(provider{})
	return nil
}

// provider implements informers.MetricsProvider with the collectors above.
type provider struct{}

var (
	_ informers.MetricsProvider                = provider{}
	_ informers.ResourceVersionMetricsProvider = provider{}
	_ informers.APIDiscoveryMetricsProvider    = provider{}
	_ informers.MemoryMetricsProvider          = provider{}
)

func informerValues(id informers.MetricsID, extra ...string) []string {
	return append([]string{id.Factory, id.Resource.Group, id.Resource.Version, id.Resource.Resource, string(id.Form)}, extra...)
}

func informerLabelSet(id informers.MetricsID) prometheus.Labels {
	return prometheus.Labels{
		"factory": id.Factory, "group": id.Resource.Group, "version": id.Resource.Version,
		"resource": id.Resource.Resource, "form": string(id.Form),
	}
}

func (provider) NewObjectsMetric(id informers.MetricsID) informers.GaugeMetric {
	return objects.WithLabelValues(informerValues(id)...)
}

func (provider) NewSyncedMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return synced.WithLabelValues(informerValues(id)...)
}

// NewSyncDurationMetric creates the series on the first Set, so that an
// informer that has not synced has no sync duration rather than 0.
func (provider) NewSyncDurationMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return lazyGauge{vec: syncDuration, values: informerValues(id)}
}

func (provider) NewEventsMetric(id informers.MetricsID, eventType string) informers.CounterMetric {
	return events.WithLabelValues(informerValues(id, eventType)...)
}

func (provider) NewListsMetric(id informers.MetricsID, result string) informers.CounterMetric {
	return lists.WithLabelValues(informerValues(id, result)...)
}

func (provider) NewWatchesMetric(id informers.MetricsID, result string) informers.CounterMetric {
	return watches.WithLabelValues(informerValues(id, result)...)
}

func (provider) NewHandlerLagMetric(id informers.MetricsID) informers.HistogramMetric {
	return handlerLag.WithLabelValues(informerValues(id)...)
}

func (provider) NewResourceVersionWaitMetric(id informers.MetricsID) informers.HistogramMetric {
	return rvWait.WithLabelValues(informerValues(id)...)
}

func (provider) NewResourceVersionWaitErrorsMetric(id informers.MetricsID) informers.CounterMetric {
	return rvWaitErrors.WithLabelValues(informerValues(id)...)
}

func (provider) NewWaitingForResourceMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return waitingForResource.WithLabelValues(informerValues(id)...)
}

func (provider) NewBytesMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return cacheBytes.WithLabelValues(informerValues(id)...)
}

func (provider) NewOverBudgetMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return overBudget.WithLabelValues(informerValues(id)...)
}

func (provider) DeleteInformerMetrics(id informers.MetricsID) {
	labels := informerLabelSet(id)
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{objects, synced, syncDuration, events, lists, watches, handlerLag, rvWait, rvWaitErrors, waitingForResource, overBudget, cacheBytes} {
		v.DeletePartialMatch(labels)
	}
}

func (provider) NewShardOwnedMetric(factory string) informers.SettableGaugeMetric {
	return shardOwned.WithLabelValues(factory)
}

func (provider) NewShardMembersMetric(factory string) informers.SettableGaugeMetric {
	return shardMembers.WithLabelValues(factory)
}

func (provider) NewShardHandoversMetric(factory string) informers.CounterMetric {
	return shardHandovers.WithLabelValues(factory)
}

func (provider) NewShardHandoverDurationMetric(factory string) informers.HistogramMetric {
	return shardHandoverDuration.WithLabelValues(factory)
}

func (provider) DeleteShardMetrics(factory string) {
	shardOwned.DeleteLabelValues(factory)
	shardMembers.DeleteLabelValues(factory)
	shardHandovers.DeleteLabelValues(factory)
	shardHandoverDuration.DeleteLabelValues(factory)
}

// lazyGauge is a gauge series made on its first Set.
type lazyGauge struct {
	vec    *prometheus.GaugeVec
	values []string
}

func (g lazyGauge) Set(v float64) { g.vec.WithLabelValues(g.values...).Set(v) }
