#!/usr/bin/env bash
# Single entry point for the e2e / reliability suite:
#   1. builds kube-apiserver v1.37.2 and etcd via hack/testenv/build.sh when
#      missing or stale (cold: ~5 min on 2 cores; warm: skipped),
#   2. runs the suite with the race detector against them.
# Extra arguments go to `go test`, e.g. test/e2e/run.sh -run TestPagination
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
command -v go >/dev/null || { echo "e2e: no go on PATH" >&2; exit 1; }
# The Go toolchain go.mod asks for, also under GOTOOLCHAIN=local (hack/lib.sh).
source "$repo/hack/lib.sh"
export E2E_BIN_DIR="${E2E_BIN_DIR:-$repo/.cache/testenv/bin}"

TESTENV_BIN_DIR="$E2E_BIN_DIR" bash "$repo/hack/testenv/build.sh"

cd "$here"
start=$(date +%s)
set +e
# -v so that the coverage count and the fault table reach the CI log.
go test -race -vet=off -count=1 -timeout 40m -v "$@" ./...
rc=$?
set -e
echo "e2e: go test finished with exit code $rc in $(( $(date +%s) - start ))s"
exit $rc
