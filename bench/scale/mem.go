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
	"strconv"
	"strings"
)

// The memory comparison (issue 50, item 4, -mem): controller-runtime's
// cache, crcache lean and crcache with KeepFields, each with its peak RSS,
// peak live heap during the fill and live heap after sync, the bytes
// estimate (MemoryStatus) against what the cache retains, and crcache
// holding whole Pods under a memory budget (WithMemoryBudget), which
// stops the fill before it passes the budget.
const (
	budgetVariant = "crcache-budget"
	// memBudget is the budgeted run's budget: the 256 MiB limit of an
	// external-dns fleet (issue 50).
	memBudget = 256 << 20
	// smokeBudget is the smoke's: a few dozen whole Pods, so that the
	// budget stops the smoke's 300.
	smokeBudget = 1 << 20
	// envBudget is the budget the parent hands the budgeted run's child.
	envBudget = "BENCH_SCALE_BUDGET"
)

// memVariants are the runs of -mem, streamed (client-go's default).
var memVariants = []string{crVariant, crcacheVariant, crcacheKeepVariant, budgetVariant}

// budgetVariants are run only where asked for (-mem, -smoke): in a plain
// run a budget this large stops nothing.
var budgetVariants = []variant{
	{budgetVariant, "crcache.NewCache(informers.WithMemoryBudget(256 MiB)): whole Pods (no lean transform) under a factory-wide budget, which stops the Pod informer before its estimate passes it", runBudget},
}

// budgetEnv is the environment of the child that runs name: the budget
// of the budgeted run.
func (c *config) budgetEnv(name string) []string {
	if v, _ := splitRun(name); v != budgetVariant {
		return nil
	}
	b := memBudget
	if c.smoke {
		b = smokeBudget
	}
	return []string{envBudget + "=" + strconv.Itoa(b)}
}

// childEnv is the environment of the child that runs name, beyond its job.
func (c *config) childEnv(name string) []string {
	return append(modeEnv(name, c.pageSize()), c.budgetEnv(name)...)
}

// memMeasured reports whether r holds every run the mem line compares.
func memMeasured(r map[string]*summary) bool {
	for _, v := range memVariants {
		if r[v] == nil {
			return false
		}
	}
	return true
}

func peakLiveOf(s *summary) float64 { return s.PeakLive.Median }

// estimateRatio is a run's estimate against the live heap its cache
// retains (after sync minus before the start); 0 where it has none.
func estimateRatio(s *summary) float64 {
	if s == nil || !s.ok() || s.Retained.Median == 0 {
		return 0
	}
	var xs []float64
	for _, r := range s.Runs {
		if r.Estimate < 0 {
			return 0
		}
		xs = append(xs, float64(r.Estimate)/float64(sub(r.LiveAfter, r.LiveBefore)))
	}
	return newStat(xs).Median
}

// stoppedRun is the budgeted run's first run, if it ran.
func stoppedRun(s *summary) (result, bool) {
	if s == nil || !s.ok() {
		return result{}, false
	}
	return s.Runs[0], true
}

func mibText(s *summary, f func(*summary) float64) string {
	if s == nil || !s.ok() {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", f(s)/(1<<20))
}

func ratioText(x float64) string {
	if x == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", x)
}

// memLine is the machine-readable summary of the memory comparison at n
// (issue 50's form): the peak live heaps, the estimates against the live
// heap retained, and the budgeted run's stop.
func memLine(rep *runReport, n int) string {
	r := rep.Results[n]
	stoppedAt, budgetPeak, budget := "n/a", "n/a", "n/a"
	if br, ok := stoppedRun(r[budgetVariant]); ok {
		budget = fmt.Sprintf("%d", br.Budget>>20)
		budgetPeak = fmt.Sprintf("%.1f", float64(br.PeakLive)/(1<<20))
		stoppedAt = "none"
		if br.Stopped != "" {
			stoppedAt = strconv.FormatInt(br.StoppedAt, 10)
		}
	}
	return fmt.Sprintf("bench-scale-mem N=%d: peak-heap cr=%s crcache=%s crcache-keep=%s; estimate/heap crcache=%s crcache-keep=%s; budget=%s stopped-at=%s peak-heap=%s",
		n, mibText(r[crVariant], peakLiveOf), mibText(r[crcacheVariant], peakLiveOf), mibText(r[crcacheKeepVariant], peakLiveOf),
		ratioText(estimateRatio(r[crcacheVariant])), ratioText(estimateRatio(r[crcacheKeepVariant])),
		budget, stoppedAt, budgetPeak)
}

// memText is what a run's log line adds for the memory comparison.
func memText(r result) string {
	var b strings.Builder
	if r.Estimate >= 0 {
		fmt.Fprintf(&b, "; estimate %.1f MiB", float64(r.Estimate)/(1<<20))
	}
	if r.Stopped != "" {
		fmt.Fprintf(&b, "; budget %.0f MiB stopped it after %d objects: %s", float64(r.Budget)/(1<<20), r.StoppedAt, r.Stopped)
	}
	return b.String()
}

// memTableText is the table of the memory comparison at n, or "" when
// none of its runs ran.
func memTableText(rep *runReport, n int) string {
	r := rep.Results[n]
	var runs []string
	for _, v := range rep.Variants {
		if name, _ := splitRun(v); (name == budgetVariant || crCacheVariant(name)) && r[v] != nil {
			runs = append(runs, v)
		}
	}
	if len(runs) == 0 || r[budgetVariant] == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Memory, N = %d Pods (median of %d), whole process: peak RSS (VmHWM), peak heap in use and peak live heap during the fill, live heap after sync; \"retained\" is the live heap after sync minus before the start, and the estimate is the sum of MemoryStatus's Bytes.\n\n", n, rep.Repeats)
	b.WriteString("| run | peak RSS | peak heap in use | peak live heap | live heap after sync | retained | estimate | estimate/retained | budget |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range runs {
		s := r[v]
		if !s.ok() {
			fmt.Fprintf(&b, "| %s | failed: %s | | | | | | | |\n", v, strings.ReplaceAll(s.Err, "|", "/"))
			continue
		}
		est := "n/a"
		if e := s.Runs[0].Estimate; e >= 0 {
			est = fmt.Sprintf("%.1f MiB", float64(e)/(1<<20))
		}
		budget := ""
		if br := s.Runs[0]; br.Budget > 0 {
			budget = fmt.Sprintf("%d MiB: not stopped", br.Budget>>20)
			if br.Stopped != "" {
				budget = fmt.Sprintf("%d MiB: stopped after %d objects (%s)", br.Budget>>20, br.StoppedAt, strings.ReplaceAll(br.Stopped, "|", "/"))
			}
		}
		fmt.Fprintf(&b, "| %s | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %s | %s | %s |\n",
			v, s.PeakRSS.Median/(1<<20), s.PeakHeap.Median/(1<<20), s.PeakLive.Median/(1<<20), s.LiveAfter.Median/(1<<20), s.Retained.Median/(1<<20),
			est, ratioText(estimateRatio(s)), budget)
	}
	return b.String()
}

// checkMem checks the goals of the memory comparison at n (issue 50,
// item 4), and for the smoke that the budget stopped its run with Ready()
// saying why; it reports each and whether one failed.
func checkMem(rep *runReport, n int, smoke bool) bool {
	r := rep.Results[n]
	failed := false
	report := func(ok bool, format string, a ...any) {
		verdict := "ok"
		if !ok {
			verdict, failed = "NOT MET", true
		}
		fmt.Fprintf(os.Stderr, "bench-scale: mem N=%d: "+format+": %s\n", append(append([]any{n}, a...), verdict)...)
	}
	br, ran := stoppedRun(r[budgetVariant])
	if ran {
		report(br.Stopped != "" && strings.Contains(br.Stopped, "pods") && strings.Contains(br.Stopped, "budget"),
			"the budget of %d MiB stopped the Pod informer after %d objects, Ready(): %q", br.Budget>>20, br.StoppedAt, br.Stopped)
	}
	if smoke {
		return failed
	}
	cr, keep := r[crVariant], r[crcacheKeepVariant]
	if cr.ok() && keep.ok() {
		report(keep.PeakLive.Median <= 0.25*cr.PeakLive.Median, "crcache-keep's peak live heap %.1f MiB <= 0.25 of cr's %.1f MiB", keep.PeakLive.Median/(1<<20), cr.PeakLive.Median/(1<<20))
	}
	for _, v := range []string{crcacheVariant, crcacheKeepVariant} {
		if x := estimateRatio(r[v]); x != 0 {
			report(x >= 0.85 && x <= 1.15, "%s's estimate/retained %.2f in 0.85..1.15", v, x)
		}
	}
	if ran {
		report(br.PeakLive <= uint64(br.Budget)+br.LiveBefore, "the budgeted run's peak live heap %.1f MiB <= its budget %d MiB plus the live heap before the start %.1f MiB",
			float64(br.PeakLive)/(1<<20), br.Budget>>20, float64(br.LiveBefore)/(1<<20))
	}
	return failed
}
