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

package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	informers "github.com/kubeinformers/informers"
)

// families returns the names of the kubeinformers families g gathers, and
// the value of the objects gauge of factory.
func families(t *testing.T, g prometheus.Gatherer, factory string) (map[string]bool, float64) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names, objects := map[string]bool{}, -1.0
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "kubeinformers_") {
			continue
		}
		names[mf.GetName()] = true
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "factory" && l.GetValue() == factory && mf.GetName() == "kubeinformers_informer_objects" {
					objects = m.GetGauge().GetValue()
				}
			}
		}
	}
	return names, objects
}

// TestRegisterers: Register works with prometheus.DefaultRegisterer and
// with controller-runtime's metrics.Registry, through the Registerer
// interface, and every registry it was given sees the factories.
func TestRegisterers(t *testing.T) {
	for name, reg := range map[string]struct {
		r prometheus.Registerer
		g prometheus.Gatherer
	}{
		"DefaultRegisterer":           {prometheus.DefaultRegisterer, prometheus.DefaultGatherer},
		"controller-runtime Registry": {ctrlmetrics.Registry, ctrlmetrics.Registry},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Register(reg.r); err != nil {
				t.Fatal(err)
			}
			// Again: already registered is not an error.
			if err := Register(reg.r); err != nil {
				t.Fatalf("second Register: %v", err)
			}
			factory := "registerer-" + strings.ReplaceAll(name, " ", "-")
			f, err := informers.New(fake.NewClientset(pods(4)...), 0, named(t, factory))
			if err != nil {
				t.Fatal(err)
			}
			f.Core().V1().Pods().Informer()
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); f.Shutdown() }()
			f.Start(ctx.Done())
			if err := f.WaitForCacheSyncWithContext(ctx).Err; err != nil {
				t.Fatal(err)
			}
			for _, g := range []prometheus.Gatherer{reg.g, registry} {
				var objects float64
				eventually(t, "4 objects", func() bool {
					_, objects = families(t, g, factory)
					return objects == 4
				})
			}
			names, _ := families(t, reg.g, factory)
			for _, want := range []string{"kubeinformers_informer_objects", "kubeinformers_informer_synced", "kubeinformers_informer_list_total"} {
				if !names[want] {
					t.Errorf("%s missing from the registry", want)
				}
			}
		})
	}
}

// TestRegisterErrors: a nil registerer, and one that already holds other
// collectors of the same names, are errors that say so.
func TestRegisterErrors(t *testing.T) {
	if err := Register(nil); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("Register(nil) = %v, want an error naming the nil registerer", err)
	}
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubeinformers_informer_objects", Help: "someone else's"}))
	if err := Register(other); err == nil || !strings.Contains(err.Error(), "kubeinformers_informer_objects") {
		t.Errorf("Register(a registry with a clashing collector) = %v, want an error naming the metric", err)
	}
}
