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

// The shard benchmark: per-replica memory and time to sync of this library
// with WithShard(field, i, S), for each shard count S, against the same informer
// without a shard option. Every replica is measured alone in a fresh child
// process, as a replica of a sharded controller runs in its own process.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// shardGoalSlack is the goal: a replica of S shards holds at
	// most 1/S × 1.15 of the unsharded heap.
	shardGoalSlack = 1.15
	// maxReadSum bounds the bytes the S replicas read together, relative
	// to the unsharded informer, for S >= 2. With server-side filtering
	// they read about 1×; a server that ignored the selector sends each
	// replica everything, S× in total.
	maxReadSum = 1.5
)

// shardReport is one run of the shard benchmark at one N.
type shardReport struct {
	Date       string
	Machine    string
	LoadBefore string // /proc/loadavg when the measurements started
	LoadAfter  string // and when they ended
	Gates      string // the server's --feature-gates
	Server     string // kube-apiserver's /version
	Repeats    int
	N          int
	Pod        podSizes
	Shards     []int
	// Results holds the unsharded reference (Shards 0) first, then one
	// summary per shard count, in the order of Shards.
	Results []*shardSummary
}

// shardSummary aggregates one shard count over every replica of every
// repeat.
type shardSummary struct {
	Shards int // 0: the unsharded reference, one process without a shard option
	// Runs holds, per repeat, the replicas in index order (one for the
	// reference).
	Runs [][]result
	// Err is the first failure: of a replica, or of a check across the
	// replicas of one repeat (counts, disjointness, server-side filtering).
	Err string

	Heap, HeapPerPod, HeapProcess, Sync, CPU, Objects, Read stat // per replica
	ReadSum                                                 stat // per repeat: all replicas together
}

func (s *shardSummary) ok() bool { return s.Err == "" && len(s.Runs) > 0 }

// replicas is the number of processes of one repeat.
func (s *shardSummary) replicas() int { return max(s.Shards, 1) }

func (s *shardSummary) label() string {
	if s.Shards == 0 {
		return "unsharded"
	}
	return strconv.Itoa(s.Shards)
}

func (s *shardSummary) fail(msg string) {
	if s.Err == "" {
		s.Err = msg
	}
}

func (s *shardSummary) aggregate() {
	var heap, perPod, proc, sync, cpu, objects, read, readSum []float64
	for _, rs := range s.Runs {
		sum := 0.0
		for _, r := range rs {
			heap = append(heap, float64(r.HeapBytes))
			perPod = append(perPod, float64(r.HeapBytes)/float64(max(r.Objects, 1)))
			proc = append(proc, float64(r.HeapProcess))
			sync = append(sync, r.SyncSec)
			cpu = append(cpu, r.CPUSec)
			objects = append(objects, float64(r.Objects))
			read = append(read, float64(r.BytesRead))
			sum += float64(r.BytesRead)
		}
		readSum = append(readSum, sum)
	}
	if len(heap) == 0 {
		return
	}
	s.Heap, s.HeapPerPod, s.HeapProcess = newStat(heap), newStat(perPod), newStat(proc)
	s.Sync, s.CPU = newStat(sync), newStat(cpu)
	s.Objects, s.Read, s.ReadSum = newStat(objects), newStat(read), newStat(readSum)
}

// shardJob is one child process of a repeat.
type shardJob struct {
	sum   *shardSummary
	index int
}

// runShardBench is the -shards mode: load N Pods, measure, check, write.
func runShardBench(ctx context.Context, h *harness, cfg *config) int {
	n := cfg.counts[0]
	if err := h.loadTo(ctx, n); err != nil {
		h.logf("%v", err)
		return 1
	}
	pod, err := h.pod(ctx)
	if err != nil {
		h.logf("%v", err)
		return 1
	}
	rep := runShardSeries(ctx, h, n, cfg.shards, cfg.repeats)
	if ctx.Err() != nil {
		// Like the variants' run: an interrupted run writes nothing.
		h.logf("interrupted")
		return 1
	}
	rep.Pod = pod
	fmt.Println(shardTableText(rep))
	failed := checkShardReport(rep)
	if cfg.write {
		if err := writeShardResults(cfg, rep); err != nil {
			h.logf("writing results: %v", err)
			failed = true
		}
	}
	fmt.Println(shardLastLine(rep))
	if failed {
		return 1
	}
	return 0
}

// runShardSeries measures the unsharded reference and every replica of
// every shard count, repeats times, with N Pods loaded. Failures and
// failed checks end up in the summaries' Err.
func runShardSeries(ctx context.Context, h *harness, n int, shards []int, repeats int) *shardReport {
	rep := &shardReport{
		Date:       time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Machine:    machine(),
		LoadBefore: loadAvg(),
		Gates:      h.gates,
		Server:     h.server,
		Repeats:    repeats,
		N:          n,
		Shards:     shards,
		Results:    []*shardSummary{{Shards: 0}},
	}
	for _, s := range shards {
		rep.Results = append(rep.Results, &shardSummary{Shards: s})
	}
	var jobs []shardJob
	for _, s := range rep.Results {
		for i := range s.replicas() {
			jobs = append(jobs, shardJob{sum: s, index: i})
		}
	}
	keysDir, err := os.MkdirTemp("", "bench-scale-keys-")
	if err != nil {
		for _, s := range rep.Results {
			s.fail(err.Error())
		}
		return rep
	}
	defer func() { _ = os.RemoveAll(keysDir) }()
	want := make(map[string]bool, n)
	for i := range n {
		p := podAt(i)
		want[p.ns+"/"+p.name] = true
	}

	for r := range repeats {
		for _, s := range rep.Results {
			s.Runs = append(s.Runs, make([]result, s.replicas()))
		}
		keys := map[*shardSummary][][]string{}
		// Rotate the order by a share of the jobs per repeat, so that no
		// shard count always runs first (warm caches, other load).
		k := r * len(jobs) / repeats
		order := append(slices.Clone(jobs[k:]), jobs[:k]...)
		for _, j := range order {
			if ctx.Err() != nil {
				j.sum.fail("interrupted")
				continue
			}
			res, held := runReplica(ctx, h, keysDir, n, j)
			j.sum.Runs[r][j.index] = res
			if res.Err != "" {
				h.logf("N=%d shards %s replica %d run %d FAILED: %s", n, j.sum.label(), j.index, r+1, res.Err)
				j.sum.fail(res.Err)
				continue
			}
			h.logf("N=%d shards %-9s replica %d run %d: %5d Pods, sync %.2fs cpu %.2fs heap %.1f MiB (process %.1f MiB) read %.1f MiB",
				n, j.sum.label(), j.index, r+1, res.Objects, res.SyncSec, res.CPUSec, mib(float64(res.HeapBytes)), mib(float64(res.HeapProcess)), mib(float64(res.BytesRead)))
			if keys[j.sum] == nil {
				keys[j.sum] = make([][]string, j.sum.replicas())
			}
			keys[j.sum][j.index] = held
		}
		for _, s := range rep.Results {
			if !s.ok() {
				continue
			}
			if err := checkPartition(want, s.Runs[r], keys[s]); err != nil {
				h.logf("N=%d shards %s run %d: %v", n, s.label(), r+1, err)
				s.fail(fmt.Sprintf("run %d: %v", r+1, err))
			}
		}
	}
	rep.LoadAfter = loadAvg()
	for _, s := range rep.Results {
		if s.ok() {
			s.aggregate()
		}
	}
	checkServerFiltered(rep)
	return rep
}

// runReplica runs one child and returns its result and the keys it held.
func runReplica(ctx context.Context, h *harness, keysDir string, n int, j shardJob) (result, []string) {
	keysFile := filepath.Join(keysDir, fmt.Sprintf("shards-%d-replica-%d", j.sum.Shards, j.index))
	extra := []string{envKeysFile + "=" + keysFile}
	v := unshardedVariant
	if j.sum.Shards > 0 {
		v = shardVariant
		extra = append(extra, fmt.Sprintf("%s=%d/%d", envShard, j.index, j.sum.Shards))
	}
	res := runOne(ctx, h.self, h.env, h.caFile, v, n, h.deadline, "", extra...)
	if res.Err != "" {
		return res, nil
	}
	b, err := os.ReadFile(keysFile)
	_ = os.Remove(keysFile)
	if err != nil {
		res.Err = fmt.Sprintf("reading the keys the replica held: %v", err)
		return res, nil
	}
	held := strings.Fields(string(b))
	if len(held) != res.Objects {
		res.Err = fmt.Sprintf("the replica reported %d objects but listed %d keys", res.Objects, len(held))
		return res, nil
	}
	return res, held
}

// checkPartition checks one repeat of one shard count: the replicas' Pod
// counts add up to N, and their caches are pairwise disjoint and together
// hold exactly the loaded Pods.
func checkPartition(want map[string]bool, runs []result, keys [][]string) error {
	sum := 0
	for _, r := range runs {
		sum += r.Objects
	}
	if sum != len(want) {
		return fmt.Errorf("the replicas hold %d Pods together, want %d", sum, len(want))
	}
	if len(keys) != len(runs) {
		return fmt.Errorf("keys of %d replicas, want %d", len(keys), len(runs))
	}
	owner := make(map[string]int, len(want))
	for i, ks := range keys {
		for _, k := range ks {
			if !want[k] {
				return fmt.Errorf("replica %d holds %s, which was not loaded", i, k)
			}
			if j, dup := owner[k]; dup {
				return fmt.Errorf("%s is held by replicas %d and %d", k, j, i)
			}
			owner[k] = i
		}
	}
	if len(owner) != len(want) {
		// Unreachable with the sum checked above, unless a replica listed
		// fewer keys than it counted; say which Pod is missing.
		for k := range want {
			if _, ok := owner[k]; !ok {
				return fmt.Errorf("%s is held by no replica", k)
			}
		}
	}
	return nil
}

// checkServerFiltered fails each shard count of 2 or more whose replicas
// read together more than maxReadSum times what the unsharded informer
// read: the children already fail on an ignored-selector notice; this is
// the same fact seen on the wire.
func checkServerFiltered(rep *shardReport) {
	ref := rep.Results[0]
	if !ref.ok() || ref.Read.Median == 0 {
		return
	}
	for _, s := range rep.Results[1:] {
		if s.Shards < 2 || !s.ok() {
			continue
		}
		if x := s.ReadSum.Max / ref.Read.Median; x > maxReadSum {
			s.fail(fmt.Sprintf("the %d replicas read %.2f× the bytes of the unsharded informer together: the server did not filter", s.Shards, x))
		}
	}
}

// checkShardReport reports failures; nothing about time is checked, and
// the heap goal is reported, not enforced: it is a measurement.
func checkShardReport(rep *shardReport) bool {
	failed := false
	for _, s := range rep.Results {
		if !s.ok() {
			fmt.Fprintf(os.Stderr, "bench-scale: N=%d shards %s failed: %s\n", rep.N, s.label(), s.Err)
			failed = true
		}
	}
	return failed
}

// goal is the bound on the heap of one of S replicas, relative to
// the unsharded heap.
func goal(shards int) float64 { return shardGoalSlack / float64(shards) }

// heapRatio is s's median replica heap (and its largest replica's) over
// the unsharded median.
func heapRatio(rep *shardReport, s *shardSummary) (median, largest float64, ok bool) {
	ref := rep.Results[0]
	if !ref.ok() || !s.ok() || ref.Heap.Median == 0 {
		return 0, 0, false
	}
	return s.Heap.Median / ref.Heap.Median, s.Heap.Max / ref.Heap.Median, true
}

func mib(b float64) float64 { return b / (1 << 20) }

// loadAvg is the 1, 5 and 15 minute load average, as the kernel reports it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
