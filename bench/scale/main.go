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

// Command scale measures memory and time to sync of Pod informers at
// scale against a real kube-apiserver and etcd (test/e2e/testenv):
// client-go's informers, this library's with and without the lean-memory
// options, a metadata-only informer, controller-runtime's cache, crcache
// (controller-runtime's cache on this library's informers, cr.go, which
// with controller-runtime's also times cached reads) and a bare LIST as the
// floor. With -shards it measures instead the replicas of a
// statically sharded informer (WithShard(field, i, S)) against the unsharded one
// (shards.go). Run it through hack/bench-scale.sh.
//
// Each measurement runs in a fresh child process (this binary again, with
// -child), so that one variant's heap never counts against another's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage errors exit with this code, like flag's own.
const exitUsage = 2

type config struct {
	counts   []int
	variants []string
	// modes are the list modes each variant runs in (modes.go).
	modes []string
	// shards selects the shard benchmark (shards.go) instead of the
	// variants: one run per shard count, at the one N of counts.
	shards   []int
	repeats  int
	deadline time.Duration
	profile  string
	smoke    bool
	// mem is the memory comparison (mem.go): memVariants, streamed.
	mem      bool
	write    bool
	rewrite  bool
	report   string // "" or reportDecode: which section and files a run writes
	repoRoot string
}

// reportDecode is -report decode (decode.go).
const reportDecode = "decode"

func main() {
	if child := childVariant(); child != "" {
		os.Exit(runChild(child))
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
		if !errors.Is(err, flag.ErrHelp) {
			os.Exit(exitUsage)
		}
		os.Exit(0)
	}
	if os.Getenv("BENCH_SCALE_CHECK_FLAGS") != "" {
		// hack/bench-scale.sh checks the flags before building the server.
		os.Exit(0)
	}
	if cfg.rewrite {
		os.Exit(rewriteFromRaw(cfg))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rc := runParent(ctx, cfg)
	stop()
	os.Exit(rc)
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("bench-scale", flag.ContinueOnError)
	n := fs.String("n", "1000,10000,30000", "comma-separated Pod counts, each 1..200000")
	variants := fs.String("variants", "", "comma-separated variants (default: all; raw-list means both raw-list forms): "+strings.Join(allVariants(), ","))
	repeats := fs.Int("repeats", 3, "measurements per variant and count, 1..50 (the median is reported)")
	deadline := fs.Duration("deadline", 5*time.Minute, "time a variant may take to sync before it is reported as failed")
	profile := fs.String("profile", "", "after the measured runs, run each variant once more with pprof CPU and heap profiles written into this directory")
	shards := fs.String("shards", "", "comma-separated shard counts, each 1..64: run the shard benchmark instead of the variants (every replica of WithShard(sharding.FieldUID, i, S) in its own process, and the unsharded reference) at one N (default 10000); it writes its own section of BENCHMARKS.md")
	modes := fs.String("modes", "stream,list", "comma-separated list modes each variant runs in: "+strings.Join(allModes, ",")+" (modes.go)")
	smoke := fs.Bool("smoke", false, "CI smoke run: N=300, one repeat, every variant as a stream and the main ones as a LIST, then 2 shards; checks counts, that the cached reads of the controller-runtime caches return what they ask for, that the lean cache and the lean peak are smaller and that the shards are disjoint and cover N; writes nothing")
	mem := fs.Bool("mem", false, "the memory comparison (issue 50): "+strings.Join(memVariants, ",")+", streamed, one run each (-repeats) at -n (default 90000): peak RSS, peak live heap, live heap after sync, the bytes estimate against it, and where a 256 MiB budget stops whole Pods; checks the goals; writes nothing")
	write := fs.Bool("write", true, "update BENCHMARKS.md and the plots (never with -smoke)")
	rewrite := fs.Bool("rewrite", false, "measure nothing: render BENCHMARKS.md and the plots again from "+resultsRaw+" (after a change of the report's form)")
	report := fs.String("report", "", "where -write puts the run: empty for the main section of BENCHMARKS.md and its plots; \"decode\" for the wire encodings' own section, plots (results/decode-*.svg) and raw results (results/decode.json)")
	root := fs.String("repo", "", "repository root (default: found from the working directory)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := &config{repeats: *repeats, deadline: *deadline, profile: *profile, smoke: *smoke, mem: *mem, write: *write && !*smoke && !*mem, rewrite: *rewrite, report: *report}
	if cfg.report != "" && cfg.report != reportDecode {
		return nil, fmt.Errorf("-report: %q is neither empty nor %q", cfg.report, reportDecode)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.rewrite && (cfg.smoke || set["shards"] || set["write"]) {
		return nil, errors.New("-rewrite only renders the last run again; do not combine it with -smoke, -shards or -write")
	}
	if cfg.mem {
		for _, f := range []string{"smoke", "shards", "variants", "modes", "rewrite", "write"} {
			if set[f] {
				return nil, fmt.Errorf("-mem runs its own variants in the stream mode and writes nothing; do not combine it with -%s", f)
			}
		}
		if !set["n"] {
			*n = "90000"
		}
		if !set["repeats"] {
			cfg.repeats = 1
		}
		*variants = strings.Join(memVariants, ",")
		*modes = modeStream
	}
	if cfg.smoke {
		if set["n"] || set["repeats"] {
			return nil, errors.New("-smoke sets -n 300 and -repeats 1 itself; do not combine them")
		}
		if set["shards"] {
			return nil, errors.New("-smoke runs 2 shards itself; do not combine it with -shards")
		}
		*n = "300"
		cfg.repeats = 1
	}
	if set["shards"] {
		if set["variants"] || set["profile"] {
			return nil, errors.New("-shards runs the shard benchmark only; do not combine it with -variants or -profile")
		}
		if !set["n"] {
			*n = "10000"
		}
		for _, s := range strings.Split(*shards, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || v < 1 || v > 64 {
				return nil, fmt.Errorf("-shards: %q is not a shard count in 1..64", s)
			}
			if slices.Contains(cfg.shards, v) {
				return nil, fmt.Errorf("-shards: %d is given twice", v)
			}
			cfg.shards = append(cfg.shards, v)
		}
		slices.Sort(cfg.shards)
	}
	for _, s := range strings.Split(*n, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 || v > 200000 {
			return nil, fmt.Errorf("-n: %q is not a Pod count in 1..200000", s)
		}
		if slices.Contains(cfg.counts, v) {
			return nil, fmt.Errorf("-n: %d is given twice", v)
		}
		cfg.counts = append(cfg.counts, v)
	}
	slices.Sort(cfg.counts)
	if len(cfg.shards) > 0 && len(cfg.counts) != 1 {
		return nil, fmt.Errorf("-shards: runs at one Pod count, got -n %s", *n)
	}
	if cfg.repeats < 1 || cfg.repeats > 50 {
		return nil, fmt.Errorf("-repeats: %d is not in 1..50", cfg.repeats)
	}
	if cfg.deadline <= 0 {
		return nil, fmt.Errorf("-deadline: %v is not positive", cfg.deadline)
	}
	switch {
	case len(cfg.shards) > 0:
		// The shard benchmark runs its own two variants.
	case *variants == "":
		cfg.variants = allVariants()
	default:
		var names []string
		for _, v := range strings.Split(*variants, ",") {
			v = strings.TrimSpace(v)
			if v == "raw-list" {
				// The floor is the faster of its two forms; run both.
				names = append(names, rawPaged, rawRV0)
				continue
			}
			names = append(names, v)
		}
		for _, v := range names {
			if _, ok := variantByName(v); !ok {
				return nil, fmt.Errorf("-variants: unknown variant %q (known: %s)", v, strings.Join(allVariants(), ", "))
			}
			if slices.Contains(cfg.variants, v) {
				return nil, fmt.Errorf("-variants: %q is given twice", v)
			}
			cfg.variants = append(cfg.variants, v)
		}
	}
	if cfg.smoke && *variants != "" {
		return nil, errors.New("-smoke runs every variant; do not combine it with -variants")
	}
	if cfg.smoke && set["modes"] {
		return nil, errors.New("-smoke chooses its modes itself; do not combine it with -modes")
	}
	ms, err := parseModes(*modes)
	if err != nil {
		return nil, err
	}
	cfg.modes = ms
	cfg.repoRoot = *root
	if cfg.repoRoot == "" {
		r, err := findRepoRoot()
		if err != nil {
			return nil, err
		}
		cfg.repoRoot = r
	}
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return nil, fmt.Errorf("-profile: %w", err)
		}
		abs, err := filepath.Abs(cfg.profile)
		if err != nil {
			return nil, fmt.Errorf("-profile: %w", err)
		}
		cfg.profile = abs
	}
	return cfg, nil
}

// findRepoRoot walks up from the working directory to the directory whose
// go.mod declares the library module.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/kubeinformers/informers\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no repository root above %s (use -repo)", dir)
		}
	}
}

// machine describes where the numbers come from.
func machine() string {
	mem := "unknown memory"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					mem = fmt.Sprintf("%.0f GiB", kb/(1<<20))
				}
			}
		}
	}
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = ", " + strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d cores%s, %s, %s %s/%s", runtime.NumCPU(), cpu, mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
