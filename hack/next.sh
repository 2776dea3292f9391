#!/usr/bin/env bash
# The "next" lane: does this repository build, pass its tests and mirror
# client-go's informers at an upcoming client-go version? It works on a copy
# and leaves the repository alone.
#
#   hack/next.sh [-o DIR] [-e2e] [-race] [VERSION]    e.g. hack/next.sh v0.38.0-beta.0
#
# Without VERSION it runs the suite's other lane (k8s_other_version in
# hack/lib.sh), and says which: while main is behind the newest client-go the
# module proxy lists, that one (the newest pre-release, e.g. v0.38.0-rc.0 the
# day it is published; the pinned next_version_pinned when the proxy cannot
# be asked); once main is on the newest minor, the newest release of the
# minor before it (v0.37.2 while main is on v0.38.0). A lane on an older
# minor lowers go lines to that release's (hack/bump.sh) and runs the tests
# with -tags kubeinformers_prev instead of kubeinformers_next.
#
#   1. copies the repository (tracked files and uncommitted changes, not
#      .cache) to DIR;
#   2. runs hack/bump.sh VERSION there: every k8s.io staging module to
#      VERSION, tidy with the printed workarounds for module versions the
#      proxy refuses, regenerate with our generator (this lane is bump.sh's
#      dry run);
#   3. go build ./... and go vet ./... of the root module and of test/;
#   4. go test of the root module and of test/ (with -race: race-built);
#   5. the API parity check against client-go at VERSION (hack/apiparity),
#      which must match every identifier, and kubeinformers-gen against
#      informer-gen at VERSION on examples/crd (hack/codegen's tests);
#   6. with -e2e: tidies hack/testenv right after the bump (so that a server
#      whose sources the module proxy lacks fails in seconds), builds
#      kube-apiserver and etcd at the matching k8s.io/kubernetes version
#      (v0.38.0-beta.0 → v1.38.0-beta.0; the binaries are kept in
#      .cache/testenv-<that version>/bin of this repository) and runs the e2e
#      suite (test/e2e/run.sh) against them. Without -e2e, hack/testenv's
#      go.mod is bumped but not tidied;
#   7. the controller-runtime bridge (issue 45, item 4), after the library's
#      checks so that a break in controller-runtime leaves their results:
#      go build, go vet and go test of crcache (its unit tests),
#      crcache/crsuite and examples/controller-runtime, each its own module
#      whose controller-runtime (v0.25.3) requires an older k8s.io minor, so
#      that the bump's versions are the ones selected (it prints the
#      controller-runtime and client-go each builds with);
#   8. with -e2e, on the same kube-apiserver and etcd, as hack/test.sh's e2e
#      lane: controller-runtime's cache suite against crcache.New
#      (hack/crsuite.sh) and examples/controller-runtime's TestManager.
#
# hack/test.sh runs this lane for the version at its top, not race-built (a
# second compile of all of k8s.io/* with the race detector does not fit the
# suite's time budget). Measured on the 2-core machine (shared with other
# work): cold (empty GOCACHE and GOMODCACHE) 427 s wall, 465 CPU-seconds
# alone, 272 s and 428 CPU-seconds as a step of a cold hack/test.sh; warm
# (-trimpath lets a new copy reuse the compiled packages) about 60 s when
# nothing changed, up to 135 s after edits, most of it the tests. The
# controller-runtime bridge adds about 140 s the first time and 70 s warm;
# with -e2e and the server already built, the e2e suite adds about 630 s
# (v0.38.0-beta.0 on 2026-12-04, other sessions' tests beside it).
#
# Every go command runs with the toolchain that k8s.io/client-go@VERSION's
# go.mod asks for (k8s_toolchain in hack/lib.sh: go 1.27.0 → go1.27.3;
# NEXT_GOTOOLCHAIN overrides), which the go command fetches through
# GOTOOLCHAIN. A VERSION the module proxy does not have, or a toolchain it
# cannot serve, fails before anything is copied.
#
# -o DIR: the copy goes there (DIR must be empty or absent) and is kept.
# Without it the copy is a temporary directory, removed on success and kept
# on failure. The last line is
#   next VERSION: parity N/M, tests ok
# (", e2e ok, crsuite ok" added with -e2e), or on failure which step failed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	echo "usage: hack/next.sh [-o DIR] [-e2e] [-race] [VERSION]   (e.g. v0.38.0-beta.0; default: the newest client-go the module proxy lists)" >&2
	exit 2
}
out="" e2e=0 race=0
while [ $# -gt 0 ]; do
	case $1 in
	-o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	-e2e) e2e=1; shift ;;
	-race) race=1; shift ;;
	-h | -help | --help) usage ;;
	-*) echo "next: unknown flag $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -le 1 ] || usage
command -v go >/dev/null || { echo "next: no go on PATH" >&2; exit 1; }
if [ $# = 1 ]; then
	version=$1
else
	version=$(k8s_other_version)
	echo "next: no VERSION given; the other lane's client-go (k8s_other_version in hack/lib.sh): $version"
fi
k8s_check_version "$version" || usage

started=$(date +%s)
current="check $version and its Go toolchain"
copy=""
keep=0
finish() {
	local rc=$?
	if [ "$rc" != 0 ]; then
		echo
		echo "next $version: FAILED at step \"$current\" (exit $rc)${copy:+; the copy is in $copy}"
	elif [ -n "$copy" ] && [ "$keep" = 0 ]; then
		rm -rf "$copy"
	fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# step NAME CMD...: runs CMD and prints its wall time.
step() {
	local t0
	current=$1
	shift
	printf '\n==> next: %s\n' "$current"
	t0=$(date +%s)
	"$@"
	echo "    ($(($(date +%s) - t0)) s)"
}

tc=$(k8s_toolchain "$version")
export GOTOOLCHAIN=$tc
# -trimpath keeps the copy's directory out of the build cache keys, so that a
# second run in another temporary directory reuses the compiled packages of
# the first (the toolchain is the lane's own: nothing else shares them).
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
echo "next: k8s.io/client-go $version with Go toolchain $tc (GOTOOLCHAIN)"

if [ -n "$out" ]; then
	if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
		echo "next: $out is not empty" >&2
		exit 2
	fi
	mkdir -p "$out"
	copy=$(cd "$out" && pwd)
	keep=1
else
	copy=$(mktemp -d "${TMPDIR:-/tmp}/kubeinformers-next.XXXXXX")
fi

copy_repo() {
	# Tracked and untracked files that are not ignored, as the working tree
	# has them; a tracked file deleted in the working tree stays deleted.
	(cd "$root" && git ls-files -z -co --exclude-standard |
		while IFS= read -r -d '' f; do
			[ -e "$f" ] && printf '%s\0' "$f"
		done | tar --null -T - -cf -) | tar -xf - -C "$copy"
	echo "copied $(cd "$copy" && find . -type f | wc -l) files to $copy"
}
step "copy the repository" copy_repo
# hack/testenv (the e2e server's sources; its module graph is all of
# k8s.io/kubernetes) is tidied only with -e2e, at once, so that a server the
# module proxy cannot serve the sources of fails in seconds.
step "hack/bump.sh -skip hack/testenv $version (bump, tidy, regenerate)" \
	"$copy/hack/bump.sh" -skip hack/testenv "$version"
if [ "$e2e" = 1 ]; then
	kv=$(kube_version "$version")
	step "tidy hack/testenv (k8s.io/kubernetes $kv, for -e2e)" tidy_module "$copy/hack/testenv"
fi

# The modules whose packages are checked: the library and the
# apiserver-free test module (conformance, clientgo).
check_modules=(. test)
# in_modules CMD...: runs CMD in each of check_modules, all of them even when
# one fails, and fails if any did.
in_modules() {
	local m failed=()
	for m in "${check_modules[@]}"; do
		echo "--- $m: $*"
		(cd "$copy/$m" && "$@") || failed+=("$m")
	done
	[ "${#failed[@]}" = 0 ] || { echo "next: failed in ${failed[*]}: $*" >&2; return 1; }
}
step "go build ./..." in_modules go build ./...
# A lane on a newer minor than main's adds, with the tag kubeinformers_next,
# the tests that need the upcoming client-go (its sharding API:
# sharding/upstream_next_test.go, test/conformance/upstream_next_test.go); a
# lane on an older minor (the previous release, after a move) sets
# kubeinformers_prev, which leaves out the tests that need main's.
lane_tag=kubeinformers_next
if [ "$(k8s_minor "$version")" -lt "$(k8s_minor "$(gomod_require_version "$root/go.mod" k8s.io/client-go)")" ]; then
	lane_tag=kubeinformers_prev
fi
step "go vet ./... (-tags $lane_tag)" in_modules go vet -tags "$lane_tag" ./...
test_flags=(-count=1 -vet=off -tags "$lane_tag")
[ "$race" = 1 ] && test_flags+=(-race)
step "go test ${test_flags[*]} ./..." in_modules go test "${test_flags[@]}" ./...

parity_line=""
parity() {
	local log=$copy/.parity.log rc=0
	(cd "$copy/hack" && go run ./apiparity -module-dir ..) >"$log" 2>&1 || rc=$?
	cat "$log"
	parity_line=$(grep -m1 '^api parity: ' "$log" || true)
	rm -f "$log"
	[ "$rc" = 0 ] || return "$rc"
	local n m
	read -r n m < <(sed -E 's#^api parity: ([0-9]+)/([0-9]+) .*#\1 \2#' <<<"$parity_line")
	if [ -z "$n" ] || [ "$n" != "$m" ]; then
		echo "next: parity is not 100% (${parity_line:-no parity line})" >&2
		return 1
	fi
	parity_line="$n/$m"
}
step "API parity with client-go $version (hack/apiparity)" parity

# kubeinformers-gen against informer-gen of the same release: hack/codegen's
# tests build informer-gen from k8s.io/code-generator (bumped to $version
# above) and compare what both generate for examples/crd's API packages
# (TestParityWithInformerGen, TestFlagsMatchInformerGen).
codegen_parity() { (cd "$copy/hack/codegen" && go test -count=1 -vet=off ./...); }
step "kubeinformers-gen against informer-gen $version (hack/codegen)" codegen_parity

suffix=""
if [ "$e2e" = 1 ]; then
	export E2E_BIN_DIR="$root/.cache/testenv-$kv/bin"
	step "build kube-apiserver and etcd $kv (hack/testenv/build.sh)" \
		env TESTENV_BIN_DIR="$E2E_BIN_DIR" "$copy/hack/testenv/build.sh"
	step "e2e against kube-apiserver $kv (test/e2e/run.sh)" "$copy/test/e2e/run.sh"
	suffix=", e2e ok"
fi

# The controller-runtime bridge, after the library's checks (a break in
# controller-runtime leaves the library's results above it): its own modules,
# with controller-runtime's k8s.io requirements (an older minor) under the
# bump's, which MVS selects. Build, vet and test each run in every module even
# when one fails.
check_modules=(crcache crcache/crsuite examples/controller-runtime)
bridge() {
	local rc=0
	in_modules go list -m sigs.k8s.io/controller-runtime k8s.io/client-go
	in_modules go build ./... || rc=1
	in_modules go vet -tags "$lane_tag" ./... || rc=1
	in_modules go test "${test_flags[@]}" ./... || rc=1
	return "$rc"
}
step "the controller-runtime bridge (${check_modules[*]}): go build, go vet, go test ${test_flags[*]} ./..." bridge
if [ "$e2e" = 1 ]; then
	step "controller-runtime's cache suite against crcache.New on kube-apiserver $kv (hack/crsuite.sh)" \
		env TESTENV_BIN_DIR="$E2E_BIN_DIR" "$copy/hack/crsuite.sh"
	manager() {
		(cd "$copy/examples/controller-runtime" &&
			TEST_ASSET_KUBE_APISERVER=$E2E_BIN_DIR/kube-apiserver TEST_ASSET_ETCD=$E2E_BIN_DIR/etcd \
				go test -race -vet=off -count=1 -v -run '^TestManager$' ./cmd)
	}
	step "examples/controller-runtime's TestManager on kube-apiserver $kv" manager
	suffix+=", crsuite ok"
fi

current="done"
# CPU: user + sys of this shell's finished children, the second line of
# `times`, which must run in this shell (not in a pipe or $(...)).
times_file=$(mktemp)
times >"$times_file"
cpu=$(awk 'NR == 2 {
	n = split($1 " " $2, t, /[ms ]+/); s = 0
	for (i = 1; i + 1 <= n; i += 2) s += t[i] * 60 + t[i + 1]
	printf "%d", s }' "$times_file")
rm -f "$times_file"
echo
echo "next: $(($(date +%s) - started)) s wall, $cpu CPU-seconds"
echo "next $version: parity $parity_line, tests ok$suffix"
