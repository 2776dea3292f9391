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

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	upstream "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/metrics"
)

// running is a synced variant: what it holds stays reachable through it
// until the child has measured the heap.
type running struct {
	count func() int
	// keys lists the namespace/name of every object held; nil where the
	// variant has no store to list.
	keys func() []string
	// notices are the factory's Notices (this library's variants only).
	notices func() []string
	// reader is the cache's reader where the variant is a
	// controller-runtime cache: the child times cached reads through it.
	reader crclient.Reader
	// estimate is the sum of the informers' byte estimates (MemoryStatus),
	// nil where the variant has none.
	estimate func() int64
	// budget is the memory budget the variant runs with; stopped, if not
	// empty, what Ready() said when the budget stopped its informer, after
	// stoppedAt objects (mem.go).
	budget    int64
	stopped   string
	stoppedAt int64
	keep      any
}

type variant struct {
	name string
	desc string
	run  func(ctx context.Context, cfg *rest.Config) (*running, error)
}

// The raw floor is measured as two variants; the report takes the faster.
const (
	rawPaged = "raw-list-paged"
	rawRV0   = "raw-list-rv0"
)

// The shard benchmark runs "ours" as its unsharded reference, and each
// replica as shardVariant: "ours" plus WithShard(field, index, count) (child.go).
const (
	unshardedVariant = "ours"
	shardVariant     = "ours-shard"
)

var ourVariants = []variant{
	{"upstream", "k8s.io/client-go/informers v0.37.2, defaults (its generated clients ask for protobuf when the rest.Config sets no content type)", runUpstream},
	{"upstream-json", "k8s.io/client-go/informers v0.37.2 over a rest.Config with ContentType application/json", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runUpstream(ctx, withContentType(cfg, "application/json", "application/json"))
	}},
	{"upstream-protobuf", "k8s.io/client-go/informers v0.37.2 over a rest.Config with kube-controller-manager's content type (protobuf, JSON fallback)", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runUpstream(ctx, withContentType(cfg, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"))
	}},
	{"ours", "this library, defaults", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, cfg)
	}},
	{"ours-metrics", "this library, defaults, with the Prometheus metrics registered (metrics.Register): what metrics cost against ours", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		if err := metrics.Register(prometheus.NewRegistry()); err != nil {
			return nil, err
		}
		return runOurs(ctx, cfg)
	}},
	{"ours-strip", "this library, WithTransform(TransformStripManagedFields())", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, cfg, informers.WithTransform(informers.TransformStripManagedFields()))
	}},
	{"ours-intern", "this library, WithLeanMemory(LeanInterning(true), LeanNoShare()): strip and intern, no sharing", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, cfg, informers.WithLeanMemory(informers.LeanInterning(true), informers.LeanNoShare()))
	}},
	{"ours-lean", "this library, WithLeanMemory() as shipped: strip (while decoding protobuf), intern and share", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, cfg, informers.WithLeanMemory())
	}},
	{keepVariant, "this library, WithLeanMemory() and KeepFields spec.nodeName, status.phase, status.conditions on pods: the dropped fields are cut from the protobuf before it is decoded", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, cfg, informers.WithLeanMemory(),
			informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("pods"), informers.ResourceOptions{KeepFields: keepFields}))
	}},
	{"ours-lean-fulldecode", "this library, WithLeanMemory() after an identity WithTransform: the lean transform then strips a fully decoded object (decode-then-strip, what ours-lean's decoding that leaves managedFields out is measured against)", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, cfg, informers.WithTransform(func(o any) (any, error) { return o, nil }), informers.WithLeanMemory())
	}},
	{"ours-lean-nointern", "this library, WithLeanMemory(LeanInterning(false)): strip and share, no interning (what interning adds is ours-lean against this)", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, cfg, informers.WithLeanMemory(informers.LeanInterning(false)))
	}},
	{"ours-lean-protobuf", "this library over a rest.Config with ContentType application/json, WithLeanMemory() and WithProtobuf()", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runOurs(ctx, withContentType(cfg, "application/json", "application/json"), informers.WithLeanMemory(), informers.WithProtobuf())
	}},
	{"ours-metadata", "this library, ForMetadata(pods) with WithLeanMemory()", runMetadata},
	{rawPaged, "paged LIST (limit 500) decoded into a kept slice; no cache, no watch", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runRawList(ctx, cfg, true)
	}},
	{rawRV0, "one unpaged LIST with resourceVersion=0 (watch cache) decoded into a kept slice", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runRawList(ctx, cfg, false)
	}},
}

// variants are every variant, the controller-runtime comparison's (cr.go)
// last.
var variants = append(ourVariants, crVariants...)

func allVariants() []string {
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.name
	}
	return names
}

func variantByName(name string) (variant, bool) {
	for _, v := range append(variants, budgetVariants...) {
		if v.name == name {
			return v, true
		}
	}
	return variant{}, false
}

// waitSynced polls every millisecond: client-go's WaitForCacheSync polls
// every 100 ms, which would round every time to sync up to that.
func waitSynced(ctx context.Context, hasSynced func() bool) bool {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for !hasSynced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

func waitInformer(ctx context.Context, inf toolscache.SharedIndexInformer) (*running, error) {
	if !waitSynced(ctx, inf.HasSynced) {
		return nil, fmt.Errorf("not synced: %w (%d objects cached at the deadline)", context.Cause(ctx), len(inf.GetStore().ListKeys()))
	}
	return &running{
		count: func() int { return len(inf.GetStore().ListKeys()) },
		keys:  inf.GetStore().ListKeys,
		keep:  inf,
	}, nil
}

// withContentType returns a copy of cfg with the content types given.
func withContentType(cfg *rest.Config, contentType, accept string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType, c.AcceptContentTypes = contentType, accept
	return c
}

func runUpstream(ctx context.Context, cfg *rest.Config) (*running, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	f := upstream.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	return waitInformer(ctx, inf)
}

func runOurs(ctx context.Context, cfg *rest.Config, opts ...informers.SharedInformerOption) (*running, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	f, err := informers.New(cs, 0, append(opts, childListMode()...)...)
	if err != nil {
		return nil, err
	}
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	r, err := waitInformer(ctx, inf)
	if err != nil {
		return nil, err
	}
	r.notices, r.keep = f.Notices, []any{f, inf}
	if m, ok := f.(memoryStatuser); ok {
		r.estimate = estimateOf(m)
	}
	return r, nil
}

func runMetadata(ctx context.Context, cfg *rest.Config) (*running, error) {
	f, err := informers.NewForConfig(cfg, 0, append(childListMode(), informers.WithLeanMemory())...)
	if err != nil {
		return nil, err
	}
	gi, err := f.ForMetadata(corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		return nil, err
	}
	inf := gi.Informer()
	f.Start(ctx.Done())
	return waitInformer(ctx, inf)
}

func runRawList(ctx context.Context, cfg *rest.Config, paged bool) (*running, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var items []corev1.Pod
	if !paged {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return nil, err
		}
		items = list.Items
	} else {
		opts := metav1.ListOptions{Limit: 500}
		for {
			list, err := cs.CoreV1().Pods("").List(ctx, opts)
			if err != nil {
				return nil, err
			}
			if items == nil {
				items = list.Items
			} else {
				items = append(items, list.Items...)
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
	return &running{count: func() int { return len(items) }, keep: &items}, nil
}
