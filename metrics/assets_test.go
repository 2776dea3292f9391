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
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"
)

// exported returns the series names the module exports: each family's
// name, and a histogram's _bucket, _sum and _count.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 1)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fq.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			names[m[1]] = true
			if _, ok := c.(*prometheus.HistogramVec); ok {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[m[1]+s] = true
				}
			}
		}
	}
	return names
}

var metricName = regexp.MustCompile(`\bkubeinformers_[a-z_]+`)

// checkQuery fails unless expr names at least one metric and only
// exported ones, and its brackets balance.
func checkQuery(t *testing.T, where, expr string, names map[string]bool) {
	t.Helper()
	found := metricName.FindAllString(expr, -1)
	if len(found) == 0 {
		t.Errorf("%s: %q names no kubeinformers metric", where, expr)
	}
	for _, n := range found {
		if !names[n] {
			t.Errorf("%s: %q names %s, which the module does not export", where, expr, n)
		}
	}
	for _, pair := range []string{"()", "{}", "[]"} {
		if strings.Count(expr, pair[:1]) != strings.Count(expr, pair[1:]) {
			t.Errorf("%s: %q: unbalanced %s", where, expr, pair)
		}
	}
}

// exprs collects the values of every "expr" and "query" key in v.
func exprs(v any, key string, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == key) {
				*out = append(*out, s)
				continue
			}
			exprs(x, key, out)
		}
	case []any:
		for _, x := range v {
			exprs(x, key, out)
		}
	}
}

// TestDashboard: every query of dashboard.json, panels and template
// variables, names metrics the module exports, and every panel the issue
// asks for is there.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var queries []string
	exprs(d, "definition", &queries)
	if len(queries) < 10 {
		t.Fatalf("dashboard.json has %d queries, want at least 10: %q", len(queries), queries)
	}
	names := exported(t)
	used := map[string]bool{}
	for _, q := range queries {
		checkQuery(t, "dashboard.json", q, names)
		for _, n := range metricName.FindAllString(q, -1) {
			used[strings.TrimSuffix(n, "_bucket")] = true
		}
	}
	for _, want := range []string{
		"kubeinformers_informer_objects", "kubeinformers_informer_synced", "kubeinformers_informer_sync_duration_seconds",
		"kubeinformers_informer_list_total", "kubeinformers_informer_watch_total", "kubeinformers_informer_handler_lag_seconds",
		"kubeinformers_shard_owned_ratio", "kubeinformers_shard_members", "kubeinformers_informer_bytes",
	} {
		if !used[want] {
			t.Errorf("dashboard.json shows nothing of %s", want)
		}
	}
}

// TestAlerts: alerts.yaml is a PrometheusRule whose expressions name
// metrics the module exports, with the four alerts the docs promise.
func TestAlerts(t *testing.T) {
	raw, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
					For   string `json:"for"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" {
		t.Errorf("alerts.yaml is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", rule.APIVersion, rule.Kind)
	}
	names := exported(t)
	alerts := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			checkQuery(t, r.Alert, r.Expr, names)
			if r.For == "" {
				t.Errorf("%s has no for:", r.Alert)
			}
			alerts[r.Alert] = r.Expr + " for " + r.For
		}
	}
	for alert, want := range map[string]string{
		"KubeinformersInformerNotSynced":      "kubeinformers_informer_synced == 0 for 5m",
		"KubeinformersInformerListErrors":     `kubeinformers_informer_list_total{result="error"}`,
		"KubeinformersInformerWatchErrors":    `kubeinformers_informer_watch_total{result="error"}`,
		"KubeinformersHandlerLagHigh":         "histogram_quantile(0.99,",
		"KubeinformersShardOwnershipNotWhole": "(kubeinformers_shard_owned_ratio) - 1",
	} {
		if !strings.Contains(alerts[alert], want) {
			t.Errorf("alert %s = %q, want it to contain %q", alert, alerts[alert], want)
		}
	}
}
