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
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
)

// The controller-runtime comparison (issue 44): controller-runtime's own
// cache as careful users run it, against crcache, its drop-in on this
// library's informers, lean and lean with KeepFields. Each syncs Pods as a
// manager does and then times cached reads.
const (
	crVariant          = "cr"
	crcacheVariant     = "crcache"
	crcacheKeepVariant = "crcache-keep"
)

var crVariants = []variant{
	{crVariant, "sigs.k8s.io/controller-runtime v0.25.3 cache.New with DefaultTransform: cache.TransformStripManagedFields() and its default client (protobuf for built-in types)", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runCache(ctx, cfg, ctrlcache.New, ctrlcache.Options{Scheme: scheme.Scheme, DefaultTransform: ctrlcache.TransformStripManagedFields()})
	}},
	{crcacheVariant, "crcache.NewCache(informers.WithLeanMemory()): controller-runtime's cache on this library's lean informers", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runCache(ctx, cfg, crcache.NewCache(append(childListMode(), informers.WithLeanMemory())...), ctrlcache.Options{Scheme: scheme.Scheme})
	}},
	{crcacheKeepVariant, "crcache.NewCache(informers.WithLeanMemory(), WithResourceOptions(pods, KeepFields: spec.nodeName, status.phase, status.conditions))", func(ctx context.Context, cfg *rest.Config) (*running, error) {
		return runCache(ctx, cfg, crcache.NewCache(append(childListMode(), informers.WithLeanMemory(),
			informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("pods"), informers.ResourceOptions{KeepFields: keepFields}))...),
			ctrlcache.Options{Scheme: scheme.Scheme})
	}},
}

// crCacheVariant reports whether v is one of the controller-runtime
// comparison's, which time cached reads after the sync.
func crCacheVariant(v string) bool {
	return v == crVariant || v == crcacheVariant || v == crcacheKeepVariant
}

// runCache syncs Pods through a controller-runtime cache as a manager
// does: the informer asked for before Start (a controller's watch), then
// Start and WaitForCacheSync.
func runCache(ctx context.Context, cfg *rest.Config, newCache ctrlcache.NewCacheFunc, opts ctrlcache.Options) (*running, error) {
	c, err := newCache(cfg, opts)
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("not synced: %w", context.Cause(ctx))
	}
	count := func() int {
		if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok {
			return len(s.GetStore().ListKeys())
		}
		var list corev1.PodList
		if err := c.List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
			return -1
		}
		return len(list.Items)
	}
	r := &running{count: count, reader: c, keep: c}
	if m, ok := c.(memoryStatuser); ok {
		r.estimate = estimateOf(m)
	}
	return r, nil
}

// The cached reads timed after the sync: Gets of one Pod, and Lists of
// one ReplicaSet's Pods in its namespace by label, with deep copies (the
// defaults). Each is timed in small batches (a List alone takes
// milliseconds); the figure is the median batch's time per call, so that
// the batches during which a busy machine ran other processes do not
// count: a batch must be short against the scheduler's time slice for
// most batches to run uninterrupted.
const (
	getBatches, getsPerBatch   = 100, 10
	listBatches, listsPerBatch = 100, 1
	// getStride spreads the Pods read over the whole cache.
	getStride = 7919
	// listStride picks the ReplicaSets listed.
	listStride = 13
)

// reads is what measureReads reports.
type reads struct {
	getNs, listNs float64
	// listItems is the mean number of Pods a List returned.
	listItems float64
}

// measureReads times cached reads of the n loaded Pods through r, and
// checks what each returns: a Get the Pod asked for, a List every Pod of
// the ReplicaSet (load.go: the podsPerRS Pods of a ReplicaSet share its
// namespace and its app.kubernetes.io/name label, and no other Pod has
// it; a namespace holds a tenth of the Pods).
func measureReads(ctx context.Context, r client.Reader, n int) (reads, error) {
	var out reads
	var pod corev1.Pod
	k := 0
	getNs, err := timeBatches(getBatches, getsPerBatch, func() error {
		p := podAt(k * getStride % n)
		k++
		if err := r.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: p.name}, &pod); err != nil {
			return fmt.Errorf("get %s/%s: %w", p.ns, p.name, err)
		}
		if pod.Name != p.name {
			return fmt.Errorf("get %s/%s: got %s", p.ns, p.name, pod.Name)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	replicaSets := (n + podsPerRS - 1) / podsPerRS
	k, items := 0, 0
	listNs, err := timeBatches(listBatches, listsPerBatch, func() error {
		rs := k * listStride % replicaSets
		k++
		p := podAt(rs * podsPerRS)
		app := fmt.Sprintf("app-%03d", rs)
		var list corev1.PodList
		if err := r.List(ctx, &list, client.InNamespace(p.ns), client.MatchingLabels{"app.kubernetes.io/name": app}); err != nil {
			return fmt.Errorf("list %s %s: %w", p.ns, app, err)
		}
		if want := min(podsPerRS, n-rs*podsPerRS); len(list.Items) != want {
			return fmt.Errorf("list %s %s: %d Pods, want %d", p.ns, app, len(list.Items), want)
		}
		items += len(list.Items)
		return nil
	})
	if err != nil {
		return out, err
	}
	out.getNs, out.listNs, out.listItems = getNs, listNs, float64(items)/float64(k)
	return out, nil
}

// podsInNamespace is how many of n loaded Pods namespace bench-ns holds:
// those of every ReplicaSet whose number is ns modulo namespaces.
func podsInNamespace(n, ns int) int {
	pods := 0
	for rs := ns; rs*podsPerRS < n; rs += namespaces {
		pods += min(podsPerRS, n-rs*podsPerRS)
	}
	return pods
}

// timeBatches runs call batches×perBatch times and returns the median
// batch's nanoseconds per call.
func timeBatches(batches, perBatch int, call func() error) (float64, error) {
	ns := make([]float64, 0, batches)
	for range batches {
		start := time.Now()
		for range perBatch {
			if err := call(); err != nil {
				return 0, err
			}
		}
		ns = append(ns, float64(time.Since(start).Nanoseconds())/float64(perBatch))
	}
	return newStat(ns).Median, nil
}

// measureChildReads fills in res's read times when the variant has a
// reader, with a CPU profile of the reads where profiles are asked for.
func measureChildReads(ctx context.Context, res *result, r *running, profile string) error {
	if r.reader == nil {
		return nil
	}
	if profile != "" {
		f, err := os.Create(profile + ".reads.cpu.pprof")
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rd, err := measureReads(ctx, r.reader, res.N)
	if err != nil {
		return fmt.Errorf("%s: cached reads: %w", res.Variant, err)
	}
	res.GetNs, res.ListNs, res.ListItems = rd.getNs, rd.listNs, rd.listItems
	return nil
}

func getOf(s *summary) float64  { return s.Get.Median }
func listOf(s *summary) float64 { return s.List.Median }

// crMeasured reports whether r holds the runs the cr line compares.
func crMeasured(r map[string]*summary) bool {
	return r[crVariant] != nil && (r[crcacheVariant] != nil || r[crcacheKeepVariant] != nil)
}

// crLine is the machine-readable summary of the controller-runtime
// comparison at n (streamed runs): heap after sync, CPU time to sync, and
// the time per call of a cached Get and a namespace-and-label List.
func crLine(rep *runReport, n int) string {
	r := rep.Results[n]
	cr, c, keep := r[crVariant], r[crcacheVariant], r[crcacheKeepVariant]
	return fmt.Sprintf("bench-scale-cr N=%d: heap crcache/cr=%s crcache-keep/cr=%s; cpu crcache/cr=%s crcache-keep/cr=%s; get crcache/cr=%s; list crcache/cr=%s",
		n, ratio(c, cr, heapOf), ratio(keep, cr, heapOf), ratio(c, cr, cpuOf), ratio(keep, cr, cpuOf), ratio(c, cr, getOf), ratio(c, cr, listOf))
}

// crTableText is the table of the controller-runtime comparison at n, or
// "" when none of its variants ran; "vs cr" compares with cr in the same
// mode.
func crTableText(rep *runReport, n int) string {
	r := rep.Results[n]
	var runs []string
	for _, v := range rep.Variants {
		if name, _ := splitRun(v); crCacheVariant(name) {
			runs = append(runs, v)
		}
	}
	if len(runs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "controller-runtime's cache and crcache, N = %d Pods (median of %d; ± is (max−min)/median). Get and List are the median batch's time per call of %d Gets of one Pod and %d Lists of one ReplicaSet's Pods (client.InNamespace and client.MatchingLabels; %d Pods of the namespace's %d), deep copies included.\n\n",
		n, rep.Repeats, getBatches*getsPerBatch, listBatches*listsPerBatch, min(podsPerRS, n), podsInNamespace(n, 0))
	b.WriteString("| run | heap per Pod after sync | vs cr | CPU time to sync | vs cr | Get | vs cr | List | vs cr |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range runs {
		s := r[v]
		if !s.ok() {
			fmt.Fprintf(&b, "| %s | failed: %s | | | | | | | |\n", v, strings.ReplaceAll(s.Err, "|", "/"))
			continue
		}
		_, mode := splitRun(v)
		cr := r[runName(crVariant, mode)]
		fmt.Fprintf(&b, "| %s | %s ±%.0f%% | %s | %.2f s ±%.0f%% | %s | %.0f ns ±%.0f%% | %s | %.1f µs ±%.0f%% | %s |\n",
			v, kb(s.HeapPerObj.Median), s.HeapPerObj.spread(), times(ratio(s, cr, heapOf)),
			s.CPU.Median, s.CPU.spread(), times(ratio(s, cr, cpuOf)),
			s.Get.Median, s.Get.spread(), times(ratio(s, cr, getOf)),
			s.List.Median/1000, s.List.spread(), times(ratio(s, cr, listOf)))
	}
	return b.String()
}

// crLeanVariant reports whether v is crcache on lean informers, whose
// Pods the smoke checks were decoded without managedFields.
func crLeanVariant(v string) bool {
	return slices.Contains([]string{crcacheVariant, crcacheKeepVariant}, v)
}
