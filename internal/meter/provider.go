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

package meter

// This file asks a metrics provider for the metrics of one informer or one
// sharded factory. The provider is the root's MetricsProvider (Constructors), seen through
// type parameters so that this package needs none of the root's types: ID
// is MetricsID, and G, S, C and H its gauge, settable gauge, counter and
// histogram interfaces.

// The values of the event type and result arguments of a provider's
// constructors (the root's MetricsEvent* and MetricsResult* constants).
const (
	EventAdd      = "add"
	EventUpdate   = "update"
	EventDelete   = "delete"
	ResultSuccess = "success"
	ResultError   = "error"
)

// Constructors is the root's MetricsProvider: what NewInformer and
// NewShard ask.
type Constructors[ID any, G Gauge, S Settable, C Counter, H Histogram] interface {
	NewObjectsMetric(id ID) G
	NewSyncedMetric(id ID) S
	NewSyncDurationMetric(id ID) S
	NewEventsMetric(id ID, eventType string) C
	NewListsMetric(id ID, result string) C
	NewWatchesMetric(id ID, result string) C
	NewHandlerLagMetric(id ID) H
	DeleteInformerMetrics(id ID)
	NewShardOwnedMetric(factory string) S
	NewShardMembersMetric(factory string) S
	NewShardHandoversMetric(factory string) C
	NewShardHandoverDurationMetric(factory string) H
	DeleteShardMetrics(factory string)
}

// NewInformer asks p for the metrics of the informer id, with those of the
// optional interfaces p also implements (the root's
// ResourceVersionMetricsProvider, APIDiscoveryMetricsProvider,
// MemoryMetricsProvider and BudgetMetricsProvider); a metric p does not
// offer stays nil, and the hooks then skip it.
func NewInformer[ID any, G Gauge, S Settable, C Counter, H Histogram](p Constructors[ID, G, S, C, H], id ID) *Informer {
	m := &Informer{
		Objects:      p.NewObjectsMetric(id),
		Synced:       p.NewSyncedMetric(id),
		SyncDuration: p.NewSyncDurationMetric(id),
		Adds:         p.NewEventsMetric(id, EventAdd),
		Updates:      p.NewEventsMetric(id, EventUpdate),
		Deletes:      p.NewEventsMetric(id, EventDelete),
		ListOK:       p.NewListsMetric(id, ResultSuccess),
		ListErr:      p.NewListsMetric(id, ResultError),
		WatchOK:      p.NewWatchesMetric(id, ResultSuccess),
		WatchErr:     p.NewWatchesMetric(id, ResultError),
		Lag:          p.NewHandlerLagMetric(id),
		Delete:       func() { p.DeleteInformerMetrics(id) },
	}
	if rp, ok := p.(interface {
		NewResourceVersionWaitMetric(id ID) H
		NewResourceVersionWaitErrorsMetric(id ID) C
	}); ok {
		m.WaitDuration, m.WaitErrors = rp.NewResourceVersionWaitMetric(id), rp.NewResourceVersionWaitErrorsMetric(id)
	}
	if ap, ok := p.(interface{ NewWaitingForResourceMetric(id ID) S }); ok {
		m.Waiting = ap.NewWaitingForResourceMetric(id)
	}
	if mp, ok := p.(interface{ NewBytesMetric(id ID) S }); ok {
		m.Bytes = mp.NewBytesMetric(id)
	}
	if bp, ok := p.(interface{ NewOverBudgetMetric(id ID) S }); ok {
		m.OverBudget = bp.NewOverBudgetMetric(id)
	}
	return m
}

// NewShard asks p for the shard metrics of the factory named factory.
func NewShard[ID any, G Gauge, S Settable, C Counter, H Histogram](p Constructors[ID, G, S, C, H], factory string) *Shard {
	return &Shard{
		Owned:    p.NewShardOwnedMetric(factory),
		Members:  p.NewShardMembersMetric(factory),
		Changes:  p.NewShardHandoversMetric(factory),
		Duration: p.NewShardHandoverDurationMetric(factory),
		Delete:   func() { p.DeleteShardMetrics(factory) },
	}
}
