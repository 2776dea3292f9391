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
)

// The start-up peak (issue 50, item 3): during the first fill, the live
// heap (what the garbage collector found reachable, runtime/metrics
// /gc/heap/live:bytes, sampled during the sync) against the live heap
// once synced. The goal is at most startupGoal in every list mode.
const startupGoal = 1.2

// startupRatio is a run's largest live heap during sync against its live
// heap after sync, both of the whole process; 0 where not measured.
func startupRatio(r result) float64 {
	if r.LiveAfter == 0 {
		return 0
	}
	return float64(r.PeakLive) / float64(r.LiveAfter)
}

// startupGrowthRatio is startupRatio without the live heap the process
// held before the informer started: the fill's own peak against what it
// retains. At a small N the process's baseline makes startupRatio look
// better than this.
func startupGrowthRatio(r result) float64 {
	retained := sub(r.LiveAfter, r.LiveBefore)
	if retained == 0 {
		return 0
	}
	return float64(sub(r.PeakLive, r.LiveBefore)) / float64(retained)
}

// startupRuns are the runs whose start-up peak is reported: every run
// that fills a cache (not the raw LIST floor, nor a run a budget stopped).
func startupRuns(rep *runReport, n int) []string {
	var out []string
	for _, v := range rep.Variants {
		name, _ := splitRun(v)
		s := rep.Results[n][v]
		if name == rawPaged || name == rawRV0 || name == budgetVariant || s == nil || !s.ok() {
			continue
		}
		out = append(out, v)
	}
	return out
}

// startupLine is the machine-readable summary of the start-up peak at n:
// per run, the peak live heap during sync against the live heap after
// sync, then the same without the process's baseline.
func startupLine(rep *runReport, n int) string {
	runs := startupRuns(rep, n)
	var ratios, growth []string
	for _, v := range runs {
		s := rep.Results[n][v]
		ratios = append(ratios, fmt.Sprintf("%s=%.2f", v, s.Startup.Median))
		growth = append(growth, fmt.Sprintf("%s=%.2f", v, s.StartupGrowth.Median))
	}
	return fmt.Sprintf("bench-scale-startup N=%d: peak-live/live-after %s; without baseline %s", n, strings.Join(ratios, " "), strings.Join(growth, " "))
}

// startupTableText is the table of the start-up peak at n, or "" when no
// run filled a cache.
func startupTableText(rep *runReport, n int) string {
	runs := startupRuns(rep, n)
	if len(runs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Start-up peak, N = %d Pods (median of %d): the largest live heap of any garbage collection during the sync (/gc/heap/live:bytes, sampled every millisecond) against the live heap after sync, of the whole process, and the same without the live heap before the start. Goal: at most %.1f.\n\n", n, rep.Repeats, startupGoal)
	b.WriteString("| run | live heap before | peak live heap during sync | live heap after sync | peak/after | without baseline |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, v := range runs {
		s := rep.Results[n][v]
		fmt.Fprintf(&b, "| %s | %.1f MiB | %.1f MiB | %.1f MiB | %.2f | %.2f |\n",
			v, s.LiveBefore.Median/(1<<20), s.PeakLive.Median/(1<<20), s.LiveAfter.Median/(1<<20), s.Startup.Median, s.StartupGrowth.Median)
	}
	return b.String()
}
