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

package crcache

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/bridge"
)

var (
	podGVK  = corev1.SchemeGroupVersion.WithKind("Pod")
	nodeGVK = corev1.SchemeGroupVersion.WithKind("Node")
)

// mapper knows Pods (namespaced) and Nodes (cluster-scoped), and their
// lists, as client-go's discovery mapper does.
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	m.Add(podGVK, meta.RESTScopeNamespace)
	m.Add(nodeGVK, meta.RESTScopeRoot)
	m.Add(corev1.SchemeGroupVersion.WithKind("PodList"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("NodeList"), meta.RESTScopeRoot)
	return m
}

func resolveForTest(t *testing.T, opts cache.Options, s bridge.Settings) *config {
	t.Helper()
	opts.Mapper = mapper()
	opts.Scheme = scheme.Scheme
	c, err := resolveOptions(&rest.Config{Host: "https://example.invalid"}, opts, nil, s)
	if err != nil {
		t.Fatalf("resolveOptions: %v", err)
	}
	return c
}

// describe renders a kind's slots: namespaces, follows, selectors, deep
// copy, bookmarks and resync, so that precedence reads as a table.
func describe(p plan, namespaced bool) string {
	var out []string
	for _, s := range p.slots(namespaced) {
		ns := "*"
		if s.namespaces != nil {
			ns = strings.Join(s.namespaces, ",")
		}
		if s.follows {
			ns += "(follows)"
		}
		sel := func(x interface{ String() string }, isNil bool) string {
			if isNil {
				return "-"
			}
			return x.String()
		}
		out = append(out, ns+" label="+sel(s.config.label, s.config.label == nil)+" field="+sel(s.config.field, s.config.field == nil)+
			" copy="+map[bool]string{true: "no", false: "yes"}[s.config.unsafeDisableDeepCopy]+
			" bookmarks="+map[bool]string{true: "yes", false: "no"}[s.config.enableWatchBookmarks]+
			" resync="+s.config.syncPeriod.String())
	}
	return strings.Join(out, " | ")
}

func TestResolvePrecedence(t *testing.T) {
	hour := time.Hour
	tests := []struct {
		name       string
		opts       cache.Options
		settings   bridge.Settings
		gvk        schema.GroupVersionKind
		namespaced bool
		want       string
	}{{
		name:       "defaults",
		gvk:        podGVK,
		namespaced: true,
		want:       "* label=- field=- copy=yes bookmarks=yes resync=10h0m0s",
	}, {
		name: "namespaces that set nothing share one slot, which follows",
		opts: cache.Options{
			DefaultNamespaces:    map[string]cache.Config{"b": {}, "a": {}},
			DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"app": "x"}),
		},
		gvk: podGVK, namespaced: true,
		want: "a,b(follows) label=app=x field=- copy=yes bookmarks=yes resync=10h0m0s",
	}, {
		name: "a namespace with a setting of its own has its own slot; cluster-scoped kinds ignore namespaces",
		opts: cache.Options{
			DefaultNamespaces: map[string]cache.Config{"a": {}, "b": {UnsafeDisableDeepCopy: ptr.To(true)}},
			SyncPeriod:        &hour,
		},
		gvk: podGVK, namespaced: true,
		want: "b label=- field=- copy=no bookmarks=yes resync=1h0m0s | a(follows) label=- field=- copy=yes bookmarks=yes resync=1h0m0s",
	}, {
		name: "the AllNamespaces key excludes the others, and no slot follows",
		opts: cache.Options{
			DefaultNamespaces: map[string]cache.Config{cache.AllNamespaces: {}, "a": {}},
		},
		gvk: podGVK, namespaced: true,
		want: "* label=- field=metadata.namespace!=a copy=yes bookmarks=yes resync=10h0m0s | a label=- field=- copy=yes bookmarks=yes resync=10h0m0s",
	}, {
		name: "ByObject over DefaultNamespaces over Default*",
		opts: cache.Options{
			DefaultNamespaces:    map[string]cache.Config{"a": {LabelSelector: labels.SelectorFromSet(labels.Set{"ns": "a"})}, "b": {}},
			DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"global": "1"}),
			DefaultFieldSelector: fields.OneTermEqualSelector("spec.nodeName", "n1"),
			ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {
				Label:                labels.SelectorFromSet(labels.Set{"pod": "1"}),
				EnableWatchBookmarks: ptr.To(false),
			}},
		},
		gvk: podGVK, namespaced: true,
		want: "a label=ns=a field=spec.nodeName=n1 copy=yes bookmarks=no resync=10h0m0s | b(follows) label=pod=1 field=spec.nodeName=n1 copy=yes bookmarks=no resync=10h0m0s",
	}, {
		name: "ByObject's own namespaces do not follow",
		opts: cache.Options{
			DefaultNamespaces: map[string]cache.Config{"a": {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.Pod{}: {Namespaces: map[string]cache.Config{"c": {}}}},
		},
		gvk: podGVK, namespaced: true,
		want: "c label=- field=- copy=yes bookmarks=yes resync=10h0m0s",
	}, {
		name: "an empty ByObject.Namespaces caches every namespace",
		opts: cache.Options{
			DefaultNamespaces: map[string]cache.Config{"a": {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.Pod{}: {Namespaces: map[string]cache.Config{}}},
		},
		gvk: podGVK, namespaced: true,
		want: "* label=- field=- copy=yes bookmarks=yes resync=10h0m0s",
	}, {
		name: "a cluster-scoped kind has one slot of every namespace",
		opts: cache.Options{
			DefaultNamespaces: map[string]cache.Config{"a": {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.Node{}: {Label: labels.SelectorFromSet(labels.Set{"n": "1"})}},
		},
		gvk: nodeGVK, namespaced: false,
		want: "* label=n=1 field=- copy=yes bookmarks=yes resync=10h0m0s",
	}, {
		name:     "the factory options' namespaces route reads and follow",
		settings: bridge.Settings{Namespaces: []string{"x", "y"}},
		gvk:      podGVK, namespaced: true,
		want: "x,y(follows) label=- field=- copy=yes bookmarks=yes resync=10h0m0s",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := resolveForTest(t, tt.opts, tt.settings)
			if got := describe(c.plan(tt.gvk), tt.namespaced); got != tt.want {
				t.Errorf("slots:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestResolveRefusesBothWays(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	hour := time.Hour
	tests := []struct {
		name     string
		opts     cache.Options
		settings bridge.Settings
		want     []string
	}{{
		name:     "namespaces",
		opts:     cache.Options{DefaultNamespaces: map[string]cache.Config{"a": {}}},
		settings: bridge.Settings{Namespaces: []string{"b"}},
		want:     []string{"DefaultNamespaces", "WithNamespace"},
	}, {
		name:     "selectors",
		opts:     cache.Options{DefaultLabelSelector: labels.Everything()},
		settings: bridge.Settings{Tweak: func(*metav1.ListOptions) {}},
		want:     []string{"selectors", "WithTweakListOptions"},
	}, {
		name:     "transform",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: cache.TransformStripManagedFields()}}},
		settings: bridge.Settings{Transform: cache.TransformStripManagedFields()},
		want:     []string{"transform", "WithTransform"},
	}, {
		name:     "a resource's selectors",
		opts:     cache.Options{DefaultFieldSelector: fields.Everything()},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{pods: {Selectors: true}}},
		want:     []string{"WithResourceOptions(/v1, Resource=pods)", "selectors"},
	}, {
		name:     "ByObject namespaces beside the options' namespaces",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Namespaces: map[string]cache.Config{"a": {}}}}},
		settings: bridge.Settings{Namespaces: []string{"b"}},
		want:     []string{"ByObject[*v1.Pod].Namespaces", "WithNamespace"},
	}, {
		name:     "ByObject namespaces beside the resource's own namespaces",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Namespaces: map[string]cache.Config{"a": {}}}}},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{pods: {Namespaces: true}}},
		want:     []string{"ByObject[*v1.Pod]", "WithResourceOptions(/v1, Resource=pods).Namespaces"},
	}, {
		name:     "ByObject selectors beside the resource's tweak",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: labels.Everything()}}},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{pods: {Tweak: true}}},
		want:     []string{"ByObject[*v1.Pod]", "WithResourceOptions(/v1, Resource=pods)'s selectors or TweakListOptions"},
	}, {
		name:     "SyncPeriod beside a resource's ResyncPeriod",
		opts:     cache.Options{SyncPeriod: &hour},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{pods: {Resync: true}}},
		want:     []string{"Default*", "WithResourceOptions(/v1, Resource=pods).ResyncPeriod"},
	}, {
		name:     "ByObject SyncPeriod beside the resource's ResyncPeriod",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {SyncPeriod: &hour}}},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{pods: {Resync: true}}},
		want:     []string{"ByObject[*v1.Pod]", "WithResourceOptions(/v1, Resource=pods).ResyncPeriod"},
	}, {
		name:     "SyncPeriod beside WithCustomResyncConfig",
		opts:     cache.Options{SyncPeriod: &hour},
		settings: bridge.Settings{CustomResync: []reflect.Type{reflect.TypeFor[*corev1.Pod]()}},
		want:     []string{"SyncPeriod", "WithCustomResyncConfig"},
	}, {
		name:     "ByObject SyncPeriod beside WithCustomResyncConfig of its type",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {SyncPeriod: &hour}}},
		settings: bridge.Settings{CustomResync: []reflect.Type{reflect.TypeFor[*corev1.Pod]()}},
		want:     []string{"ByObject[*v1.Pod].SyncPeriod", "WithCustomResyncConfig", "*v1.Pod"},
	}, {
		name:     "NewInformer beside WithResourceOptions",
		opts:     cache.Options{NewInformer: toolscache.NewSharedIndexInformer},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{pods: {Transform: true}}},
		want:     []string{"NewInformer", "WithResourceOptions(/v1, Resource=pods)"},
	}, {
		name:     "NewInformer beside WithCustomResyncConfig",
		opts:     cache.Options{NewInformer: toolscache.NewSharedIndexInformer},
		settings: bridge.Settings{CustomResync: []reflect.Type{reflect.TypeFor[*corev1.Pod]()}},
		want:     []string{"NewInformer", "WithCustomResyncConfig"},
	}, {
		name: "ByObject namespaces of a cluster-scoped kind",
		opts: cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Node{}: {Namespaces: map[string]cache.Config{"a": {}}}}},
		want: []string{"*v1.Node is not namespaced"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Mapper, tt.opts.Scheme = mapper(), scheme.Scheme
			_, err := resolveOptions(&rest.Config{Host: "https://example.invalid"}, tt.opts, nil, tt.settings)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestResolveAcceptsOtherResources: a setting of cache.Options for one kind
// and a factory option of another resource are no conflict.
func TestResolveAcceptsOtherResources(t *testing.T) {
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	hour := time.Hour
	tests := []struct {
		name     string
		opts     cache.Options
		settings bridge.Settings
	}{{
		name:     "a kind's selectors, another resource's tweak",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: labels.Everything()}}},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{configMaps: {Tweak: true, Selectors: true}}},
	}, {
		name:     "a kind's transform, another resource's",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: cache.TransformStripManagedFields()}}},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{nodes: {Transform: true}}},
	}, {
		name:     "a kind's namespaces, another resource's",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Namespaces: map[string]cache.Config{"a": {}}}}},
		settings: bridge.Settings{Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{configMaps: {Namespaces: true}}},
	}, {
		name:     "a kind's resync, another type's",
		opts:     cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {SyncPeriod: &hour}}},
		settings: bridge.Settings{CustomResync: []reflect.Type{reflect.TypeFor[*corev1.Node]()}, Resources: map[schema.GroupVersionResource]bridge.ResourceSettings{nodes: {Resync: true}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Mapper, tt.opts.Scheme = mapper(), scheme.Scheme
			if _, err := resolveOptions(&rest.Config{Host: "https://example.invalid"}, tt.opts, nil, tt.settings); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// TestNewCacheRefusesResyncBothWays: the factory options' resync periods
// reach the check through the probe.
func TestNewCacheRefusesResyncBothWays(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid"}
	hour := time.Hour
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	for name, option := range map[string]informers.SharedInformerOption{
		"WithResourceOptions(/v1, Resource=pods).ResyncPeriod": informers.WithResourceOptions(pods, informers.ResourceOptions{ResyncPeriod: time.Minute}),
		"WithCustomResyncConfig":                               informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: time.Minute}),
	} {
		_, err := NewCache(option)(cfg, cache.Options{Mapper: mapper(), SyncPeriod: &hour})
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "SyncPeriod") {
			t.Errorf("%s beside SyncPeriod: err = %v, want one naming both", name, err)
		}
	}
}

// TestNewCacheRefusesBadOptions: a bad factory option is an error from the
// NewCacheFunc, before anything is watched; both ways are named.
func TestNewCacheRefusesBadOptions(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid"}
	_, err := NewCache(informers.WithNamespace("Bad_Name"))(cfg, cache.Options{Mapper: mapper()})
	if err == nil || !strings.Contains(err.Error(), "Bad_Name") {
		t.Errorf("bad namespace option: err = %v, want one naming it", err)
	}
	_, err = NewCache(informers.WithNamespaces("a"))(cfg, cache.Options{Mapper: mapper(), DefaultNamespaces: map[string]cache.Config{"b": {}}})
	if err == nil || !strings.Contains(err.Error(), "DefaultNamespaces") || !strings.Contains(err.Error(), "WithNamespace") {
		t.Errorf("namespaces both ways: err = %v, want one naming both", err)
	}
	if _, err := New(nil, cache.Options{}); err == nil {
		t.Error("nil config: no error")
	}
}
