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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseFlagsShards(t *testing.T) {
	cfg, err := parseFlags([]string{"-repo", t.TempDir(), "-shards", "8,1,4,2"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.shards, []int{1, 2, 4, 8}) || !slices.Equal(cfg.counts, []int{10000}) || len(cfg.variants) != 0 || cfg.repeats != 3 {
		t.Errorf("got shards %v counts %v variants %v repeats %d; want [1 2 4 8], [10000], none, 3", cfg.shards, cfg.counts, cfg.variants, cfg.repeats)
	}
	cfg, err = parseFlags([]string{"-repo", t.TempDir(), "-shards", "2", "-n", "300", "-repeats", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.counts, []int{300}) || cfg.repeats != 1 {
		t.Errorf("-n 300 -repeats 1: got counts %v repeats %d", cfg.counts, cfg.repeats)
	}

	for _, args := range [][]string{
		{"-shards", "0"},
		{"-shards", "65"},
		{"-shards", ""},
		{"-shards", "2,x"},
		{"-shards", "2,2"},
		{"-shards", "2", "-variants", "ours"},
		{"-shards", "2", "-profile", "prof"},
		{"-shards", "2", "-n", "1000,10000"},
		{"-smoke", "-shards", "2"},
	} {
		if _, err := parseFlags(append([]string{"-repo", t.TempDir()}, args...)); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
	}
}

func TestParseFlagsVariantsUnchanged(t *testing.T) {
	cfg, err := parseFlags([]string{"-repo", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.shards) != 0 || !slices.Equal(cfg.variants, allVariants()) || !slices.Equal(cfg.counts, []int{1000, 10000, 30000}) {
		t.Errorf("defaults: shards %v variants %v counts %v", cfg.shards, cfg.variants, cfg.counts)
	}
}

func TestCheckPartition(t *testing.T) {
	want := map[string]bool{"a/1": true, "a/2": true, "b/1": true, "b/2": true}
	runs := func(counts ...int) []result {
		var rs []result
		for _, c := range counts {
			rs = append(rs, result{Objects: c})
		}
		return rs
	}
	for _, tc := range []struct {
		name    string
		runs    []result
		keys    [][]string
		wantErr string
	}{
		{"exact", runs(1, 3), [][]string{{"b/2"}, {"a/1", "a/2", "b/1"}}, ""},
		{"one replica", runs(4), [][]string{{"a/1", "a/2", "b/1", "b/2"}}, ""},
		{"sum short", runs(1, 2), [][]string{{"b/2"}, {"a/1", "a/2"}}, "hold 3 Pods together, want 4"},
		{"sum over", runs(2, 3), [][]string{{"b/2", "a/1"}, {"a/1", "a/2", "b/1"}}, "hold 5 Pods together, want 4"},
		{"duplicate with the right sum", runs(2, 2), [][]string{{"a/1", "a/2"}, {"a/2", "b/1"}}, "a/2 is held by replicas 0 and 1"},
		{"unknown", runs(2, 2), [][]string{{"a/1", "a/2"}, {"b/1", "c/1"}}, "replica 1 holds c/1"},
		{"keys of too few replicas", runs(2, 2), [][]string{{"a/1", "a/2"}}, "keys of 1 replicas, want 2"},
		{"fewer keys than counted", runs(2, 2), [][]string{{"a/1", "a/2"}, {"b/1"}}, "b/2 is held by no replica"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPartition(want, tc.runs, tc.keys)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}

// fakeShardReport is a run over n Pods whose replicas hold heap[S] bytes
// each and read read[S] bytes each.
func fakeShardReport(n int, heap, read map[int]float64) *shardReport {
	rep := &shardReport{N: n, Repeats: 1, Results: []*shardSummary{{Shards: 0}}}
	for s := range heap {
		if s > 0 {
			rep.Shards = append(rep.Shards, s)
		}
	}
	slices.Sort(rep.Shards)
	for _, s := range rep.Shards {
		rep.Results = append(rep.Results, &shardSummary{Shards: s})
	}
	for _, s := range rep.Results {
		var rs []result
		for range s.replicas() {
			rs = append(rs, result{Objects: n / s.replicas(), HeapBytes: uint64(heap[s.Shards]), HeapProcess: uint64(heap[s.Shards]) + 4<<20, BytesRead: int64(read[s.Shards]), SyncSec: 1})
		}
		s.Runs = [][]result{rs}
		s.aggregate()
	}
	return rep
}

func TestShardGoalAndServerFilter(t *testing.T) {
	const mb = 1 << 20
	rep := fakeShardReport(8000,
		map[int]float64{0: 100 * mb, 1: 101 * mb, 2: 60 * mb, 8: 14 * mb},
		map[int]float64{0: 40 * mb, 1: 40 * mb, 2: 20 * mb, 8: 40 * mb})
	checkServerFiltered(rep)
	byS := map[int]*shardSummary{}
	for _, s := range rep.Results {
		byS[s.Shards] = s
	}
	if !byS[2].ok() || !byS[1].ok() {
		t.Errorf("S=1, 2 read about the unsharded bytes together, yet failed: %q, %q", byS[1].Err, byS[2].Err)
	}
	if byS[8].ok() || !strings.Contains(byS[8].Err, "did not filter") {
		t.Errorf("S=8 read 8× the unsharded bytes together; want a failure, got %q", byS[8].Err)
	}
	if checkShardReport(rep) != true {
		t.Error("checkShardReport reported no failure")
	}

	rep = fakeShardReport(8000,
		map[int]float64{0: 100 * mb, 1: 101 * mb, 2: 60 * mb, 8: 14 * mb},
		map[int]float64{0: 40 * mb, 1: 40 * mb, 2: 20 * mb, 8: 5 * mb})
	checkServerFiltered(rep)
	if checkShardReport(rep) {
		t.Fatal("a filtered run failed")
	}
	// 1.01 ≤ 1.15 and 0.14 ≤ 0.14375 meet the goal; 0.60 > 0.575 misses it.
	table := shardTableText(rep)
	for _, want := range []string{"| 1 | 101.0 MiB", "≤ 1.150: met", "≤ 0.575: **missed**", "≤ 0.144: met", "| 1000–1000 |"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	last := shardLastLine(rep)
	if want := "S=1 1.010, S=2 0.600, S=8 0.140 (goal 1.15/S: met, missed, met)"; !strings.Contains(last, want) {
		t.Errorf("last line %q lacks %q", last, want)
	}
	if want := "reads vs unsharded S=1 1.00, S=2 1.00, S=8 1.00"; !strings.Contains(last, want) {
		t.Errorf("last line %q lacks %q", last, want)
	}
}

func TestUpdateMarkdownKeepsTheOtherSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	doc := "# Benchmarks\n\nprose before\n\n" +
		sectionBegin + "\n## Memory\n\n" + generatedBegin + "\nvariants table\n" + generatedEnd + "\n\nvariants prose\n" + sectionEnd + "\n\n" +
		shardsSectionBegin + "\n## Sharding\n\n" + shardsGeneratedBegin + "\nold shards table\n" + shardsGeneratedEnd + "\n\nshards prose\n" + shardsSectionEnd + "\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateMarkdown(path, shardsSection, "new shards table\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := strings.Replace(doc, "old shards table", "new shards table", 1)
	if string(b) != want {
		t.Errorf("after the shard update:\n%s\nwant:\n%s", b, want)
	}
	if err := updateMarkdown(path, variantsSection, "new variants table\n"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	want = strings.Replace(want, "variants table", "new variants table", 1)
	if string(b) != want {
		t.Errorf("after the variants update:\n%s\nwant:\n%s", b, want)
	}

	// A file without the shard section gets it appended; the rest stays.
	path2 := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	first := "# Benchmarks\n\n" + sectionBegin + "\n" + generatedBegin + "\nx\n" + generatedEnd + "\n" + sectionEnd + "\n"
	if err := os.WriteFile(path2, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateMarkdown(path2, shardsSection, "shards\n"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path2)
	want = first + "\n" + shardsSectionBegin + "\n## " + shardsSection.title + "\n\n" + shardsGeneratedBegin + "\nshards\n" + shardsGeneratedEnd + "\n" + shardsSectionEnd + "\n"
	if string(b) != want {
		t.Errorf("appended:\n%s\nwant:\n%s", b, want)
	}
}

func TestPlotShards(t *testing.T) {
	const mb = 1 << 20
	rep := fakeShardReport(8000,
		map[int]float64{0: 100 * mb, 1: 100 * mb, 2: 51 * mb, 4: 27 * mb, 8: 14 * mb},
		map[int]float64{0: 40 * mb, 1: 40 * mb, 2: 20 * mb, 4: 10 * mb, 8: 5 * mb})
	path := filepath.Join(t.TempDir(), "shards.svg")
	if err := plotShards(rep, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "goal: unsharded × 1.15/S", "informer heap, median replica"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
}

// TestGeneratedSectionsNameTheServer: both generated sections name the
// server the run measured, from its /version, and open with the Pod sizes.
func TestGeneratedSectionsNameTheServer(t *testing.T) {
	pod := podSizes{JSON: 7402, ManagedFieldsJSON: 2907, ManagedFieldsEntries: 2, Proto: 5090}
	for name, text := range map[string]string{
		"variants": generatedSection(&runReport{Server: "v9.8.7", Repeats: 1, Pod: pod, Counts: []int{10}}, variantsFiles),
		"shards": shardGeneratedSection(&shardReport{Server: "v9.8.7", Repeats: 1, N: 10, Shards: []int{1}, Pod: pod,
			Results: []*shardSummary{{Shards: 0}, {Shards: 1}}}),
	} {
		if !strings.Contains(text, "kube-apiserver v9.8.7 and etcd") {
			t.Errorf("%s section does not name the server: %q", name, text)
		}
		if !strings.Contains(text, "A loaded Pod is 7402 B of JSON (of which managedFields: 2907 B in 2 entries) and 5090 B of protobuf.") {
			t.Errorf("%s section lacks the Pod sizes: %q", name, text)
		}
	}
}

// TestRewriteFromRaw renders BENCHMARKS.md and the plots from the committed
// raw results, as -rewrite does, into a scratch repository.
func TestRewriteFromRaw(t *testing.T) {
	raw, err := os.ReadFile(resultsRaw[len("bench/scale/"):])
	if err != nil {
		t.Fatal(err)
	}
	var rep runReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cfg := &config{repoRoot: root, rewrite: true}
	if rc := rewriteFromRaw(cfg); rc == 0 {
		t.Error("-rewrite without results succeeded")
	}
	if err := os.MkdirAll(filepath.Join(root, resultsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, resultsRaw), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if rc := rewriteFromRaw(cfg); rc != 0 {
		t.Fatalf("-rewrite: exit %d", rc)
	}
	md, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rep.Counts {
		for _, want := range []string{fmt.Sprintf("N = %d Pods", n), fmt.Sprintf("bench-scale N=%d:", n), fmt.Sprintf("bench-scale-peak N=%d:", n)} {
			if !strings.Contains(string(md), want) {
				t.Errorf("BENCHMARKS.md lacks %q", want)
			}
		}
	}
	for _, plot := range []string{heapPlot, syncPlot, peakPlot, cpuPlot} {
		if _, err := os.Stat(filepath.Join(root, plot)); err != nil {
			t.Error(err)
		}
	}
	if _, err := parseFlags([]string{"-repo", root, "-rewrite", "-smoke"}); err == nil {
		t.Error("-rewrite -smoke: no error")
	}
}
