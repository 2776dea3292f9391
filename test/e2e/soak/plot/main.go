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

// Command plot renders a soak run (hack/soak.sh): a PNG of heap-in-use and
// goroutines over time from the run's samples.csv and, with -md, fills in
// the figures of RELIABILITY.md and RELIABILITY.ja.md between their
// "<!-- soak-1h:begin -->" and "<!-- soak-1h:end -->" markers. It lives in
// a module of its own so that the library and the e2e suite do not
// depend on gonum/plot.
//
//	go run . -in ../results/<run>                      # writes <run>/soak.png
//	go run . -in ../results/<run> -md ../../../../RELIABILITY.md,../../../../RELIABILITY.ja.md
package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func main() {
	in := flag.String("in", "", "the run's directory: samples.csv and result.txt, as hack/soak.sh writes them")
	out := flag.String("png", "", "the PNG to write (default: <in>/soak.png)")
	md := flag.String("md", "", "comma-separated Markdown files whose soak-1h section to fill in")
	flag.Parse()
	if err := run(*in, *out, *md); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out, md string) error {
	if in == "" {
		return errors.New("-in is required")
	}
	if out == "" {
		out = filepath.Join(in, "soak.png")
	}
	f, err := os.Open(filepath.Join(in, "samples.csv"))
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	s, err := readSamples(f)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if err := render(s, out); err != nil {
		return err
	}
	fmt.Println("wrote", out)
	if md == "" {
		return nil
	}
	line, err := os.ReadFile(filepath.Join(in, "result.txt"))
	if err != nil {
		return fmt.Errorf("the run has no result (still running?): %w", err)
	}
	for _, path := range strings.Split(md, ",") {
		rel, err := filepath.Rel(filepath.Dir(path), out)
		if err != nil {
			return err
		}
		if err := fill(path, strings.TrimSpace(string(line)), filepath.ToSlash(rel), s); err != nil {
			return err
		}
		fmt.Println("filled in", path)
	}
	return nil
}

// samples are the columns of samples.csv that the plot uses.
type samples struct {
	minutes, heapMiB, goroutines []float64
}

func readSamples(r io.Reader) (samples, error) {
	var s samples
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return s, err
	}
	if len(rows) < 3 {
		return s, fmt.Errorf("%d rows, want a header and at least two samples", len(rows))
	}
	if got := strings.Join(rows[0], ","); !strings.HasPrefix(got, "seconds,heap_inuse_bytes,goroutines") {
		return s, fmt.Errorf("header %q, want one that starts seconds,heap_inuse_bytes,goroutines", got)
	}
	for i, row := range rows[1:] {
		var v [3]float64
		for j := range v {
			if v[j], err = strconv.ParseFloat(row[j], 64); err != nil {
				return s, fmt.Errorf("row %d: %w", i+2, err)
			}
		}
		s.minutes = append(s.minutes, v[0]/60)
		s.heapMiB = append(s.heapMiB, v[1]/(1<<20))
		s.goroutines = append(s.goroutines, v[2])
	}
	return s, nil
}

// render draws heap-in-use above goroutines, both against minutes.
func render(s samples, out string) error {
	heap, err := panel("Heap in use after GC (MiB)", s.minutes, s.heapMiB, color.RGBA{R: 31, G: 119, B: 180, A: 255})
	if err != nil {
		return err
	}
	gor, err := panel("Goroutines", s.minutes, s.goroutines, color.RGBA{R: 214, G: 39, B: 40, A: 255})
	if err != nil {
		return err
	}
	gor.X.Label.Text = "minutes since the writer started"
	heap.Title.Text = fmt.Sprintf("Soak: %.0f minutes, a sample every %.0f s", s.minutes[len(s.minutes)-1], (s.minutes[1]-s.minutes[0])*60)
	img := vgimg.New(8*vg.Inch, 6*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(8)}
	plots := [][]*plot.Plot{{heap}, {gor}}
	canvases := plot.Align(plots, tiles, dc)
	heap.Draw(canvases[0][0])
	gor.Draw(canvases[1][0])
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func panel(title string, x, y []float64, c color.Color) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = title
	p.Y.Min = 0
	pts := make(plotter.XYs, len(x))
	for i := range x {
		pts[i] = plotter.XY{X: x[i], Y: y[i]}
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	p.Add(l, plotter.NewGrid())
	maxY := 0.0
	for _, v := range y {
		maxY = max(maxY, v)
	}
	p.Y.Max = maxY * 1.15
	return p, nil
}

const (
	beginMarker = "<!-- soak-1h:begin -->"
	endMarker   = "<!-- soak-1h:end -->"
)

// fill replaces what lies between the markers of the file at path with the
// run's line, its extremes and the plot.
func fill(path, line, image string, s samples) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(b)
	i, j := strings.Index(text, beginMarker), strings.Index(text, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s ... %s section", path, beginMarker, endMarker)
	}
	lo, hi := minMax(s.heapMiB)
	glo, ghi := minMax(s.goroutines)
	var w strings.Builder
	bw := bufio.NewWriter(&w)
	fmt.Fprintf(bw, "%s\n\n```\n%s\n```\n\n", beginMarker, line)
	if strings.HasSuffix(path, ".ja.md") {
		fmt.Fprintf(bw, "GC 後のヒープ使用量: %.1f〜%.1f MiB、goroutine: %.0f〜%.0f、サンプル %d 個。\n\n", lo, hi, glo, ghi, len(s.minutes))
		fmt.Fprintf(bw, "![1 時間のソークにおけるヒープと goroutine の推移](%s)\n\n", image)
	} else {
		fmt.Fprintf(bw, "heap in use after GC: %.1f-%.1f MiB; goroutines: %.0f-%.0f; %d samples.\n\n", lo, hi, glo, ghi, len(s.minutes))
		fmt.Fprintf(bw, "![heap and goroutines over the one-hour soak](%s)\n\n", image)
	}
	_ = bw.Flush()
	out := text[:i] + w.String() + text[j:]
	return os.WriteFile(path, []byte(out), 0o644)
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
