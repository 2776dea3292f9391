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
	"fmt"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	informers "github.com/kubeinformers/informers"
)

// How a variant gets its initial state. Each variant runs in each mode
// given with -modes, as a run named variant@mode (plain variant for the
// stream, client-go's default).
const (
	// modeStream is client-go's default: the watch-list stream
	// (WatchListClient on). This library's variants use
	// WithListMode(ListModeStream).
	modeStream = "stream"
	// modeList is client-go's LIST (resourceVersion=0, limit 500): for
	// this library's variants WithListMode(ListModeList); for client-go and
	// controller-runtime, KUBE_FEATURE_WatchListClient=false, the only
	// switch they have.
	modeList = "list"
	// modePaged is this library's ListModeConsistentList: a paged LIST
	// with no resourceVersion, each page transformed as it arrives. Only
	// this library's variants run in it.
	modePaged = "paged"
)

var allModes = []string{modeStream, modeList, modePaged}

// envMode is the child's mode; envPageSize, if set, the page size of its
// paged LIST (the smoke's N would otherwise fit in one page of 500).
const (
	envMode     = "BENCH_SCALE_MODE"
	envPageSize = "BENCH_SCALE_PAGE_SIZE"
)

// smokePageSize is the page size of the smoke's paged LISTs: several pages
// at N=300.
const smokePageSize = 100

// runName names variant v in mode.
func runName(v, mode string) string {
	if mode == modeStream {
		return v
	}
	return v + "@" + mode
}

// splitRun returns the variant and mode of a run name.
func splitRun(name string) (v, mode string) {
	if v, mode, ok := strings.Cut(name, "@"); ok {
		return v, mode
	}
	return name, modeStream
}

// ourVariant reports whether v is this library's factory.
func ourVariant(v string) bool { return strings.HasPrefix(v, "ours") }

// takesListMode reports whether v is built on this library's informers,
// which take WithListMode: its factories and crcache.
func takesListMode(v string) bool { return ourVariant(v) || strings.HasPrefix(v, crcacheVariant) }

// modeApplies reports whether variant v runs in mode: the raw LIST floor
// has no mode (it runs once, as a stream-mode run), and only this
// library's variants can list in pages with no resourceVersion.
func modeApplies(v, mode string) bool {
	switch {
	case v == rawPaged || v == rawRV0:
		return mode == modeStream
	case mode == modePaged:
		return takesListMode(v)
	}
	return true
}

// runNames lists the runs of variants in modes, variant by variant.
func runNames(variants, modes []string) []string {
	var out []string
	for _, v := range variants {
		for _, m := range modes {
			if modeApplies(v, m) {
				out = append(out, runName(v, m))
			}
		}
	}
	return out
}

// parseModes parses -modes.
func parseModes(s string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if !slices.Contains(allModes, m) {
			return nil, fmt.Errorf("-modes: unknown mode %q (known: %s)", m, strings.Join(allModes, ", "))
		}
		if slices.Contains(out, m) {
			return nil, fmt.Errorf("-modes: %q is given twice", m)
		}
		out = append(out, m)
	}
	return out, nil
}

// modeEnv is the environment of a child that runs name; pageSize, if not
// 0, is the page size of a paged LIST.
func modeEnv(name string, pageSize int) []string {
	v, mode := splitRun(name)
	env := []string{envMode + "=" + mode}
	if mode == modePaged && pageSize > 0 {
		env = append(env, envPageSize+"="+strconv.Itoa(pageSize))
	}
	if mode == modeList && !takesListMode(v) {
		env = append(env, "KUBE_FEATURE_WatchListClient=false")
	}
	return env
}

// childListMode is the options this library's variants (factories and
// crcache) take in the child's mode.
func childListMode() []informers.SharedInformerOption {
	switch os.Getenv(envMode) {
	case modeList:
		return []informers.SharedInformerOption{informers.WithListMode(informers.ListModeList)}
	case modePaged:
		opts := []informers.SharedInformerOption{informers.WithListMode(informers.ListModeConsistentList)}
		if n, err := strconv.ParseInt(os.Getenv(envPageSize), 10, 64); err == nil && n > 0 {
			opts = append(opts, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				if o.Limit > 0 { // a list; watches have none
					o.Limit = n
				}
			}))
		}
		return opts
	}
	return []informers.SharedInformerOption{informers.WithListMode(informers.ListModeStream)}
}

// peakSampler samples, every millisecond, the process's heap in use
// (HeapInuse, from runtime/metrics, which does not stop the world) and its
// live heap (/gc/heap/live:bytes: what the last garbage collection found
// reachable), and keeps the largest value of each. The live heap changes
// only at the end of a collection, so its peak is the largest live heap
// of any collection during the sync: garbage not yet collected does not
// count, only what the process held.
type peakSampler struct {
	stop       chan struct{}
	done       sync.WaitGroup
	peak, live uint64
}

var heapSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
	{Name: "/gc/heap/live:bytes"},
}

// readHeap returns HeapInuse and the live heap.
func readHeap(s []metrics.Sample) (inuse, live uint64) {
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64(), s[2].Value.Uint64()
}

func startPeakSampler() *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	s := slices.Clone(heapSamples)
	p.peak, p.live = readHeap(s)
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			inuse, live := readHeap(s)
			p.peak, p.live = max(p.peak, inuse), max(p.live, live)
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// Stop ends the sampling and returns the peaks of the heap in use and of
// the live heap.
func (p *peakSampler) Stop() (inuse, live uint64) {
	close(p.stop)
	p.done.Wait()
	return p.peak, p.live
}

// vmHWM is the process's peak resident set size (VmHWM in
// /proc/self/status), in bytes; 0 where it cannot be read.
func vmHWM() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// smokeListed are the runs the smoke adds to every variant's stream: the
// LIST of ours, and of the lean variants the LIST that is lean at the peak
// (paged). Enough to check that the lean peak is below the full one when
// listing too, without doubling the smoke's time. The smoke also runs
// the budgeted crcache, with a budget that stops it (mem.go).
var smokeListed = []string{runName("ours", modeList), runName("ours-lean", modePaged), runName("ours-metadata", modePaged)}

// runs lists the runs of the configured variants and modes.
func (c *config) runs() []string {
	if c.smoke {
		return append(append(runNames(c.variants, []string{modeStream}), smokeListed...), budgetVariant)
	}
	return runNames(c.variants, c.modes)
}

// upstreamOf is the run that name is compared with: client-go's in the
// same mode (for paged, client-go's LIST).
func upstreamOf(name string) string {
	_, mode := splitRun(name)
	if mode == modePaged {
		mode = modeList
	}
	return runName("upstream", mode)
}

func peakOf(s *summary) float64 { return s.PeakHeap.Median }
func cpuOf(s *summary) float64  { return s.CPU.Median }

// cpuFloor is the raw LIST variant with the least CPU time.
func cpuFloor(byVariant map[string]*summary) *summary {
	var best *summary
	for _, v := range []string{rawPaged, rawRV0} {
		if s := byVariant[v]; s != nil && s.ok() && (best == nil || s.CPU.Median < best.CPU.Median) {
			best = s
		}
	}
	return best
}

// bestCPU is the run of variant v, among its modes, with the least CPU
// time to sync.
func bestCPU(byVariant map[string]*summary, v string) *summary {
	var best *summary
	for _, m := range allModes {
		if s := byVariant[runName(v, m)]; s != nil && s.ok() && (best == nil || s.CPU.Median < best.CPU.Median) {
			best = s
		}
	}
	return best
}

// peakLine is the machine-readable summary of peaks and CPU time for n
// Pods, printed after lastLine.
func peakLine(rep *runReport, n int) string {
	r := rep.Results[n]
	// In LIST mode ours is compared like for like (resourceVersion=0,
	// client-go's LIST); the lean variants in the LIST mode with the lower
	// peak, which is the paged one (they are lean at the peak only when
	// the server pages).
	listPeak := func() string {
		up := r[runName("upstream", modeList)]
		lowest := func(v string) *summary {
			var best *summary
			for _, m := range []string{modeList, modePaged} {
				if s := r[runName(v, m)]; s != nil && s.ok() && (best == nil || s.PeakHeap.Median < best.PeakHeap.Median) {
					best = s
				}
			}
			return best
		}
		return fmt.Sprintf("ours/upstream=%s lean/upstream=%s metadata/upstream=%s",
			ratio(r[runName("ours", modeList)], up, peakOf), ratio(lowest("ours-lean"), up, peakOf), ratio(lowest("ours-metadata"), up, peakOf))
	}
	peak := func(mode string) string {
		up := r[runName("upstream", mode)]
		return fmt.Sprintf("ours/upstream=%s lean/upstream=%s metadata/upstream=%s",
			ratio(r[runName("ours", mode)], up, peakOf), ratio(r[runName("ours-lean", mode)], up, peakOf), ratio(r[runName("ours-metadata", mode)], up, peakOf))
	}
	return fmt.Sprintf("bench-scale-peak N=%d: stream peak %s; list peak %s; cpu ours-best/raw-list=%s lean/upstream=%s",
		n, peak(modeStream), listPeak(),
		ratio(bestCPU(r, "ours"), cpuFloor(r), cpuOf), ratio(r["ours-lean"], r["upstream"], cpuOf))
}

// checkPeaks checks, for the smoke run, that in each mode the lean and
// metadata-only informers' peak heap grew less during sync than the full
// one's.
func checkPeaks(rep *runReport, n int) bool {
	failed := false
	for _, pair := range [][2]string{
		{"ours", "ours-lean"}, {"ours", "ours-metadata"},
		{runName("ours", modeList), runName("ours-lean", modePaged)}, {runName("ours", modeList), runName("ours-metadata", modePaged)},
	} {
		full, l := rep.Results[n][pair[0]], rep.Results[n][pair[1]]
		if full == nil || l == nil || !full.ok() || !l.ok() {
			continue // not run, or reported as failed
		}
		if l.PeakGrowth.Median >= full.PeakGrowth.Median {
			fmt.Fprintf(os.Stderr, "bench-scale: smoke: N=%d %s: peak heap growth %.1f MiB is not below %s's %.1f MiB\n", n, pair[1], l.PeakGrowth.Median/(1<<20), pair[0], full.PeakGrowth.Median/(1<<20))
			failed = true
		} else {
			fmt.Fprintf(os.Stderr, "bench-scale: smoke: N=%d %s peak heap growth %.1f MiB < %s's %.1f MiB: ok\n", n, pair[1], l.PeakGrowth.Median/(1<<20), pair[0], full.PeakGrowth.Median/(1<<20))
		}
	}
	return failed
}

// pageSize is the page size of paged LISTs: the smoke's, or 0 for
// ListModeConsistentList's own (500).
func (c *config) pageSize() int {
	if c.smoke {
		return smokePageSize
	}
	return 0
}
