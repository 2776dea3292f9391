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
	"strings"
	"testing"
)

const mebi = 1 << 20

// memRun is one run of the memory comparison: live heap before, peak
// during and after sync, in MiB, and the estimate in MiB (-1: none).
func memRun(v string, before, peak, after, estimate float64) *summary {
	est := int64(-1)
	if estimate >= 0 {
		est = int64(estimate * mebi)
	}
	s := &summary{Variant: v, N: 10, Runs: []result{{
		Variant: v, LiveBefore: uint64(before * mebi), PeakLive: uint64(peak * mebi), LiveAfter: uint64(after * mebi), Estimate: est,
	}}}
	s.aggregate()
	return s
}

func TestMemLine(t *testing.T) {
	r := map[string]*summary{
		crVariant:          memRun(crVariant, 4, 1000, 900, -1),
		crcacheVariant:     memRun(crcacheVariant, 4, 300, 280, 250),
		crcacheKeepVariant: memRun(crcacheKeepVariant, 4, 200, 164, 176),
	}
	if memMeasured(r) {
		t.Fatal("memMeasured without the budgeted run = true")
	}
	b := memRun(budgetVariant, 4, 250, 5, -1)
	b.Runs[0].Budget, b.Runs[0].StoppedAt, b.Runs[0].Stopped = memBudget, 20480, "pods (v1): stopped: its memory budget of 256 MiB"
	r[budgetVariant] = b
	if !memMeasured(r) {
		t.Fatal("memMeasured with every run = false")
	}
	rep := &runReport{Counts: []int{10}, Repeats: 1, Variants: memVariants, Results: map[int]map[string]*summary{10: r}}
	want := "bench-scale-mem N=10: peak-heap cr=1000.0 crcache=300.0 crcache-keep=200.0; estimate/heap crcache=0.91 crcache-keep=1.10; budget=256 stopped-at=20480 peak-heap=250.0"
	if got := memLine(rep, 10); got != want {
		t.Errorf("memLine =\n %s\nwant\n %s", got, want)
	}
	if lines := summaryLines(rep); !strings.Contains(lines, want+"\n") {
		t.Errorf("summaryLines lacks the mem line:\n%s", lines)
	}
	// Every goal met: keep 200 <= 0.25*1000, 0.91 and 1.10 in range,
	// 250 <= 256+4, stopped naming pods and the budget.
	if checkMem(rep, 10, false) {
		t.Error("checkMem failed with every goal met")
	}
	// Each goal missed in turn.
	for name, spoil := range map[string]func(){
		"keep's peak":      func() { r[crcacheKeepVariant] = memRun(crcacheKeepVariant, 4, 260, 164, 176) },
		"estimate":         func() { r[crcacheVariant] = memRun(crcacheVariant, 4, 300, 280, 320) },
		"budget's peak":    func() { b.Runs[0].PeakLive = 261 * mebi },
		"budget not named": func() { b.Runs[0].Stopped = "something failed" },
		"not stopped":      func() { b.Runs[0].Stopped = "" },
	} {
		saved := map[string]*summary{}
		for k, v := range r {
			c := *v
			c.Runs = append([]result(nil), v.Runs...)
			saved[k] = &c
		}
		spoil()
		if !checkMem(rep, 10, false) {
			t.Errorf("%s: checkMem passed", name)
		}
		for k, v := range saved {
			r[k] = v
		}
		b = r[budgetVariant]
	}
	if got := memLine(&runReport{Counts: []int{10}, Results: map[int]map[string]*summary{10: {}}}, 10); got != "bench-scale-mem N=10: peak-heap cr=n/a crcache=n/a crcache-keep=n/a; estimate/heap crcache=n/a crcache-keep=n/a; budget=n/a stopped-at=n/a peak-heap=n/a" {
		t.Errorf("memLine without runs = %q", got)
	}
}

func TestStartupLine(t *testing.T) {
	r := map[string]*summary{
		"ours":              memRun("ours", 4, 130, 104, -1),
		"ours@list":         memRun("ours@list", 4, 254, 104, -1),
		rawPaged:            memRun(rawPaged, 4, 50, 40, -1),
		budgetVariant:       memRun(budgetVariant, 4, 250, 5, -1),
		"crcache@paged":     memRun("crcache@paged", 4, 44, 40, -1),
		"crcache-keep@list": {Variant: "crcache-keep@list", N: 10, Err: "failed"},
	}
	rep := &runReport{Counts: []int{10}, Repeats: 1, Variants: []string{"ours", "ours@list", rawPaged, budgetVariant, "crcache@paged", "crcache-keep@list"}, Results: map[int]map[string]*summary{10: r}}
	want := "bench-scale-startup N=10: peak-live/live-after ours=1.25 ours@list=2.44 crcache@paged=1.10; without baseline ours=1.26 ours@list=2.50 crcache@paged=1.11"
	if got := startupLine(rep, 10); got != want {
		t.Errorf("startupLine =\n %s\nwant\n %s", got, want)
	}
	table := startupTableText(rep, 10)
	if !strings.Contains(table, "| ours@list | 4.0 MiB | 254.0 MiB | 104.0 MiB | 2.44 | 2.50 |") || strings.Contains(table, rawPaged) {
		t.Errorf("startupTableText:\n%s", table)
	}
}
