#!/usr/bin/env bash
# Memory and time to sync of Pod informers at scale, against a real
# kube-apiserver v1.37.2 and etcd (built by hack/testenv/build.sh when
# missing): client-go, this library (default, lean, metadata-only),
# controller-runtime and a bare LIST, each measured in a fresh process.
#
#   hack/bench-scale.sh                      # N=1000,10000,30000, every variant, 3 runs;
#                                            # updates BENCHMARKS.md and bench/scale/results/
#   hack/bench-scale.sh -n 1000 -variants upstream,ours-lean -repeats 3 -write=false
#   hack/bench-scale.sh -profile /tmp/prof   # pprof CPU and heap profiles per variant
#   hack/bench-scale.sh -smoke               # CI: N=300, every variant once; checks that each
#                                            # synced N Pods and the lean caches are smaller
#
# Flags are those of bench/scale (run with -h). The last line of the output
# is the machine-readable summary for the largest N.
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
