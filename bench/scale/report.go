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
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BENCHMARKS.md holds the section between these markers; the harness
// rewrites only what lies between the generated markers inside it, so the
// analysis written around the tables survives a rerun.
const (
	sectionBegin   = "<!-- bench-scale:begin -->"
	sectionEnd     = "<!-- bench-scale:end -->"
	generatedBegin = "<!-- bench-scale:generated:begin -->"
	generatedEnd   = "<!-- bench-scale:generated:end -->"

	// The shard benchmark's section (shards.go).
	shardsSectionBegin   = "<!-- bench-scale-shards:begin -->"
	shardsSectionEnd     = "<!-- bench-scale-shards:end -->"
	shardsGeneratedBegin = "<!-- bench-scale-shards:generated:begin -->"
	shardsGeneratedEnd   = "<!-- bench-scale-shards:generated:end -->"

	// Paths relative to the repository root.
	resultsDir = "bench/scale/results"
	heapPlot   = resultsDir + "/heap-per-object.svg"
	syncPlot   = resultsDir + "/sync-time.svg"
	peakPlot   = resultsDir + "/peak-heap.svg"
	cpuPlot    = resultsDir + "/sync-cpu.svg"
	resultsRaw = resultsDir + "/results.json"
	shardsPlot = resultsDir + "/shards-heap.svg"
	shardsRaw  = resultsDir + "/shards.json"
)

// reportFiles are where one kind of variants run is written: its section
// of BENCHMARKS.md, its plots and its raw results. The default run and
// the decode run (-report decode: the wire encodings, decode.go) each
// have their own, so that neither overwrites the other's tables.
type reportFiles struct {
	section               section
	heap, sync, peak, cpu string
	raw                   string
}

var (
	variantsFiles = reportFiles{variantsSection, heapPlot, syncPlot, peakPlot, cpuPlot, resultsRaw}
	decodeFiles   = reportFiles{
		section{"<!-- bench-scale-decode:begin -->", "<!-- bench-scale-decode:end -->", "<!-- bench-scale-decode:generated:begin -->", "<!-- bench-scale-decode:generated:end -->", "Wire encodings: CPU to sync, in the client and in the API server"},
		resultsDir + "/decode-heap-per-object.svg", resultsDir + "/decode-sync-time.svg", resultsDir + "/decode-peak-heap.svg", resultsDir + "/decode-sync-cpu.svg",
		resultsDir + "/decode.json",
	}
)

// files are the report files of cfg's run.
func (cfg *config) files() reportFiles {
	if cfg.report == reportDecode {
		return decodeFiles
	}
	return variantsFiles
}

func kb(b float64) string { return fmt.Sprintf("%.2f KB", b/1000) }

// tableText is the Markdown table of one N.
func tableText(rep *runReport, n int) string {
	r := rep.Results[n]
	floor, cfloor := rawFloor(r), cpuFloor(r)
	var b strings.Builder
	fmt.Fprintf(&b, "N = %d Pods (median of %d; ± is (max−min)/median). A run named variant@list lists (client-go's LIST, resourceVersion=0), variant@paged lists with ListModeConsistentList; plain names stream (client-go's default). \"vs upstream\" compares with client-go in the same mode (paged: client-go's LIST). Peak heap and peak RSS are the whole process's.\n\n", n, rep.Repeats)
	b.WriteString("| run | heap per Pod after sync | vs upstream | peak heap during sync | vs upstream | peak RSS | CPU time to sync | vs upstream | vs raw floor | wall time to sync | vs raw floor | read from API server | API server CPU |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range rep.Variants {
		s := r[v]
		if !s.ok() {
			fmt.Fprintf(&b, "| %s | failed: %s | | | | | | | | | | | |\n", v, strings.ReplaceAll(s.Err, "|", "/"))
			continue
		}
		up := r[upstreamOf(v)]
		fmt.Fprintf(&b, "| %s | %s ±%.0f%% | %s | %.1f MiB ±%.0f%% | %s | %.1f MiB ±%.0f%% | %.2f s ±%.0f%% | %s | %s | %.2f s ±%.0f%% | %s | %.1f MiB | %s |\n",
			v, kb(s.HeapPerObj.Median), s.HeapPerObj.spread(), times(ratio(s, up, heapOf)),
			s.PeakHeap.Median/(1<<20), s.PeakHeap.spread(), times(ratio(s, up, peakOf)),
			s.PeakRSS.Median/(1<<20), s.PeakRSS.spread(),
			s.CPU.Median, s.CPU.spread(), times(ratio(s, up, cpuOf)), times(ratio(s, cfloor, cpuOf)),
			s.Sync.Median, s.Sync.spread(), times(ratio(s, floor, syncOf)),
			s.BytesRead.Median/(1<<20), apiserverCPUText(s))
	}
	return b.String()
}

// times marks a ratio as a factor; "n/a" (a run without the reference,
// such as the raw floor in a decode run) stays as it is.
func times(ratio string) string {
	if ratio == "n/a" {
		return ratio
	}
	return ratio + "×"
}

// apiserverCPUText is the API server's CPU seconds during a run, where
// measured (results from before it was measured have none).
func apiserverCPUText(s *summary) string {
	if s.APIServerCPU.Median == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f s ±%.0f%%", s.APIServerCPU.Median, s.APIServerCPU.spread())
}

func generatedSection(rep *runReport, files reportFiles) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Generated by `hack/bench-scale.sh` on %s: %s; kube-apiserver %s and etcd from test/e2e/testenv on the same machine. Every figure is the median of %d runs, each in a fresh process.\n\n", rep.Date, rep.Machine, rep.Server, rep.Repeats)
	b.WriteString(rep.Pod.String() + "\n\n")
	fmt.Fprintf(&b, "![heap per Pod against N](%s) ![peak heap against N](%s) ![CPU time to sync against N](%s) ![time to sync against N](%s)\n\n", files.heap, files.peak, files.cpu, files.sync)
	for _, n := range rep.Counts {
		b.WriteString(tableText(rep, n))
		b.WriteString("\n")
		if t := crTableText(rep, n); t != "" {
			b.WriteString(t + "\n")
		}
	}
	b.WriteString("Summary lines of the run, for each N (the largest last, as the run ends):\n\n```\n" + summaryLines(rep) + "```\n")
	return b.String()
}

// writeResults updates BENCHMARKS.md, the plots and the raw results.
func writeResults(cfg *config, rep *runReport) error {
	files := cfg.files()
	if err := writeRaw(cfg, files.raw, rep); err != nil {
		return err
	}
	if err := plotAgainstN(rep, filepath.Join(cfg.repoRoot, files.heap), "Heap in use per cached Pod", "KB per Pod", func(s *summary) float64 { return s.HeapPerObj.Median / 1000 }); err != nil {
		return err
	}
	if err := plotAgainstN(rep, filepath.Join(cfg.repoRoot, files.sync), "Time to sync", "seconds", func(s *summary) float64 { return s.Sync.Median }); err != nil {
		return err
	}
	if err := plotAgainstN(rep, filepath.Join(cfg.repoRoot, files.peak), "Peak heap in use during sync (whole process)", "MiB", func(s *summary) float64 { return s.PeakHeap.Median / (1 << 20) }); err != nil {
		return err
	}
	if err := plotAgainstN(rep, filepath.Join(cfg.repoRoot, files.cpu), "CPU time to sync", "seconds", func(s *summary) float64 { return s.CPU.Median }); err != nil {
		return err
	}
	return updateMarkdown(filepath.Join(cfg.repoRoot, "BENCHMARKS.md"), files.section, generatedSection(rep, files))
}

// writeRaw writes a run's report as indented JSON to file, relative to the
// repository root.
func writeRaw(cfg *config, file string, rep any) error {
	if err := os.MkdirAll(filepath.Join(cfg.repoRoot, resultsDir), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.repoRoot, file), append(raw, '\n'), 0o644)
}

// rewriteFromRaw renders BENCHMARKS.md and the plots from the raw results
// of the last run, measuring nothing.
func rewriteFromRaw(cfg *config) int {
	if err := rewrite(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "bench-scale: -rewrite: %v\n", err)
		return 1
	}
	return 0
}

func rewrite(cfg *config) error {
	raw, err := os.ReadFile(filepath.Join(cfg.repoRoot, cfg.files().raw))
	if err != nil {
		return err
	}
	var rep runReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("%s: %w", cfg.files().raw, err)
	}
	if len(rep.Counts) == 0 {
		return fmt.Errorf("%s holds no run", cfg.files().raw)
	}
	if err := writeResults(cfg, &rep); err != nil {
		return err
	}
	fmt.Print(summaryLines(&rep))
	return nil
}

// section names one section of BENCHMARKS.md that the harness writes: the
// variants' and the shard benchmark's each have their own markers, so a
// run of one never touches the other's tables.
type section struct {
	begin, end, generatedBegin, generatedEnd, title string
}

var (
	variantsSection = section{sectionBegin, sectionEnd, generatedBegin, generatedEnd, "Memory and time to sync at scale"}
	shardsSection   = section{shardsSectionBegin, shardsSectionEnd, shardsGeneratedBegin, shardsGeneratedEnd, "Sharding: memory and time to sync per replica"}
)

// updateMarkdown replaces the generated part of section sec, adding the
// section at the end if the file has none.
func updateMarkdown(path string, sec section, generated string) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(b)
	block := sec.generatedBegin + "\n" + generated + sec.generatedEnd
	if i, j := strings.Index(s, sec.generatedBegin), strings.Index(s, sec.generatedEnd); i >= 0 && j > i {
		s = s[:i] + block + s[j+len(sec.generatedEnd):]
	} else if i, j := strings.Index(s, sec.begin), strings.Index(s, sec.end); i >= 0 && j > i {
		s = s[:j] + block + "\n" + s[j:]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + sec.begin + "\n## " + sec.title + "\n\n" + block + "\n" + sec.end + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

var palette = []color.Color{
	color.RGBA{0, 0, 0, 255}, color.RGBA{230, 97, 0, 255}, color.RGBA{93, 58, 155, 255},
	color.RGBA{0, 114, 178, 255}, color.RGBA{0, 158, 115, 255}, color.RGBA{204, 121, 167, 255},
	color.RGBA{128, 128, 128, 255}, color.RGBA{180, 180, 180, 255}, color.RGBA{213, 94, 0, 255},
}

// plotAgainstN draws one line per variant of f against N (log scale).
func plotAgainstN(rep *runReport, path, title, ylabel string, f func(*summary) float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "Pods (N)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = nTicks(rep.Counts)
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	for i, v := range rep.Variants {
		var pts plotter.XYs
		for _, n := range rep.Counts {
			if s := rep.Results[n][v]; s != nil && s.ok() {
				pts = append(pts, plotter.XY{X: float64(n), Y: f(s)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		c := palette[i%len(palette)]
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.5)
		points.Shape = draw.CircleGlyph{}
		if i >= len(palette)/2 {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(line, points)
		p.Legend.Add(v, line, points)
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

type nTicks []int

func (t nTicks) Ticks(_, _ float64) []plot.Tick {
	var ticks []plot.Tick
	for _, n := range t {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
	}
	return ticks
}
