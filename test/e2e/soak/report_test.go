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
	"bytes"
	"math"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

func TestHeapSlope(t *testing.T) {
	// 100 MB, growing 1 MB every 10 minutes from the warm-up on: 6 MB/h
	// over a mean of 102.5 MB; the samples before the warm-up (a start-up
	// peak) are left out.
	samples := []sample{{at: 0, heapInuse: 500e6}, {at: 30 * time.Second, heapInuse: 400e6}}
	for i := range 6 {
		samples = append(samples, sample{at: time.Minute + time.Duration(i)*10*time.Minute, heapInuse: uint64(100e6 + i*1e6)})
	}
	got, ok := heapSlope(samples, time.Minute)
	if want := 6e6 / 102.5e6 * 100; !ok || math.Abs(got-want) > 1e-9 {
		t.Errorf("heapSlope = %v, %v; want %v", got, ok, want)
	}
	flat := []sample{{at: time.Minute, heapInuse: 7e6}, {at: 2 * time.Minute, heapInuse: 7e6}}
	if got, ok := heapSlope(flat, time.Minute); !ok || got != 0 {
		t.Errorf("flat heapSlope = %v, %v; want 0, true", got, ok)
	}
	shrinking := []sample{{at: time.Minute, heapInuse: 8e6}, {at: 31 * time.Minute, heapInuse: 6e6}}
	if got, _ := heapSlope(shrinking, time.Minute); math.Abs(got-(-4e6/7e6*100)) > 1e-9 {
		t.Errorf("shrinking heapSlope = %v", got)
	}
	for _, few := range [][]sample{nil, {{at: time.Minute, heapInuse: 1}}, {{at: time.Minute, heapInuse: 1}, {at: time.Minute, heapInuse: 2}}} {
		if _, ok := heapSlope(few, time.Minute); ok {
			t.Errorf("heapSlope(%v) ok with too few samples", few)
		}
	}
}

func TestResultLineAndGoals(t *testing.T) {
	r := result{duration: 10*time.Minute + 400*time.Millisecond, objects: 2000, writes: 5400, restarts: 3, compactions: 8,
		crdCycles: 3, crdEmptied: 1083 * time.Millisecond, crdSynced: 1517 * time.Millisecond,
		heapSlope: -1.234, heapSlopeOK: true, heapSpan: 59 * time.Minute,
		goroutinesA: goroutines{total: 412, watches: 19, inWatch: 19}, goroutinesB: goroutines{total: 431, watches: 19, inWatch: 35}}
	r.mgr = mgrResult{reconciles: 12345, setNamespaces: 4, memberships: 4, crdCycles: 3, settleMax: 2345 * time.Millisecond}
	want := "soak duration=10m0s objects=2000 writes=5400 restarts=3 compactions=8 crd-cycles=3 crd-emptied-max=1.08s crd-synced-max=1.52s lost=0 stale=0 double-owned=0 " +
		"mgr-reconciles=12345 mgr-setns=4 mgr-memberships=4 mgr-crd-cycles=3 mgr-settle-max=2.35s mgr-lost=0 mgr-stale=0 mgr-double-owned=0 " +
		"heap-slope=-1.23%/h goroutines=412->431 watches=19->19 other-goroutines=393->396"
	if got := r.line(); got != want {
		t.Errorf("line() = %q\nwant      %q", got, want)
	}
	if f := r.failures(); len(f) != 0 {
		t.Errorf("failures() = %q, want none", f)
	}

	bad := r
	bad.lost, bad.heapSlope, bad.goroutinesB.total, bad.goroutinesB.watches = 1, 5.01, 442, 22
	f := bad.failures()
	if len(f) != 4 || !strings.Contains(f[0], "lost=1") || !strings.Contains(f[1], "5.01%/h") ||
		!strings.Contains(f[2], "outside watch streams went from 393 to 407") || !strings.Contains(f[3], "streams went from 19 to 22") {
		t.Errorf("failures() = %q, want the lost object, the heap slope, the goroutines and the watches", f)
	}
	fewer := r
	fewer.goroutinesB.total = 417 // 11 fewer outside watches is as suspicious as more
	if len(fewer.failures()) != 1 {
		t.Errorf("failures() = %q for 393->382 outside watches", fewer.failures())
	}
	crd := r
	crd.crdFailures, crd.crdSynced = 1, 10*time.Second+time.Millisecond
	if f := crd.failures(); len(f) != 2 || !strings.Contains(f[0], "1 of 4 CRD cycles failed") || !strings.Contains(f[1], "10.001s to sync") {
		t.Errorf("failures() = %q, want the failed CRD cycle and the slow sync", f)
	}
	mgr := r
	mgr.mgr.stale, mgr.mgr.double, mgr.mgr.failures, mgr.mgr.settleMax = 2, 1, 1, 10*time.Second+time.Millisecond
	if f := mgr.failures(); len(f) != 3 || !strings.Contains(f[0], "managers differ from the server: lost=0 stale=2 double-owned=1") ||
		!strings.Contains(f[1], "1 of the managers' 12 faults failed") || !strings.Contains(f[2], "10.001s to match the server") {
		t.Errorf("failures() = %q, want the managers' counts, the failed fault and the slow settle", f)
	}
	wantTable := "" +
		"             lost  stale  double-owned\n" +
		"factories       1      0             0\n" +
		"managers        0      2             1\n"
	mgr.lost = 1
	if got := mgr.table(); got != wantTable {
		t.Errorf("table() =\n%s\nwant\n%s", got, wantTable)
	}
	short := r
	short.heapSlope, short.heapSpan = 45.12, 9*time.Minute
	if f := short.failures(); len(f) != 0 {
		t.Errorf("a 9-minute slope of 45%%/h: failures() = %q, want none (not judged)", f)
	}
	short.heapSpan = minHeapSpan
	if f := short.failures(); len(f) != 1 || !strings.Contains(f[0], "45.12%/h") {
		t.Errorf("a 30-minute slope of 45%%/h: failures() = %q, want the heap slope", f)
	}
	noSlope := r
	noSlope.heapSlopeOK = false
	if !strings.Contains(noSlope.line(), "heap-slope=n/a/h") || len(noSlope.failures()) != 1 {
		t.Errorf("without a slope: %q, %q", noSlope.line(), noSlope.failures())
	}
	if got := (sample{at: 90 * time.Second, heapInuse: 123, goroutines: 7, objects: 5, writes: 9}).csvRow(); got != "90.0,123,7,5,9" {
		t.Errorf("csvRow = %q", got)
	}
	if strings.Count(csvHeader, ",") != 4 {
		t.Errorf("csvHeader %q does not match csvRow's five fields", csvHeader)
	}
}

// TestCountGoroutines reads a goroutine profile as the runtime writes it:
// the header, then groups of identical stacks.
func TestCountGoroutines(t *testing.T) {
	profile := `goroutine profile: total 30

16 @ 0x4902ca 0x46a217
#	0x742bad	net/http/internal/http2.(*pipe).Read+0x4c	/go/src/net/http/internal/http2/pipe.go:76
#	0x7a0001	k8s.io/client-go/rest/watch.(*bufferedWatchEventDecoder).run+0x52	/m/k8s.io/client-go/rest/watch/concurrent_decoder.go:143

8 @ 0x4902ca 0x46a217
#	0x7b0002	k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive+0x10	/m/k8s.io/apimachinery/pkg/watch/streamwatcher.go:114

5 @ 0x4902ca
#	0x7c0003	k8s.io/client-go/tools/cache.(*Reflector).watch+0x99	/m/k8s.io/client-go/tools/cache/reflector.go:1003

1 @ 0x4902ca
#	0x7d0004	main.main+0x1	/soak/main.go:63
`
	want := goroutines{total: 30, watches: 8, inWatch: 24}
	if got := countGoroutines(profile); got != want {
		t.Errorf("countGoroutines = %+v, want %+v", got, want)
	}
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	if got := countGoroutines(buf.String()); got.total < 1 || got.watches != 0 {
		t.Errorf("this test's own profile: %+v, want at least this goroutine and no watch", got)
	}
}
