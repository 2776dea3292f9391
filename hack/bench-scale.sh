#!/usr/bin/env bash
# Memory and time to sync of Pod informers at scale, against a real
# kube-apiserver v1.37.2 and etcd (built by hack/testenv/build.sh when
# missing): client-go, this library (default, lean, metadata-only),
# controller-runtime's cache (cr), crcache on this library's informers
# (crcache, crcache-keep) and a bare LIST, each measured in a fresh process;
# or, with -shards, the replicas of a statically sharded informer.
#
#   hack/bench-scale.sh                      # N=1000,10000,30000, every variant, 3 runs;
#                                            # updates BENCHMARKS.md and bench/scale/results/
#   hack/bench-scale.sh -n 1000 -variants upstream,ours-lean -repeats 3 -write=false
#   hack/bench-scale.sh -profile /tmp/prof   # pprof CPU and heap profiles per variant
#   hack/bench-scale.sh -shards 1,2,4,8      # shard benchmark instead: N=10000 (-n), per-replica heap
#                                            # and sync of WithShard(i, S), each replica in its own
#                                            # process; updates only its own section of BENCHMARKS.md
#                                            # and bench/scale/results/shards.json, shards-heap.svg
#   hack/bench-scale.sh -modes stream        # only client-go's default (watch-list stream); the default
#                                            # -modes stream,list also runs each variant as a LIST, and
#                                            # paged adds this library's ListModeConsistentList
#   hack/bench-scale.sh -n 30000 -variants cr,crcache,crcache-keep -modes stream -write=false
#                                            # controller-runtime's cache against crcache; these three
#                                            # also time cached Gets and namespace-and-label Lists
#   hack/bench-scale.sh -mem -n 90000        # memory (issue 50): cr, crcache, crcache-keep and crcache
#                                            # under a 256 MiB budget, streamed, one run each: peak RSS,
#                                            # peak live heap, live heap after sync, the bytes estimate
#                                            # against it, where the budget stopped; checks the goals and
#                                            # prints bench-scale-mem N=...; writes nothing
#   hack/bench-scale.sh -n 30000 -variants ours,ours-lean,crcache,crcache-keep -modes stream,list,paged -repeats 1 -write=false
#                                            # the start-up peak per list mode (bench-scale-startup N=...)
#   hack/bench-scale.sh -smoke               # CI: N=300, every variant once as a stream, ours as a LIST
#                                            # and the lean ones as a paged LIST, then 2 shards; checks
#                                            # that each synced N Pods, the lean caches are smaller, the
#                                            # lean peaks are below the full one's (stream and LIST), the
#                                            # cached reads of cr, crcache and crcache-keep return what
#                                            # they ask for, the 2 shards are disjoint and cover the
#                                            # N Pods, and a 1 MiB budget stops crcache's whole Pods with
#                                            # Ready() saying why
#
# Every run reports the heap after sync, the peak heap during sync, the peak
# live heap during sync against the live heap after sync (the start-up
# peak), the peak RSS, and CPU and wall time to sync. Flags are those of bench/scale (run
# with -h). The run ends with two machine-readable summaries per N, the
# largest N last: bench-scale N=... and bench-scale-peak N=..., and a third,
# bench-scale-decode N=..., where the run measured upstream, upstream-json,
# upstream-protobuf, ours and ours-lean (the wire encoding's cost, in the
# client and in the API server, whose CPU time each run also reports), and
# bench-scale-cr N=... where it measured cr and crcache or crcache-keep
# (heap after sync, CPU to sync, cached Get and List, each against cr)
# (with -shards: per shard count, the heap per replica against the
# unsharded one).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export E2E_BIN_DIR="${E2E_BIN_DIR:-$root/.cache/testenv/bin}"

# Check the flags before building anything, so a typo fails fast.
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
(cd "$root/bench/scale" && go build -o "$bin_dir/bench-scale" .)
BENCH_SCALE_CHECK_FLAGS=1 "$bin_dir/bench-scale" -repo "$root" "$@" >/dev/null

TESTENV_BIN_DIR="$E2E_BIN_DIR" bash "$root/hack/testenv/build.sh" >&2
cd "$root"
"$bin_dir/bench-scale" -repo "$root" "$@"
