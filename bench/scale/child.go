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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/sharding"
)

// The parent hands the child its job through the environment, so that the
// child's command line stays short and tokens stay off it.
const (
	envVariant  = "BENCH_SCALE_CHILD"
	envN        = "BENCH_SCALE_N"
	envHost     = "BENCH_SCALE_HOST"
	envToken    = "BENCH_SCALE_TOKEN"
	envCAFile   = "BENCH_SCALE_CA_FILE"
	envDeadline = "BENCH_SCALE_DEADLINE"
	envProfile  = "BENCH_SCALE_PROFILE" // file prefix, empty for none
	// envShard is "index/count" for a replica of the shard benchmark.
	envShard = "BENCH_SCALE_SHARD"
	// envKeysFile, if set, is where the child writes the namespace/name of
	// every object it holds, one a line, after the measurement: the parent
	// checks that the replicas' caches are disjoint and cover every Pod.
	envKeysFile = "BENCH_SCALE_KEYS_FILE"
)

func childVariant() string { return os.Getenv(envVariant) }

// result is what a child reports, as one JSON line on stdout.
type result struct {
	Variant     string  `json:"variant"`
	N           int     `json:"n"`
	Shard       int     `json:"shard,omitempty"`  // replica index, with Shards
	Shards      int     `json:"shards,omitempty"` // shard count; 0 for no shard option
	Objects     int     `json:"objects"`
	SyncSec     float64 `json:"syncSec"`
	CPUSec      float64 `json:"cpuSec"`
	HeapBytes   uint64  `json:"heapBytes"`   // HeapInuse after GC, minus the same before the informer
	HeapAlloc   uint64  `json:"heapAlloc"`   // live bytes after GC, minus the same before
	HeapProcess uint64  `json:"heapProcess"` // HeapInuse after GC of the whole process
	BytesRead   int64   `json:"bytesRead"`   // response bytes read from the API server up to sync
	// PeakHeap is the largest HeapInuse of the whole process sampled
	// during sync (every millisecond), and HeapBefore its HeapInuse after
	// GC before the informer started.
	PeakHeap   uint64 `json:"peakHeap"`
	HeapBefore uint64 `json:"heapBefore"`
	// PeakLive is the largest live heap (runtime/metrics
	// /gc/heap/live:bytes) of any garbage collection during sync, and
	// LiveBefore and LiveAfter the live heap after GC before the informer
	// started and once it synced, all of the whole process: the start-up
	// peak is PeakLive against LiveAfter, and what the cache retains is
	// LiveAfter minus LiveBefore.
	PeakLive   uint64 `json:"peakLive"`
	LiveBefore uint64 `json:"liveBefore"`
	LiveAfter  uint64 `json:"liveAfter"`
	// Estimate is the sum of the informers' byte estimates
	// (MemoryStatus) once synced, where the variant has them; -1 where not.
	Estimate int64 `json:"estimate"`
	// Budget is the memory budget the variant ran with, 0 for none;
	// StoppedAt the objects its informer had seen when the budget stopped
	// it (0: not stopped), and Stopped what Ready() said then.
	Budget    int64  `json:"budget,omitempty"`
	StoppedAt int64  `json:"stoppedAt,omitempty"`
	Stopped   string `json:"stopped,omitempty"`
	// PeakRSS is the process's VmHWM once synced.
	PeakRSS uint64 `json:"peakRSS"`
	// APIServerCPUSec is the kube-apiserver process's CPU time (user and
	// system, from /proc) while the child ran, which the sync dominates:
	// the cost of the variant to the cluster. The parent fills it in.
	APIServerCPUSec float64 `json:"apiserverCpuSec,omitempty"`
	// Stripped is how many objects the child decoded without what a lean
	// cache drops (internal/listwatch): at least N for ours-lean over
	// protobuf, 0 where the lean transform strips a full decode.
	Stripped int64 `json:"stripped"`
	// GetNs and ListNs are the time per call of a cached Get and List,
	// ListItems the mean Pods a List returned (the controller-runtime
	// comparison's variants only, cr.go).
	GetNs     float64 `json:"getNs,omitempty"`
	ListNs    float64 `json:"listNs,omitempty"`
	ListItems float64 `json:"listItems,omitempty"`
	Err       string  `json:"error,omitempty"`
}

// countingTransport counts the response body bytes the client reads (after
// any transparent gzip decoding by net/http).
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: t.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAfterGC returns HeapInuse, HeapAlloc and the live heap
// (/gc/heap/live:bytes) once garbage is gone.
func heapAfterGC() (inuse, alloc, live uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return ms.HeapInuse, ms.HeapAlloc, s[0].Value.Uint64()
}

// runChild measures one variant once and prints its result; a failure is
// a result with Err set, so the parent can report it and go on.
func runChild(variant string) int {
	res := result{Variant: variant}
	err := measure(&res)
	if err != nil {
		res.Err = err.Error()
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	if err != nil {
		return 1
	}
	return 0
}

func measure(res *result) error {
	n, err := strconv.Atoi(os.Getenv(envN))
	if err != nil {
		return fmt.Errorf("child: %s=%q: %w", envN, os.Getenv(envN), err)
	}
	res.N = n
	deadline, err := time.ParseDuration(os.Getenv(envDeadline))
	if err != nil {
		return fmt.Errorf("child: %s: %w", envDeadline, err)
	}
	run, err := childRunner(res)
	if err != nil {
		return err
	}
	var read atomic.Int64
	cfg := &rest.Config{
		Host:            os.Getenv(envHost),
		BearerToken:     os.Getenv(envToken),
		TLSClientConfig: rest.TLSClientConfig{CAFile: os.Getenv(envCAFile)},
		QPS:             500,
		Burst:           1000,
		WrapTransport:   func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &read} },
	}

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	profile := os.Getenv(envProfile)
	if profile != "" && n <= 3000 {
		// The default (one sample per 512 KiB) says little about a small
		// N. A finer rate records a stack on every few allocations, which
		// at a large N costs as much CPU as the decoding and so distorts
		// the CPU profile; a large N allocates enough for the default.
		runtime.MemProfileRate = 4096
	}
	inuse0, alloc0, live0 := heapAfterGC()
	if profile != "" {
		f, err := os.Create(profile + ".cpu.pprof")
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	res.HeapBefore, res.LiveBefore, res.Estimate = inuse0, live0, -1
	peak := startPeakSampler()
	cpu0, start := cpuTime(), time.Now()
	r, err := run(ctx, cfg)
	res.PeakHeap, res.PeakLive = peak.Stop()
	if err != nil {
		if profile != "" {
			pprof.StopCPUProfile()
		}
		return fmt.Errorf("%s: %w", res.Variant, err)
	}
	res.SyncSec = time.Since(start).Seconds()
	// The sampler's own CPU (a tick a millisecond) counts too, alike in
	// every variant.
	res.CPUSec = (cpuTime() - cpu0).Seconds()
	res.PeakRSS = vmHWM()
	res.BytesRead = read.Load()
	res.Stripped = listwatch.StrippedObjects()
	if profile != "" {
		pprof.StopCPUProfile()
	}
	inuse1, alloc1, live1 := heapAfterGC()
	res.HeapBytes = sub(inuse1, inuse0)
	res.HeapAlloc = sub(alloc1, alloc0)
	res.HeapProcess = inuse1
	res.LiveAfter = live1
	if r.estimate != nil {
		res.Estimate = r.estimate()
	}
	if profile != "" {
		if err := writeHeapProfile(profile + ".heap.pprof"); err != nil {
			return err
		}
	}
	// Count last: listing may allocate, and must not count as cache.
	res.Objects = r.count()
	if r.stopped != "" {
		// The budget stopped the informer (mem.go): it holds nothing, and
		// what it saw is the figure.
		res.Budget, res.StoppedAt, res.Stopped = r.budget, r.stoppedAt, r.stopped
		runtime.KeepAlive(r)
		return nil
	}
	if res.Shards == 0 && res.Objects != n {
		return fmt.Errorf("%s: synced %d Pods, want %d", res.Variant, res.Objects, n)
	}
	if res.Shards > 0 {
		// A replica's share is only known to the parent, which checks the
		// sum; here: the factory saw no object outside its shard, that is
		// the server applied the selector.
		if r.notices == nil {
			return fmt.Errorf("%s: has no factory notices to check", res.Variant)
		}
		if notices := r.notices(); len(notices) > 0 {
			return fmt.Errorf("%s %d/%d: the server did not filter: %s", res.Variant, res.Shard, res.Shards, strings.Join(notices, "; "))
		}
	}
	// Reads last, as counting: what they allocate is not cache.
	if err := measureChildReads(ctx, res, r, profile); err != nil {
		return err
	}
	if path := os.Getenv(envKeysFile); path != "" {
		if r.keys == nil {
			return fmt.Errorf("%s: cannot list the keys of its objects", res.Variant)
		}
		if err := os.WriteFile(path, []byte(strings.Join(r.keys(), "\n")+"\n"), 0o600); err != nil {
			return err
		}
	}
	runtime.KeepAlive(r)
	return nil
}

// childRunner returns what builds the child's informer: a variant, or for
// the shard benchmark this library with WithShard(field, index, count).
func childRunner(res *result) (func(context.Context, *rest.Config) (*running, error), error) {
	if spec := os.Getenv(envShard); spec != "" {
		if res.Variant != shardVariant {
			return nil, fmt.Errorf("child: %s is set for variant %q", envShard, res.Variant)
		}
		i, s, ok := strings.Cut(spec, "/")
		index, err1 := strconv.Atoi(i)
		count, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil || count < 1 || index < 0 || index >= count {
			return nil, fmt.Errorf("child: %s=%q is not index/count", envShard, spec)
		}
		res.Shard, res.Shards = index, count
		return func(ctx context.Context, cfg *rest.Config) (*running, error) {
			return runOurs(ctx, cfg, informers.WithShard(sharding.FieldUID, index, count))
		}, nil
	}
	name, _ := splitRun(res.Variant)
	v, ok := variantByName(name)
	if !ok {
		return nil, fmt.Errorf("child: unknown variant %q", res.Variant)
	}
	return v.run, nil
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func writeHeapProfile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
