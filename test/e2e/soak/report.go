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
	"strings"
	"time"
)

// sample is one measurement of the soak process, taken after a GC.
type sample struct {
	at         time.Duration // since the run started
	heapInuse  uint64        // runtime.MemStats.HeapInuse, bytes
	goroutines int
	objects    int   // objects on the server, as the writer counts them
	writes     int64 // writes so far
}

// csvHeader is the first line of samples.csv; csvRow formats one sample.
const csvHeader = "seconds,heap_inuse_bytes,goroutines,objects,writes"

func (s sample) csvRow() string {
	return fmt.Sprintf("%.1f,%d,%d,%d,%d", s.at.Seconds(), s.heapInuse, s.goroutines, s.objects, s.writes)
}

// heapSlope is the least-squares slope of heap-in-use over the samples
// taken at or after warmup, relative to their mean, in percent per hour.
// ok is false with fewer than two such samples at distinct times.
func heapSlope(samples []sample, warmup time.Duration) (pctPerHour float64, ok bool) {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		if s.at < warmup {
			continue
		}
		x, y := s.at.Hours(), float64(s.heapInuse)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	den := n*sxx - sx*sx
	if n < 2 || den == 0 || sy == 0 {
		return 0, false
	}
	slope := (n*sxy - sx*sy) / den // bytes per hour
	mean := sy / n
	return slope / mean * 100, true
}

// diff counts how caches differ from the server: objects they miss, hold
// at another resourceVersion (or after their deletion), or hold in two
// replicas.
type diff struct{ lost, stale, double int }

func (d diff) clean() bool { return d == diff{} }

// mgrResult is what the soak found of its controller-runtime managers.
type mgrResult struct {
	diff
	reconciles, readErrors int64 // reconciles run, and reads that failed (retried)
	// Faults done and failed (setNamespaces: a namespace taken out and
	// put back; memberships: a manager joined and left).
	setNamespaces, memberships, crdCycles, failures int
	settleMax                                       time.Duration // the longest until the managers matched the server after a fault
}

// result is what the soak found.
type result struct {
	duration                 time.Duration
	objects                  int
	writes                   int64
	restarts, compactions    int
	crdCycles, crdFailures   int           // CRD deletions cycled, and failed
	crdEmptied, crdSynced    time.Duration // the longest of the cycles
	lost, stale, doubleOwned int
	mgr                      mgrResult
	heapSlope                float64       // percent per hour
	heapSlopeOK              bool          // enough samples for a slope
	heapSpan                 time.Duration // after the warm-up: what the slope is fitted over
	goroutinesA, goroutinesB goroutines    // after warm-up, at the end
}

// goroutines counts the soak's goroutines at one moment. The goroutines of
// open watch streams are apart: their number per stream is client-go's
// choice (v0.38 decodes a watch-list stream with three, v0.37 with one), so
// a leak is a change of the others or of the number of streams.
type goroutines struct {
	total   int
	watches int // open watch streams
	inWatch int // goroutines that serve them
}

// other is the number of goroutines outside watch streams.
func (g goroutines) other() int { return g.total - g.inWatch }

// line is the one line the soak prints.
func (r result) line() string {
	slope := "n/a"
	if r.heapSlopeOK {
		slope = fmt.Sprintf("%+.2f%%", r.heapSlope)
	}
	m := r.mgr
	return fmt.Sprintf("soak duration=%s objects=%d writes=%d restarts=%d compactions=%d crd-cycles=%d crd-emptied-max=%s crd-synced-max=%s lost=%d stale=%d double-owned=%d "+
		"mgr-reconciles=%d mgr-setns=%d mgr-memberships=%d mgr-crd-cycles=%d mgr-settle-max=%s mgr-lost=%d mgr-stale=%d mgr-double-owned=%d "+
		"heap-slope=%s/h goroutines=%d->%d watches=%d->%d other-goroutines=%d->%d",
		r.duration.Round(time.Second), r.objects, r.writes, r.restarts, r.compactions, r.crdCycles,
		r.crdEmptied.Round(10*time.Millisecond), r.crdSynced.Round(10*time.Millisecond),
		r.lost, r.stale, r.doubleOwned,
		m.reconciles, m.setNamespaces, m.memberships, m.crdCycles, m.settleMax.Round(10*time.Millisecond), m.lost, m.stale, m.double,
		slope, r.goroutinesA.total, r.goroutinesB.total,
		r.goroutinesA.watches, r.goroutinesB.watches, r.goroutinesA.other(), r.goroutinesB.other())
}

// Goals of the soak.
const (
	maxHeapSlope = 5.0 // percent per hour
	// minHeapSpan is the shortest span after the warm-up whose slope is
	// judged: over ten minutes the heap of one unchanged run moves between
	// 19 and 25 MiB with GC timing and relists, and slopes of four such
	// runs were -60, -33, +15 and +45 %/h.
	minHeapSpan      = 30 * time.Minute
	maxGoroutineDiff = 10 // goroutines outside watch streams
	maxWatchDiff     = 2  // open watch streams
)

// failures lists the goals r misses; empty when all are met.
func (r result) failures() []string {
	var out []string
	if r.lost != 0 || r.stale != 0 || r.doubleOwned != 0 {
		out = append(out, fmt.Sprintf("caches differ from the server: lost=%d stale=%d double-owned=%d, want all 0", r.lost, r.stale, r.doubleOwned))
	}
	if !r.mgr.clean() {
		out = append(out, fmt.Sprintf("the managers differ from the server: lost=%d stale=%d double-owned=%d, want all 0", r.mgr.lost, r.mgr.stale, r.mgr.double))
	}
	if m := r.mgr; m.failures != 0 {
		out = append(out, fmt.Sprintf("%d of the managers' %d faults failed (faults.log says how)", m.failures, m.failures+m.setNamespaces+m.memberships+m.crdCycles))
	}
	if r.mgr.settleMax > maxManagerSettle {
		out = append(out, fmt.Sprintf("the managers took %v to match the server after a fault, want at most %v", r.mgr.settleMax, maxManagerSettle))
	}
	if r.crdFailures != 0 {
		out = append(out, fmt.Sprintf("%d of %d CRD cycles failed (faults.log says how)", r.crdFailures, r.crdFailures+r.crdCycles))
	}
	if r.crdEmptied > maxEmptied || r.crdSynced > maxSynced {
		out = append(out, fmt.Sprintf("a CRD cycle took %v to empty the cache and %v to sync it again, want at most %v and %v", r.crdEmptied, r.crdSynced, maxEmptied, maxSynced))
	}
	switch {
	case !r.heapSlopeOK:
		out = append(out, "too few heap samples after the warm-up for a slope: run longer")
	case r.heapSpan < minHeapSpan:
		// Printed, not judged: see minHeapSpan.
	case r.heapSlope > maxHeapSlope:
		out = append(out, fmt.Sprintf("heap grows %.2f%%/h, want at most %.0f%%/h", r.heapSlope, maxHeapSlope))
	}
	a, b := r.goroutinesA, r.goroutinesB
	if d := b.other() - a.other(); d > maxGoroutineDiff || d < -maxGoroutineDiff {
		out = append(out, fmt.Sprintf("goroutines outside watch streams went from %d to %d, want within %d", a.other(), b.other(), maxGoroutineDiff))
	}
	if d := b.watches - a.watches; d > maxWatchDiff || d < -maxWatchDiff {
		out = append(out, fmt.Sprintf("open watch streams went from %d to %d, want within %d", a.watches, b.watches, maxWatchDiff))
	}
	return out
}

// table is the lost, stale and double-owned counts of the factories and
// of the managers, one row each.
func (r result) table() string {
	return fmt.Sprintf("%-10s %6s %6s %13s\n%-10s %6d %6d %13d\n%-10s %6d %6d %13d\n",
		"", "lost", "stale", "double-owned",
		"factories", r.lost, r.stale, r.doubleOwned,
		"managers", r.mgr.lost, r.mgr.stale, r.mgr.double)
}

// summary joins failures for an error message.
func summary(failures []string) string { return strings.Join(failures, "; ") }
