#!/usr/bin/env bash
# The whole test suite: what README.md documents and .ci/run calls.
#
#   gofmt, go vet, generated code up to date, go test -race in every module,
#   the API parity check against client-go, and the e2e suite against a
#   kube-apiserver and etcd built from the Go module proxy.
#
# Needs only Go; everything else is fetched through the Go module proxy.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export PATH="$(go env GOROOT 2>/dev/null || echo /usr/local/go)/bin:$PATH"
cd "$root"

# Modules whose tests run here; hack/testenv only builds the test binaries.
modules=(. hack test test/e2e)
started=$(date +%s)
step() { printf '\n==> %s (%ss)\n' "$*" "$(( $(date +%s) - started ))"; }

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt'ed:"; echo "$unformatted"; exit 1
fi

step "go vet"
for m in "${modules[@]}"; do (cd "$m" && go vet ./...); done

step "hack/verify-codegen.sh"
hack/verify-codegen.sh

step "go test -race (library, generator, conformance)"
for m in . hack test; do (cd "$m" && go test -race -count=1 ./...); done

step "API parity with client-go"
parity="$root/../shared/tools/apiparity"
if [ ! -d "$parity" ]; then
	echo "the API parity tool is missing: expected it at $parity (shared/ beside the checkout)" >&2
	exit 1
fi
(cd "$parity" && go run . -mirror "$root")

step "e2e against kube-apiserver and etcd (test/e2e/run.sh)"
test/e2e/run.sh

step "all checks passed"
