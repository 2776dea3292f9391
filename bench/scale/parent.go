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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// stat is the median and spread of repeated measurements of one value.
type stat struct {
	Median, Min, Max float64
}

func newStat(xs []float64) stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// spread is (max-min)/median in percent.
func (s stat) spread() float64 {
	if s.Median == 0 {
		return 0
	}
	return 100 * (s.Max - s.Min) / s.Median
}

// summary aggregates one variant at one N.
type summary struct {
	Variant    string
	N          int
	Runs       []result
	Err        string // the first failure, if any run failed
	Sync, CPU  stat
	HeapPerObj stat // bytes of HeapInuse per object
	BytesRead  stat
	// PeakHeap and PeakRSS are the whole process's, in bytes; PeakGrowth
	// is PeakHeap minus HeapInuse before the informer started.
	PeakHeap, PeakRSS, PeakGrowth stat
	// APIServerCPU is the kube-apiserver's CPU seconds during each run.
	APIServerCPU stat
	// Get and List are the nanoseconds per cached read (cr.go), zero
	// where the variant has no reads.
	Get, List stat
	// PeakLive is the whole process's largest live heap during sync,
	// Retained its live heap after sync minus before the start (bytes);
	// Startup is PeakLive against the live heap after sync, and
	// StartupGrowth the same without the live heap before the start
	// (startup.go).
	PeakLive, Retained, Startup, StartupGrowth stat
	LiveBefore, LiveAfter                      stat
}

func (s *summary) ok() bool { return s.Err == "" && len(s.Runs) > 0 }

type runReport struct {
	Date     string
	Machine  string
	Server   string // kube-apiserver's /version
	Repeats  int
	Pod      podSizes
	Counts   []int
	Variants []string
	Results  map[int]map[string]*summary
}

func runParent(ctx context.Context, cfg *config) int {
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "bench-scale: "+format+"\n", a...) }
	self, err := os.Executable()
	if err != nil {
		logf("%v", err)
		return 1
	}
	logf("starting etcd and kube-apiserver (testenv, binaries in %s)", testenv.BinDir())
	// Resolved here, as testenv would, so that the report can name them.
	gates := os.Getenv("E2E_FEATURE_GATES")
	if gates == "" {
		gates = testenv.DefaultFeatureGates
	}
	env, err := testenv.Start(testenv.Options{FeatureGates: gates})
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			logf("%v", err)
		}
	}()
	caFile := filepath.Join(env.Dir, "bench-ca.crt")
	if err := os.WriteFile(caFile, env.CAData, 0o600); err != nil {
		logf("%v", err)
		return 1
	}
	admin := env.AdminConfig()
	admin.QPS, admin.Burst = 5000, 5000
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		logf("%v", err)
		return 1
	}
	if err := ensureNamespaces(ctx, cs); err != nil {
		logf("%v", err)
		return 1
	}
	// The reports name the server as it reports itself, not as a literal
	// that a Kubernetes bump would leave behind.
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		logf("kube-apiserver /version: %v", err)
		return 1
	}

	rep := &runReport{
		Date:     time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Machine:  machine(),
		Server:   sv.GitVersion,
		Repeats:  cfg.repeats,
		Counts:   cfg.counts,
		Variants: cfg.runs(),
		Results:  map[int]map[string]*summary{},
	}
	h := &harness{self: self, env: env, caFile: caFile, cs: cs, deadline: cfg.deadline, gates: gates, server: sv.GitVersion, logf: logf}
	if len(cfg.shards) > 0 {
		return runShardBench(ctx, h, cfg)
	}
	for _, n := range cfg.counts {
		if err := h.loadTo(ctx, n); err != nil {
			logf("%v", err)
			return 1
		}
		if rep.Pod.JSON == 0 {
			if rep.Pod, err = h.pod(ctx); err != nil {
				logf("%v", err)
				return 1
			}
		}
		byVariant := map[string]*summary{}
		for _, v := range rep.Variants {
			byVariant[v] = &summary{Variant: v, N: n}
		}
		rep.Results[n] = byVariant
		for r := range cfg.repeats {
			// Rotate the order so that no variant always runs first (warm
			// apiserver caches, other load on the machine).
			order := slices.Clone(rep.Variants)
			k := r % len(order)
			order = append(order[k:], order[:k]...)
			for _, v := range order {
				if ctx.Err() != nil {
					logf("interrupted")
					return 1
				}
				before, _ := pidCPU(env.APIServerPID())
				res := runOne(ctx, self, env, caFile, v, n, cfg.deadline, "", cfg.childEnv(v)...)
				if after, err := pidCPU(env.APIServerPID()); err == nil && after >= before {
					res.APIServerCPUSec = after - before
				}
				s := byVariant[v]
				if res.Err != "" {
					logf("N=%d %s run %d FAILED: %s", n, v, r+1, res.Err)
					if s.Err == "" {
						s.Err = res.Err
					}
					continue
				}
				reads := ""
				if res.GetNs > 0 {
					reads = fmt.Sprintf(" get %.0f ns list %.1f µs (%.0f Pods)", res.GetNs, res.ListNs/1000, res.ListItems)
				}
				logf("N=%d %-24s run %d: sync %.2fs cpu %.2fs apiserver cpu %.2fs heap %.1f MiB (%.0f B/obj, live %.0f B/obj) peak heap %.1f MiB peak RSS %.1f MiB read %.1f MiB%s; live heap before %.1f MiB, peak %.1f MiB, after sync %.1f MiB (peak/after %.2f, growth %.2f)%s", n, v, r+1, res.SyncSec, res.CPUSec, res.APIServerCPUSec, float64(res.HeapBytes)/(1<<20), float64(res.HeapBytes)/float64(n), float64(res.HeapAlloc)/float64(n), mib(float64(res.PeakHeap)), mib(float64(res.PeakRSS)), float64(res.BytesRead)/(1<<20), reads,
					mib(float64(res.LiveBefore)), mib(float64(res.PeakLive)), mib(float64(res.LiveAfter)), startupRatio(res), startupGrowthRatio(res), memText(res))
				s.Runs = append(s.Runs, res)
			}
		}
		if cfg.profile != "" {
			// One more run per variant with the profiler on, kept out of the
			// figures: profiling costs time.
			for _, v := range rep.Variants {
				prefix := filepath.Join(cfg.profile, fmt.Sprintf("%s-n%d", v, n))
				if res := runOne(ctx, self, env, caFile, v, n, cfg.deadline, prefix, cfg.childEnv(v)...); res.Err != "" {
					logf("N=%d %s profile run FAILED: %s", n, v, res.Err)
				} else {
					logf("N=%d %s: profiles in %s.{cpu,heap}.pprof", n, v, prefix)
				}
			}
		}
		for _, s := range byVariant {
			s.aggregate()
		}
		fmt.Println(tableText(rep, n))
		if t := crTableText(rep, n); t != "" {
			fmt.Println(t)
		}
		if t := startupTableText(rep, n); t != "" {
			fmt.Println(t)
		}
		if t := memTableText(rep, n); t != "" {
			fmt.Println(t)
		}
		if cfg.write && n != rep.Counts[len(rep.Counts)-1] {
			// Write what is measured so far: a long run cut short
			// still leaves its smaller counts in BENCHMARKS.md.
			partial := *rep
			partial.Counts = rep.Counts[:slices.Index(rep.Counts, n)+1]
			if err := writeResults(cfg, &partial); err != nil {
				logf("writing results: %v", err)
			}
		}
	}

	failed := checkAll(rep, cfg)
	if cfg.smoke {
		// Two shards at the smoke's N: the replicas hold disjoint sets that
		// cover every Pod, and the server filtered.
		srep := runShardSeries(ctx, h, cfg.counts[len(cfg.counts)-1], []int{2}, 1)
		fmt.Println(shardTableText(srep))
		if checkShardReport(srep) {
			failed = true
		} else {
			logf("smoke: 2 shards of N=%d: disjoint, every Pod held once, server-side filtered: ok", srep.N)
		}
	}
	if cfg.write {
		if err := writeResults(cfg, rep); err != nil {
			logf("writing results: %v", err)
			failed = true
		}
	}
	fmt.Print(summaryLines(rep))
	if failed {
		return 1
	}
	return 0
}

func (s *summary) aggregate() {
	if len(s.Runs) == 0 {
		return
	}
	var sync, cpu, heap, read, peak, rss, growth, apiCPU, get, list []float64
	var peakLive, retained, startup, startupGrowth, liveBefore, liveAfter []float64
	for _, r := range s.Runs {
		liveBefore = append(liveBefore, float64(r.LiveBefore))
		liveAfter = append(liveAfter, float64(r.LiveAfter))
		peakLive = append(peakLive, float64(r.PeakLive))
		retained = append(retained, float64(sub(r.LiveAfter, r.LiveBefore)))
		startup = append(startup, startupRatio(r))
		startupGrowth = append(startupGrowth, startupGrowthRatio(r))
		get = append(get, r.GetNs)
		list = append(list, r.ListNs)
		apiCPU = append(apiCPU, r.APIServerCPUSec)
		sync = append(sync, r.SyncSec)
		cpu = append(cpu, r.CPUSec)
		heap = append(heap, float64(r.HeapBytes)/float64(s.N))
		read = append(read, float64(r.BytesRead))
		peak = append(peak, float64(r.PeakHeap))
		rss = append(rss, float64(r.PeakRSS))
		growth = append(growth, float64(sub(r.PeakHeap, r.HeapBefore)))
	}
	s.Sync, s.CPU, s.HeapPerObj, s.BytesRead = newStat(sync), newStat(cpu), newStat(heap), newStat(read)
	s.PeakHeap, s.PeakRSS, s.PeakGrowth = newStat(peak), newStat(rss), newStat(growth)
	s.APIServerCPU = newStat(apiCPU)
	s.Get, s.List = newStat(get), newStat(list)
	s.PeakLive, s.Retained = newStat(peakLive), newStat(retained)
	s.Startup, s.StartupGrowth = newStat(startup), newStat(startupGrowth)
	s.LiveBefore, s.LiveAfter = newStat(liveBefore), newStat(liveAfter)
}

// harness is the running server and what a child process needs to reach it.
type harness struct {
	self, caFile string
	env          *testenv.Env
	cs           kubernetes.Interface
	deadline     time.Duration
	gates        string // the server's --feature-gates
	server       string // the server's /version
	logf         func(format string, a ...any)
	loaded       int
}

// loadTo loads Pods up to n (Pods are only ever added).
func (h *harness) loadTo(ctx context.Context, n int) error {
	if n <= h.loaded {
		return nil
	}
	start := time.Now()
	h.logf("loading Pods %d..%d with server-side apply", h.loaded, n)
	if err := loadPods(ctx, h.cs, h.loaded, n, func(done int) { h.logf("  %d Pods loaded", done) }); err != nil {
		return err
	}
	h.loaded = n
	h.logf("loaded %d Pods in %.1fs", n, time.Since(start).Seconds())
	return nil
}

// pod measures the size of a loaded Pod.
func (h *harness) pod(ctx context.Context) (podSizes, error) {
	p, err := measurePod(ctx, h.cs)
	if err == nil {
		h.logf("a Pod: %d B JSON (managedFields %d B in %d entries), %d B protobuf", p.JSON, p.ManagedFieldsJSON, p.ManagedFieldsEntries, p.Proto)
	}
	return p, err
}

// runOne measures variant v at n in a fresh child process; extraEnv
// (KEY=value) adds to the child's job, such as the shard of a replica.
func runOne(ctx context.Context, self string, env *testenv.Env, caFile, v string, n int, deadline time.Duration, profile string, extraEnv ...string) result {
	cctx, cancel := context.WithTimeout(ctx, deadline+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, self)
	cmd.Env = append(os.Environ(),
		envVariant+"="+v,
		envN+"="+strconv.Itoa(n),
		envHost+"="+env.APIServerURL,
		envToken+"="+env.AdminToken,
		envCAFile+"="+caFile,
		envDeadline+"="+deadline.String(),
		envProfile+"="+profile,
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	// The child's result is its last stdout line, even when it failed.
	var res result
	var last string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	if err := json.Unmarshal([]byte(last), &res); err != nil || res.Variant != v {
		msg := fmt.Sprintf("child process for %s gave no result", v)
		if runErr != nil {
			msg += ": " + runErr.Error()
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			msg += fmt.Sprintf(" (killed after %v)", deadline+time.Minute)
		}
		if tail := lastLines(stderr.String(), 5); tail != "" {
			msg += "; stderr: " + tail
		}
		return result{Variant: v, N: n, Err: msg}
	}
	if res.Err == "" && runErr != nil {
		res.Err = runErr.Error()
	}
	return res
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// checkAll reports failed variants and, for the smoke run, checks what CI
// relies on: every variant synced exactly N objects (the children check
// that, a mismatch is a failure) and the lean caches are smaller than the
// full one. Nothing about time is checked.
func checkAll(rep *runReport, cfg *config) bool {
	failed := false
	for _, n := range rep.Counts {
		for _, v := range rep.Variants {
			s := rep.Results[n][v]
			if !s.ok() {
				fmt.Fprintf(os.Stderr, "bench-scale: N=%d variant %s failed: %s\n", n, v, s.Err)
				failed = true
			}
		}
		if cfg.mem && checkMem(rep, n, false) {
			failed = true
		}
		if !cfg.smoke {
			continue
		}
		if checkPeaks(rep, n) {
			failed = true
		}
		if checkStripped(rep, n) {
			failed = true
		}
		if checkMem(rep, n, true) {
			failed = true
		}
		full := rep.Results[n]["ours"]
		for _, lean := range []string{"ours-lean", "ours-metadata"} {
			l := rep.Results[n][lean]
			if full == nil || l == nil || !full.ok() || !l.ok() {
				continue // reported above
			}
			if l.HeapPerObj.Median >= full.HeapPerObj.Median {
				fmt.Fprintf(os.Stderr, "bench-scale: smoke: %s heap %.0f B/obj is not smaller than ours %.0f B/obj\n", lean, l.HeapPerObj.Median, full.HeapPerObj.Median)
				failed = true
			} else {
				fmt.Fprintf(os.Stderr, "bench-scale: smoke: N=%d %s heap %.0f B/obj < ours %.0f B/obj: ok\n", n, lean, l.HeapPerObj.Median, full.HeapPerObj.Median)
			}
		}
	}
	return failed
}

// rawFloor is the faster of the two raw LIST variants that ran.
func rawFloor(byVariant map[string]*summary) *summary {
	var best *summary
	for _, v := range []string{rawPaged, rawRV0} {
		if s := byVariant[v]; s != nil && s.ok() && (best == nil || s.Sync.Median < best.Sync.Median) {
			best = s
		}
	}
	return best
}

func ratio(a, b *summary, f func(*summary) float64) string {
	if a == nil || b == nil || !a.ok() || !b.ok() || f(b) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", f(a)/f(b))
}

func heapOf(s *summary) float64 { return s.HeapPerObj.Median }
func syncOf(s *summary) float64 { return s.Sync.Median }

// lastLine is the machine-readable summary for n Pods.
func lastLine(rep *runReport, n int) string {
	r := rep.Results[n]
	up := r["upstream"]
	return fmt.Sprintf("bench-scale N=%d: heap/obj ours/upstream=%s lean/upstream=%s metadata/upstream=%s; sync ours/upstream=%s lean/upstream=%s ours/raw-list=%s",
		n,
		ratio(r["ours"], up, heapOf), ratio(r["ours-lean"], up, heapOf), ratio(r["ours-metadata"], up, heapOf),
		ratio(r["ours"], up, syncOf), ratio(r["ours-lean"], up, syncOf), ratio(r["ours"], rawFloor(r), syncOf))
}

// summaryLines are the machine-readable summaries of every N, the
// largest last (the decode line only where its variants ran): a goal stated at one N is read off its own lines.
func summaryLines(rep *runReport) string {
	var b strings.Builder
	for _, n := range rep.Counts {
		b.WriteString(lastLine(rep, n) + "\n" + peakLine(rep, n) + "\n")
		if decodeMeasured(rep.Results[n]) {
			b.WriteString(decodeLine(rep, n) + "\n")
		}
		if keepMeasured(rep.Results[n]) {
			b.WriteString(keepLine(rep, n) + "\n")
		}
		if crMeasured(rep.Results[n]) {
			b.WriteString(crLine(rep, n) + "\n")
		}
		if len(startupRuns(rep, n)) > 0 {
			b.WriteString(startupLine(rep, n) + "\n")
		}
		if memMeasured(rep.Results[n]) {
			b.WriteString(memLine(rep, n) + "\n")
		}
	}
	return b.String()
}

// checkStripped checks, for the smoke run, that the lean informer decoded
// every Pod without what its cache drops, as a stream and in paged LISTs,
// and that the full one decoded none so.
func checkStripped(rep *runReport, n int) bool {
	failed := false
	for run, s := range rep.Results[n] {
		name, _ := splitRun(run)
		lean := name == "ours-lean" || name == keepVariant || crLeanVariant(name)
		if s == nil || !s.ok() || (!lean && name != "ours") {
			continue
		}
		for _, r := range s.Runs {
			switch {
			case lean && r.Stripped < int64(n):
				fmt.Fprintf(os.Stderr, "bench-scale: smoke: N=%d %s decoded %d objects stripped, want at least N\n", n, run, r.Stripped)
				failed = true
			case name == "ours" && r.Stripped != 0:
				fmt.Fprintf(os.Stderr, "bench-scale: smoke: N=%d %s decoded %d objects stripped, want 0\n", n, run, r.Stripped)
				failed = true
			}
		}
		if !failed && lean {
			fmt.Fprintf(os.Stderr, "bench-scale: smoke: N=%d %s decoded every Pod without managedFields: ok\n", n, run)
		}
	}
	return failed
}
