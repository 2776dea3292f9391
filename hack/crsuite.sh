#!/usr/bin/env bash
# controller-runtime's own pkg/cache suite against crcache.New (issue 43).
#
#   hack/crsuite.sh                  the suite against crcache.New
#   hack/crsuite.sh -upstream        the same files unmodified, against
#                                    controller-runtime's own cache.New
#   hack/crsuite.sh [-upstream] ARGS...  ARGS go to `go test`, e.g.
#                                    -ginkgo.focus='Multi-Namespace'
#
# It takes the suite's external test files (cache_suite_test.go,
# cache_test.go, informer_cache_test.go) from the module cache, from the
# controller-runtime version that crcache/crsuite/go.mod requires, and
# rewrites only what must be rewritten, printing every rewritten line:
#   - the package clause, cache_test -> crsuite_test (the harness package);
#   - without -upstream, cache.New -> crcache.New, and the import of
#     github.com/kubeinformers/informers/crcache next to controller-runtime's
#     pkg/cache (still imported: cache.Options and the rest are its).
# The copies live in a temporary directory and reach go test as an -overlay
# of crcache/crsuite: they never enter the source tree, so no lint, tidy or
# `go test ./...` of the repository ever sees them, and nothing can commit
# them.
#
# envtest starts hack/testenv's kube-apiserver and etcd (TEST_ASSET_KUBE_APISERVER
# and TEST_ASSET_ETCD; built with hack/testenv/build.sh when missing or stale,
# as test/e2e/run.sh does). go test runs race-built, with ginkgo's verbose
# output, so the log names every spec and ends with ginkgo's spec counts.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode=crcache
if [ "${1:-}" = -upstream ]; then
	mode=upstream
	shift
fi
case "${1:-}" in
-h | -help | --help)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
esac

command -v go >/dev/null || { echo "crsuite: no go on PATH" >&2; exit 1; }
harness=$root/crcache/crsuite
files=(cache_suite_test.go cache_test.go informer_cache_test.go)

if [ "$mode" = crcache ] && [ ! -f "$root/crcache/go.mod" ]; then
	echo "crsuite: crcache/go.mod does not exist yet: nothing to test (hack/crsuite.sh -upstream runs the suite against controller-runtime's own cache)" >&2
	exit 1
fi

# The suite of the controller-runtime version the harness builds with.
cr_version=$(cd "$harness" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-runtime)
cr_dir=$(cd "$harness" && go mod download -json "sigs.k8s.io/controller-runtime@$cr_version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$cr_dir/pkg/cache" ] || { echo "crsuite: no pkg/cache in the module cache for controller-runtime $cr_version ($cr_dir)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Copy and rewrite; the overlay maps each file into the harness package.
echo "crsuite: controller-runtime $cr_version's pkg/cache suite against $([ "$mode" = crcache ] && echo crcache.New || echo "its own cache.New (-upstream)")"
echo "crsuite: from $cr_dir/pkg/cache; every line rewritten:"
overlay="{\"Replace\":{"
sep=""
for f in "${files[@]}"; do
	src=$cr_dir/pkg/cache/$f
	dst=$tmp/$f
	sed 's/^package cache_test$/package crsuite_test/' "$src" >"$dst"
	if [ "$mode" = crcache ] && grep -q '\<cache\.New\>' "$dst"; then
		sed -i -e 's/\<cache\.New\>/crcache.New/g' \
			-e 's#^\([[:space:]]*\)"sigs.k8s.io/controller-runtime/pkg/cache"$#\1"github.com/kubeinformers/informers/crcache"\n&#' "$dst"
		grep -q '"github.com/kubeinformers/informers/crcache"' "$dst" ||
			{ echo "crsuite: $f calls cache.New but has no import line of sigs.k8s.io/controller-runtime/pkg/cache to add crcache's beside" >&2; exit 1; }
	fi
	# diff exits 1 when the files differ, which they do.
	diff -U0 --label "upstream/$f" --label "crsuite/$f" "$src" "$dst" || true
	echo "  $f: lines rewritten or added: $(diff "$src" "$dst" | grep -c '^>' || true) of $(wc -l <"$dst")"
	overlay+="$sep\"$harness/$f\":\"$dst\""
	sep=,
done
echo "$overlay}}" >"$tmp/overlay.json"

cd "$harness"
# Every import of the copies must be one of crsuite.go's, so that go.mod,
# tidied without the copies, holds all the suite builds with.
missing=$(comm -23 \
	<(go list -overlay "$tmp/overlay.json" -f '{{join .XTestImports "\n"}}' . | grep '^[^/]*\.' | LC_ALL=C sort -u) \
	<(go list -f '{{join .Imports "\n"}}' . | LC_ALL=C sort -u))
if [ -n "$missing" ]; then
	echo "crsuite: the suite imports packages crcache/crsuite/crsuite.go does not; import them there and run go mod tidy:" >&2
	echo "$missing" | sed 's/^/  /' >&2
	exit 1
fi

bin=${TESTENV_BIN_DIR:-$root/.cache/testenv/bin}
TESTENV_BIN_DIR="$bin" bash "$root/hack/testenv/build.sh"
export TEST_ASSET_KUBE_APISERVER=$bin/kube-apiserver TEST_ASSET_ETCD=$bin/etcd
# Never an existing cluster, nor binaries from elsewhere.
unset USE_EXISTING_CLUSTER KUBEBUILDER_ASSETS
# envtest's default of 20 s to start the control plane is short on a
# 2-core machine that runs lint beside the suite (hack/test.sh).
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-120s}

ginkgo_flags=(-ginkgo.v)
[ -t 1 ] || ginkgo_flags+=(-ginkgo.no-color)
# cpu_seconds: sets $cpu to the user+sys seconds of this shell's finished
# children. `times` runs in this shell: a $(...) subshell's children are its own.
cpu_seconds() {
	times >"$tmp/times"
	cpu=$(awk 'NR == 2 { n = split($1 " " $2, t, /[ms ]+/); s = 0
		for (i = 1; i + 1 <= n; i += 2) s += t[i] * 60 + t[i + 1]; printf "%d", s }' "$tmp/times")
}
cpu_seconds
cpu0=$cpu
start=$(date +%s)
rc=0
# -vet=off as in test/e2e/run.sh: hack/test.sh's golangci-lint runs go vet.
go test -race -vet=off -count=1 -timeout 30m -overlay "$tmp/overlay.json" -v . "${ginkgo_flags[@]}" "$@" || rc=$?
cpu_seconds
echo "crsuite ($mode): go test finished with exit code $rc in $(($(date +%s) - start)) s wall, $((cpu - cpu0)) CPU-seconds (build, test and servers)"
exit "$rc"
