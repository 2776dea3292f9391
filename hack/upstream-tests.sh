#!/usr/bin/env bash
# Runs client-go's own unit tests of dynamic/dynamicinformer and
# metadata/metadatainformer (informer_test.go of each, at the client-go
# version the root go.mod selects) against this module's dynamicinformer and
# metadatainformer, with only the import path changed (metadatainformer's
# test is an internal test: it becomes an external one that dot-imports
# ours). The copies live in a temporary module that requires this one
# through a replace directive; nothing in the repository changes.
#
#   hack/upstream-tests.sh [go test flags]     default: -race -count=5
#
# test/conformance/differential_gvrfactories_test.go runs the same scenarios
# against client-go's factories and ours side by side; this script is the
# literal check that client-go's tests, unchanged but for the import, pass.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# -gt 0 ] || set -- -race -count=5

version=$(gomod_require_version "$root/go.mod" k8s.io/client-go)
src=$(cd "$root" && go list -m -f '{{.Dir}}' k8s.io/client-go)
module=$(cd "$root" && go list -m)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kubeinformers-upstream.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/dynamicinformer" "$tmp/metadatainformer"
sed "s#\"k8s.io/client-go/dynamic/dynamicinformer\"#dynamicinformer \"$module/dynamicinformer\"#" \
	"$src/dynamic/dynamicinformer/informer_test.go" >"$tmp/dynamicinformer/informer_test.go"
sed -e 's#^package metadatainformer$#package metadatainformer_test#' \
	-e "s#^\t\"k8s.io/client-go/tools/cache\"\$#\t\"k8s.io/client-go/tools/cache\"\n\t. \"$module/metadatainformer\"#" \
	"$src/metadata/metadatainformer/informer_test.go" >"$tmp/metadatainformer/informer_test.go"
for f in "$tmp"/*/informer_test.go; do
	grep -q "$module/" "$f" || { echo "upstream-tests: the import of $f was not rewritten" >&2; exit 1; }
done

cat >"$tmp/go.mod" <<MOD
module upstreamtests

go $(awk '$1 == "go" { print $2 }' "$root/go.mod")

require $module v0.0.0

replace $module => $root
MOD
cp "$root/go.sum" "$tmp/go.sum"
(cd "$tmp" && go mod tidy >/dev/null)
echo "upstream-tests: client-go $version's informer_test.go of dynamicinformer and metadatainformer against $module"
(cd "$tmp" && go test "$@" ./...)
