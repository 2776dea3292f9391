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

// A run's directory renders to a PNG, and its figures replace what lies
// between the markers of a Markdown file, twice over without growing.
func TestRenderAndFill(t *testing.T) {
	dir := t.TempDir()
	csv := "seconds,heap_inuse_bytes,goroutines,objects,writes\n0.0,10485760,190,2000,0\n15.0,11534336,192,2000,150\n30.0,11534336,191,2001,300\n"
	line := "soak duration=1h0m0s objects=2000 writes=36000 restarts=23 compactions=58 lost=0 stale=0 double-owned=0 heap-slope=+0.50%/h goroutines=191->192"
	if err := os.WriteFile(filepath.Join(dir, "samples.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.txt"), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "RELIABILITY.md")
	doc := "# Figures\n\n" + beginMarker + "\n(pending)\n" + endMarker + "\n\nafter\n"
	if err := os.WriteFile(md, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "docs", "soak.png")
	if err := os.MkdirAll(filepath.Dir(png), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := run(dir, png, md); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(png); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("no PNG written (%v)", err)
	}
	b, _ := os.ReadFile(md)
	got := string(b)
	for _, want := range []string{line, "heap in use after GC: 10.0-11.0 MiB; goroutines: 190-192; 3 samples.", "](docs/soak.png)", "\n\nafter\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("filled file lacks %q:\n%s", want, got)
		}
	}
	ja := filepath.Join(dir, "RELIABILITY.ja.md")
	if err := os.WriteFile(ja, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, png, ja); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ja); !strings.Contains(string(b), "GC 後のヒープ使用量: 10.0〜11.0 MiB") {
		t.Errorf("the Japanese file is not filled in Japanese:\n%s", b)
	}
	if strings.Contains(got, "(pending)") || strings.Count(got, beginMarker) != 1 || strings.Count(got, line) != 1 {
		t.Errorf("the section was not replaced exactly once:\n%s", got)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := run("", "", ""); err == nil {
		t.Error("no -in: no error")
	}
	if err := run(dir, "", ""); err == nil {
		t.Error("no samples.csv: no error")
	}
	for _, csv := range []string{"seconds,heap_inuse_bytes,goroutines\n1,2,3\n", "a,b,c\n1,2,3\n4,5,6\n", "seconds,heap_inuse_bytes,goroutines\n1,x,3\n4,5,6\n"} {
		if _, err := readSamples(strings.NewReader(csv)); err == nil {
			t.Errorf("readSamples(%q): no error", csv)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.csv"), []byte("seconds,heap_inuse_bytes,goroutines\n0,1,2\n15,1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, "", filepath.Join(dir, "x.md")); err == nil || !strings.Contains(err.Error(), "no result") {
		t.Errorf("a run without result.txt: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.txt"), []byte("soak ...\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "x.md")
	if err := os.WriteFile(md, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, "", md); err == nil || !strings.Contains(err.Error(), "no "+beginMarker) {
		t.Errorf("a file without markers: %v", err)
	}
}
