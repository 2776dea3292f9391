#!/usr/bin/env bash
# Soak test: the informers against a real kube-apiserver and etcd (built by
# hack/testenv/build.sh when missing) for a long time, under a steady writer
# and faults on a schedule (apiserver restarts, etcd compactions that drop
# watches, membership changes across 3 sharded replicas, an informer removed
# and added again, a CRD deleted and created again under an informer with
# WithAPIDiscovery). It prints one line and exits non-zero when a goal is
# missed; docs/reliability.md explains the line and the goals.
#
#   hack/soak.sh                      # 10 minutes
#   hack/soak.sh -duration 1h         # samples and result under test/e2e/soak/results/<UTC time>/
#   hack/soak.sh -duration 1h -out /tmp/soak
#
# Other flags: -objects (2000), -namespaces (4), -rate (10 writes/s),
# -sample (15s), -warmup (1m); see `go run ./soak -h` in test/e2e.
# Not part of hack/test.sh (too long); the soak's own logic (slope, line,
# goals) is unit-tested there. Render the plot of a run with
#   (cd test/e2e/soak/plot && go run . -in ../results/<run>)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
command -v go >/dev/null || { echo "soak: no go on PATH" >&2; exit 1; }
export E2E_BIN_DIR="${E2E_BIN_DIR:-$repo/.cache/testenv/bin}"
TESTENV_BIN_DIR="$E2E_BIN_DIR" bash "$here/testenv/build.sh" >&2

args=("$@")
has_out=false
for a in "$@"; do
	case "$a" in -out | -out=* | --out | --out=*) has_out=true ;; esac
done
if ! $has_out; then
	args+=(-out "$repo/test/e2e/soak/results/$(date -u +%Y%m%dT%H%M%SZ)")
fi

cd "$repo/test/e2e"
go build -o "$repo/.cache/soak" ./soak
exec "$repo/.cache/soak" "${args[@]}"
