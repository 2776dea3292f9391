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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis, utime 1234 and
	// stime 566 ticks.
	line := "4242 (kube apiserver) S 1 4242 4242 0 -1 4194560 120 0 0 0 1234 566 0 0 20 0 17 0 100 1000000 2000 18446744073709551615"
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 18.0; got != want {
		t.Errorf("parseStatCPU = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "4242 kube-apiserver S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 120 0 0 0 abc 566"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) = nil error", bad)
		}
	}
	// This process's own line parses, and its CPU time is not negative.
	if cpu, err := pidCPU(os.Getpid()); err != nil || cpu < 0 {
		t.Errorf("pidCPU(self) = %v, %v", cpu, err)
	}
	if _, err := pidCPU(0); err == nil {
		t.Error("pidCPU(0) = nil error")
	}
}

func TestDecodeLine(t *testing.T) {
	sum := func(v string, cpu, heap, peak, api float64) *summary {
		return &summary{Variant: v, N: 10, Runs: []result{{}}, CPU: stat{Median: cpu}, HeapPerObj: stat{Median: heap}, PeakHeap: stat{Median: peak}, APIServerCPU: stat{Median: api}}
	}
	r := map[string]*summary{
		"upstream":          sum("upstream", 2, 100, 400, 4),
		"upstream-json":     sum("upstream-json", 8, 100, 500, 8),
		"upstream-protobuf": sum("upstream-protobuf", 2.5, 100, 400, 4),
		"ours":              sum("ours", 2.2, 101, 404, 4),
	}
	if decodeMeasured(r) {
		t.Fatal("decodeMeasured without the lean run = true")
	}
	r[leanVariant] = sum(leanVariant, 1, 28, 100, 2)
	if !decodeMeasured(r) {
		t.Fatal("decodeMeasured with every run = false")
	}
	rep := &runReport{Counts: []int{10}, Results: map[int]map[string]*summary{10: r}}
	want := "bench-scale-decode N=10: cpu lean/upstream=0.50 lean/upstream-json=0.12 lean/upstream-protobuf=0.40 ours/upstream=1.10; heap lean/upstream=0.28; stream peak lean/upstream=0.25; apiserver cpu lean/upstream=0.50 lean/upstream-json=0.25"
	if got := decodeLine(rep, 10); got != want {
		t.Errorf("decodeLine =\n %s\nwant\n %s", got, want)
	}
	if lines := summaryLines(rep); !strings.Contains(lines, want+"\n") {
		t.Errorf("summaryLines lacks the decode line:\n%s", lines)
	}
}

// TestDecodeReportHasItsOwnFiles: -report decode writes its own section of
// BENCHMARKS.md, its own plots and raw results, and leaves the main
// section as it was.
func TestDecodeReportHasItsOwnFiles(t *testing.T) {
	root := t.TempDir()
	main := variantsSection.begin + "\n## main\n\n" + variantsSection.generatedBegin + "\nthe main tables\n" + variantsSection.generatedEnd + "\n" + variantsSection.end + "\n"
	if err := os.WriteFile(filepath.Join(root, "BENCHMARKS.md"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags([]string{"-repo", root, "-report", "decode", "-n", "10", "-variants", strings.Join(decodeVariants, ",")})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(v string) *summary {
		return &summary{Variant: v, N: 10, Runs: []result{{}}, CPU: stat{Median: 1}, HeapPerObj: stat{Median: 1}, PeakHeap: stat{Median: 1}, APIServerCPU: stat{Median: 1}}
	}
	r := map[string]*summary{}
	for _, v := range decodeVariants {
		r[v] = sum(v)
	}
	rep := &runReport{Server: "v9.8.7", Repeats: 1, Counts: []int{10}, Variants: decodeVariants, Results: map[int]map[string]*summary{10: r}}
	if err := writeResults(cfg, rep); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(md), main) {
		t.Errorf("the main section changed:\n%s", md)
	}
	for _, want := range []string{decodeFiles.section.begin, "bench-scale-decode N=10:", decodeFiles.cpu} {
		if !strings.Contains(string(md), want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
	for _, f := range []string{decodeFiles.heap, decodeFiles.sync, decodeFiles.peak, decodeFiles.cpu, decodeFiles.raw} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []string{heapPlot, resultsRaw} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("-report decode wrote %s", f)
		}
	}
	if _, err := parseFlags([]string{"-repo", root, "-report", "other"}); err == nil {
		t.Error("-report other: no error")
	}
}
