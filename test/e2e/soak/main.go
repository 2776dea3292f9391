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

// Command soak runs the informers against a real kube-apiserver and etcd
// (test/e2e/testenv) for a long time, under a steady writer and faults on a
// schedule, and checks at the end that every replica's cache matches the
// server, that the heap does not grow and that no goroutine is left
// behind. Beside the factories it runs two controller-runtime managers on
// crcache.NewCache(informers.WithAPIDiscovery(), ...), sharded by a Lease
// membership of their own, reconciling configmaps and a custom resource
// through every fault, with faults of their own (SetNamespaces, a third
// manager joining and leaving, their CRD deleted and created again); see
// manager.go. Run it through hack/soak.sh; see docs/reliability.md.
//
// It prints one line on stdout:
//
//	soak duration=<d> objects=<n> writes=<n> restarts=<n> compactions=<n> crd-cycles=<n> crd-emptied-max=<d> crd-synced-max=<d> lost=<n> stale=<n> double-owned=<n> mgr-reconciles=<n> mgr-setns=<n> mgr-memberships=<n> mgr-crd-cycles=<n> mgr-settle-max=<d> mgr-lost=<n> mgr-stale=<n> mgr-double-owned=<n> heap-slope=<pct>/h goroutines=<a>-><b> watches=<a>-><b> other-goroutines=<a>-><b>
//
// and exits 1 when a goal is missed (lost, stale and double-owned all 0,
// for the factories, the custom resource's cache included, and for the
// managers; every CRD cycle emptied and synced again within 10 s; the
// managers matching the server within 10 s of each of their faults, none
// failed; heap slope at most 5%/h over at least 30 minutes after the
// warm-up; goroutines outside watch streams within 10, open watch streams
// within 2). With -out it writes samples.csv (one row per sample),
// faults.log, result.txt and a heap profile every -profile there.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubeinformers/informers/test/e2e/testenv"
)

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the writer and the faults run (the set-up and the final check come on top)")
	flag.IntVar(&o.objects, "objects", 2000, "configmaps kept on the server, spread over the namespaces")
	flag.IntVar(&o.namespaces, "namespaces", 4, "namespaces the objects are spread over")
	flag.Float64Var(&o.rate, "rate", 10, "writes per second (a create, an update and a delete in turn, so the count stays put)")
	flag.DurationVar(&o.sampleEvery, "sample", 15*time.Second, "how often the heap and goroutines are sampled")
	flag.DurationVar(&o.warmup, "warmup", time.Minute, "samples before this are left out of the heap slope")
	flag.StringVar(&o.out, "out", "", "directory for samples.csv, faults.log, klog.log, result.txt and the heap profiles (none: only stdout and stderr)")
	flag.DurationVar(&o.profileEvery, "profile", 150*time.Second, "how often a heap profile is written to -out (heap-<seconds>s.pb.gz, after a GC; 0: none)")
	flag.IntVar(&runtime.MemProfileRate, "memprofilerate", 64<<10, "runtime.MemProfileRate: bytes allocated per heap profile sample")
	flag.Parse()

	r, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	fmt.Println(r.line())
	if o.out != "" {
		_ = os.WriteFile(filepath.Join(o.out, "result.txt"), []byte(r.line()+"\n"), 0o644)
	}
	if r.heapSlopeOK && r.heapSpan < minHeapSpan {
		fmt.Fprintf(os.Stderr, "soak: heap slope over %v after the warm-up, not judged (the goal needs %v)\n", r.heapSpan.Round(time.Second), minHeapSpan)
	}
	if f := r.failures(); len(f) > 0 {
		fmt.Fprintln(os.Stderr, "soak: goals missed:", summary(f))
		os.Exit(1)
	}
}

type options struct {
	duration     time.Duration
	objects      int
	namespaces   int
	rate         float64
	sampleEvery  time.Duration
	warmup       time.Duration
	out          string
	profileEvery time.Duration
}

// logf writes a progress line to stderr and to faults.log.
type logger struct {
	mu    sync.Mutex
	start time.Time
	w     io.Writer
}

func (l *logger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := fmt.Sprintf("[%7.1fs] "+format+"\n", append([]any{time.Since(l.start).Seconds()}, args...)...)
	_, _ = io.WriteString(l.w, msg)
}

func run(o options) (result, error) {
	var r result
	if o.duration <= 0 || o.objects < 3 || o.namespaces < 1 || o.rate <= 0 {
		return r, fmt.Errorf("bad options: -duration %v, -objects %d, -namespaces %d, -rate %v (want all positive, at least 3 objects)", o.duration, o.objects, o.namespaces, o.rate)
	}
	logOut := io.Writer(os.Stderr)
	klogOut := io.Discard
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return r, err
		}
		fl, err := os.Create(filepath.Join(o.out, "faults.log"))
		if err != nil {
			return r, err
		}
		defer func() { _ = fl.Close() }()
		logOut = io.MultiWriter(os.Stderr, fl)
		kl, err := os.Create(filepath.Join(o.out, "klog.log"))
		if err != nil {
			return r, err
		}
		defer func() { _ = kl.Close() }()
		klogOut = kl
	}
	// client-go's warnings during restarts are expected; keep them in
	// klog.log rather than on the terminal.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("alsologtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(klogOut)
	// controller-runtime's logger: to klog, so to klog.log.
	ctrllog.SetLogger(klog.NewKlogr())
	log := &logger{start: time.Now(), w: logOut}

	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return r, fmt.Errorf("start kube-apiserver and etcd: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			log.logf("stop test environment: %v", err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s, err := newSoak(ctx, env, o, log)
	if err != nil {
		return r, err
	}
	defer s.close()
	log.logf("set up: %d objects in %d namespaces, 3 sharded replicas and one whole-cache factory synced; 2 sharded controller-runtime managers match the server", o.objects, o.namespaces)

	// The run: the writer, the sampler and the faults.
	start := time.Now()
	s.writer.start(ctx, o.rate)
	var samples []sample
	var samplesMu sync.Mutex
	csv := io.Discard
	if o.out != "" {
		f, err := os.Create(filepath.Join(o.out, "samples.csv"))
		if err != nil {
			return r, err
		}
		defer func() { _ = f.Close() }()
		csv = f
	}
	_, _ = fmt.Fprintln(csv, csvHeader)
	var lastProfile time.Duration
	take := func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		smp := sample{at: time.Since(start), heapInuse: ms.HeapInuse, goroutines: runtime.NumGoroutine(), objects: s.writer.count(), writes: s.writer.writes.Load()}
		samplesMu.Lock()
		samples = append(samples, smp)
		first := len(samples) == 1
		samplesMu.Unlock()
		_, _ = fmt.Fprintln(csv, smp.csvRow())
		// The heap profile as of the GC above, so that two moments of
		// the run can be compared (go tool pprof -diff_base).
		if o.out != "" && o.profileEvery > 0 && (first || smp.at-lastProfile >= o.profileEvery) {
			lastProfile = smp.at
			writeHeapProfile(filepath.Join(o.out, fmt.Sprintf("heap-%05.0fs.pb.gz", smp.at.Seconds())))
		}
	}
	sampCtx, stopSampling := context.WithCancel(ctx)
	var sampWG sync.WaitGroup
	sampWG.Go(func() {
		t := time.NewTicker(o.sampleEvery)
		defer t.Stop()
		take()
		for {
			select {
			case <-sampCtx.Done():
				return
			case <-t.C:
				take()
			}
		}
	})
	var faultWG sync.WaitGroup
	faultCtx, stopFaults := context.WithCancel(ctx)
	faultWG.Go(func() { s.faults(faultCtx, start, o.duration) })

	// Goroutines after the warm-up: the median of five counts a second
	// apart, so that neither a request in flight nor a connection being
	// replaced at one instant counts.
	sleepUntil(ctx, start.Add(o.warmup))
	r.goroutinesA = quietGoroutines(ctx)
	dumpGoroutines(o.out, "goroutines-warmup.txt")
	log.logf("after the warm-up: %d goroutines, %d watch streams served by %d of them", r.goroutinesA.total, r.goroutinesA.watches, r.goroutinesA.inWatch)

	sleepUntil(ctx, start.Add(o.duration))
	stopFaults()
	faultWG.Wait()
	r.goroutinesB = quietGoroutines(ctx)
	dumpGoroutines(o.out, "goroutines-end.txt")
	stopSampling()
	sampWG.Wait()
	take()
	r.duration = time.Since(start)
	s.writer.stop()
	log.logf("run over: %d writes (%d failed), %d goroutines, %d watch streams served by %d of them; checking every cache against the server", s.writer.writes.Load(), s.writer.failures.Load(), r.goroutinesB.total, r.goroutinesB.watches, r.goroutinesB.inWatch)

	// The check: with the writer stopped, every cache must come to match
	// the server, and stay matched.
	r.lost, r.stale, r.doubleOwned, r.objects, r.mgr.diff, err = s.converge(ctx, 3*time.Minute)
	if err != nil {
		return r, err
	}
	r.mgr.reconciles, r.mgr.readErrors = s.mgrs.reconciles()
	s.mgrs.mu.Lock()
	c := s.mgrs.counts
	r.mgr.setNamespaces, r.mgr.memberships, r.mgr.crdCycles, r.mgr.failures, r.mgr.settleMax = c.setNamespaces, c.memberships, c.crdCycles, c.failures, s.mgrs.settleMax
	s.mgrs.mu.Unlock()
	r.writes = s.writer.writes.Load()
	r.restarts, r.compactions = s.counts.restarts, s.counts.compactions
	s.mu.Lock()
	r.crdCycles, r.crdFailures, r.crdEmptied, r.crdSynced = s.counts.crdCycles, s.counts.crdFailures, s.crdEmptied, s.crdSynced
	s.mu.Unlock()
	samplesMu.Lock()
	r.heapSlope, r.heapSlopeOK = heapSlope(samples, o.warmup)
	r.heapSpan = r.duration - o.warmup
	samplesMu.Unlock()
	log.logf("faults: %d apiserver restarts, %d etcd compactions with severed watches, %d membership changes, %d informer removals (each added again), %d CRD deletions (each created again; %d failed); writer: %d writes, %d failed",
		s.counts.restarts, s.counts.compactions, s.counts.memberships, s.counts.removals, r.crdCycles, r.crdFailures, r.writes, s.writer.failures.Load())
	log.logf("managers: %d reconciles (%d reads failed and were retried) by the two that ran throughout; %d namespaces taken out and put back, %d joined and left, %d CRD cycles; %d of these faults failed; matched the server at most %v after one",
		r.mgr.reconciles, r.mgr.readErrors, r.mgr.setNamespaces, r.mgr.memberships, r.mgr.crdCycles, r.mgr.failures, r.mgr.settleMax.Round(10*time.Millisecond))
	log.logf("caches against the server at the end:\n%s", r.table())
	return r, nil
}

// writeHeapProfile writes the heap profile to path; a failure is only
// printed, the run goes on.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: heap profile:", err)
		return
	}
	defer func() { _ = f.Close() }()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "soak: heap profile:", err)
	}
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t)):
	}
}

// dumpGoroutines writes the goroutines' stacks, grouped, to dir/name, so
// that two moments can be compared when the count grows.
func dumpGoroutines(dir, name string) {
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	_ = pprof.Lookup("goroutine").WriteTo(f, 1)
}

// quietGoroutines counts goroutines five times a second apart and takes
// the median of each count.
func quietGoroutines(ctx context.Context) goroutines {
	var totals, watches, inWatch []int
	for range 5 {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
		g := countGoroutines(buf.String())
		totals, watches, inWatch = append(totals, g.total), append(watches, g.watches), append(inWatch, g.inWatch)
		sleepUntil(ctx, time.Now().Add(time.Second))
	}
	median := func(v []int) int { slices.Sort(v); return v[len(v)/2] }
	return goroutines{total: median(totals), watches: median(watches), inWatch: median(inWatch)}
}

// countGoroutines reads a goroutine profile written with debug=1: groups
// of identical stacks, each headed "N @ pc...". A stack in
// StreamWatcher.receive is one open watch stream; a stack in it or in
// client-go's watch decoders (rest/watch) serves one.
func countGoroutines(profile string) goroutines {
	var g goroutines
	for _, group := range strings.Split(profile, "\n\n") {
		head, _, _ := strings.Cut(group, " @ ")
		n, err := strconv.Atoi(head)
		if err != nil {
			continue
		}
		g.total += n
		receive := strings.Contains(group, "k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive")
		if receive {
			g.watches += n
		}
		if receive || strings.Contains(group, "k8s.io/client-go/rest/watch.") {
			g.inWatch += n
		}
	}
	return g
}
