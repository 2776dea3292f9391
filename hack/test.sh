#!/usr/bin/env bash
# The whole test suite: what README.md documents and .ci/run calls.
#
#   gofmt, license headers, `go mod tidy -diff`, generated code up to date,
#   golangci-lint (.golangci.yml; includes go vet), go test -race (with the
#   library's statement coverage, hack/coverage.sh), the API
#   parity check against client-go, the bench-scale smoke and the e2e suite
#   against a kube-apiserver and etcd built from the Go module proxy, and
#   controller-runtime's own cache suite against crcache (hack/crsuite.sh).
#
#   hack/test.sh -next   also runs the other lane: a copy moved to the
#                        upcoming client-go (the newest version the module
#                        proxy lists), or once main is on that minor to the
#                        newest release of the minor before it
#                        (k8s_other_version in hack/lib.sh), built, vetted,
#                        tested and parity-checked there (hack/next.sh).
#
# The next lane compiles all of k8s.io/* a third time, with its own Go
# toolchain: about 1,400 CPU-seconds (measured on 2026-12-02), more than the
# 1,500 s wall budget of a cold CI run leaves (below). So CI
# (.ci/run) runs the suite without it, and the lane is run on its own, with
# hack/next.sh, the day a client-go pre-release appears and before a
# change to the generator, the templates or the factory's wiring lands
# (docs/new-client-go.md).
#
# Every step covers every Go module of the repository (each go.mod outside
# testdata/), found at run time. It ends with a table of each step's wall and
# CPU time, also when a step fails.
#
# Two lanes share the two cores of a CI machine, ordered so that no package is
# compiled twice at once (the build cache does not share work in flight) and
# so that the lane that mostly waits (the servers' tests) starts as soon as it
# can and runs beside the steps that compute:
#
#   background: build kube-apiserver and etcd   | foreground: gofmt ... tidy,
#     (plain: the k8s.io/* packages that lint,  |   compile the e2e tests
#      codegen, parity and the smoke reuse)     |   (race: the k8s.io/*,
#   then, once the foreground has compiled the  |   controller-runtime and
#   e2e tests: the e2e suite, controller-       |   library packages every
#     runtime's cache suite (hack/crsuite.sh)   |   race-built test reuses),
#     and the example's manager, one after the  |   build golangci-lint, the
#     other (mostly waiting on the servers)     |   race-built tests (with
#                                               |   coverage), golangci-lint,
#                                               |   codegen, parity, the bench
#                                               |   smoke (once the servers
#                                               |   are built)
#                                               |   (and with -next the next
#                                               |   lane: its own Go
#                                               |   toolchain, so it shares
#                                               |   no compiled package)
#
# The budget: a cold run (fresh clone, empty Go build cache) on an idle 2-core
# machine takes at most 1,500 s of wall time; the last line says how long this
# run took. docs/development.md lists each step's cold cost.
#
# Needs only the `go` on PATH (Go 1.26 or newer); everything else is fetched
# through the Go module proxy.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

next=0
case "${1:-}" in
"") ;;
-next) next=1 ;;
*) echo "usage: hack/test.sh [-next]" >&2; exit 2 ;;
esac

# The upcoming client-go release that the next lane checks (hack/next.sh).
# Not race-built: with its own toolchain, -race would compile all of k8s.io/*
# a second time, more than the 1,500 s budget of a cold run leaves.
# It is k8s_other_version in hack/lib.sh: the newest client-go the module
# proxy lists while main is behind it (the newest pre-release, or the newest
# release once that is out), the newest release of the previous minor once
# main has moved; NEXT_VERSION overrides it, and without the proxy it is the
# pinned next_version_pinned.
next_version=""
if [ "$next" = 1 ]; then
	next_version=${NEXT_VERSION:-$(k8s_other_version)}
fi

cd "$root"
command -v go >/dev/null || { echo "test.sh: no go on PATH" >&2; exit 1; }

# Disk: a cold run writes about 12 GiB (the build cache, the module cache,
# golangci-lint's cache, the servers) and the race-built tests' binaries
# take up to 3 GiB more in the temporary directory while they run
# (docs/development.md). A full disk fails a step far from its cause (a
# `go run` deep in a test: "mkdir /tmp/go-build...: no space left on
# device"), so the run says where it stands first and again in its table.
need_gib=16
free_gib() {
	local d=$1
	while [ ! -d "$d" ]; do d=$(dirname "$d"); done
	df -Pk "$d" | awk 'NR == 2 { printf "%d", $4 / 1048576 }'
}
disk_report() {
	local gocache cache tmp
	gocache=$(go env GOCACHE)
	cache=$(free_gib "$gocache")
	tmp=$(free_gib "${TMPDIR:-/tmp}")
	printf 'hack/test.sh: %d GiB free for the Go build cache (%s), %d GiB for temporary files (%s)' \
		"$cache" "$gocache" "$tmp" "${TMPDIR:-/tmp}"
	if [ "$cache" -lt "$need_gib" ] || [ "$tmp" -lt "$need_gib" ]; then
		printf '; WARNING: a cold run needs about %d GiB, a step may fail with "no space left on device"' "$need_gib"
	fi
	printf '\n'
}
disk_report

mapfile -t all_modules < <(modules)
# Modules whose `go test ./...` needs no apiserver. test/e2e runs in the e2e
# step (test/e2e/run.sh); hack/testenv only builds the e2e binaries
# (build.sh); crcache/crsuite has no tests of its own: its tests are
# controller-runtime's cache suite, which hack/crsuite.sh hands to go test at
# run time (never in the tree, so lint and tidy see only its committed file);
# a module without Go files (hack/tools) has nothing to test.
unit_modules=()
lint_modules=()
for m in "${all_modules[@]}"; do
	has_go_files "$m" || continue
	lint_modules+=("$m")
	case "$m" in
	test/e2e | hack/testenv | crcache/crsuite) ;;
	*) unit_modules+=("$m") ;;
	esac
done

# --- step bookkeeping -------------------------------------------------------
logs=$(mktemp -d)
started=$(date +%s)
names=() walls=() cpus=() results=()
bg_pid="" bg_name=""

# cpu_seconds: sets $cpu to the user+sys seconds of the shell's finished
# children so far. `times` must run in this shell, not in a $(...) subshell,
# whose children are its own.
cpu=0
times_cpu() {
	awk 'NR == 2 {
		n = split($1 " " $2, t, /[ms ]+/); s = 0
		for (i = 1; i + 1 <= n; i += 2) s += t[i] * 60 + t[i + 1]
		printf "%d", s }' "$1"
}
cpu_seconds() {
	times >"$logs/times"
	cpu=$(times_cpu "$logs/times")
}

record() { names+=("$1") walls+=("$2") cpus+=("$3") results+=("$4"); }

table() {
	local rc=$?
	if [ -n "$bg_pid" ]; then
		# A step failed while the background lane was running: stop it.
		kill -TERM -- "-$bg_pid" 2>/dev/null || true
		wait "$bg_pid" 2>/dev/null || true
		record_background
		record "$bg_name" "-" "-" "stopped"
	fi
	printf '\n%-52s %7s %7s  %s\n' "step" "wall s" "CPU s" "result"
	local i total
	for i in "${!names[@]}"; do
		printf '%-52s %7s %7s  %s\n' "${names[$i]}" "${walls[$i]}" "${cpus[$i]}" "${results[$i]}"
	done
	cpu_seconds
	total=$(($(date +%s) - started))
	printf '%-52s %7s %7s  %s\n' "total" "$total" "$cpu" \
		"$([ "$rc" = 0 ] && echo "all checks passed" || echo "FAILED (exit $rc)")"
	printf '\nhack/test.sh: %d s wall, %d CPU-seconds; budget: 1500 s wall for a cold run on an idle 2-core machine (%s)\n' \
		"$total" "$cpu" "$([ "$total" -le 1500 ] && echo "within it" || echo "OVER it")"
	disk_report
	rm -rf "$logs"
}
trap table EXIT
# Killed or interrupted: exit non-zero, so that the table says FAILED.
trap 'exit 130' INT
trap 'exit 143' TERM

# timed TIMES CMD...: run CMD in a subshell of its own and write that
# subshell's `times` to TIMES, so that the CPU time read from it is CMD's
# alone: a background lane's CPU is not counted in whichever step happens to
# reap it. It returns CMD's status.
timed() {
	local out=$1
	shift
	(
		rc=0
		"$@" || rc=$?
		times >"$out"
		exit "$rc"
	)
}

# step NAME CMD...: run CMD in the foreground; stop the suite if it fails,
# unless TEST_KEEP_GOING=1 (then every step runs and the suite fails at the
# end, so that one run shows every failing step).
failed=0
step() {
	local name=$1 rc=0 t0
	shift
	printf '\n==> %s\n' "$name"
	t0=$(date +%s)
	timed "$logs/step.times" "$@" || rc=$?
	record "$name" "$(($(date +%s) - t0))" "$(times_cpu "$logs/step.times")" "$([ "$rc" = 0 ] && echo ok || echo "FAILED ($rc)")"
	if [ "$rc" != 0 ] && [ "${TEST_KEEP_GOING:-}" = 1 ]; then
		failed=1
		return 0
	fi
	return "$rc"
}

# background NAME CMD...: start CMD now, in its own process group, with its
# output in a log; finish_background waits for it and reports each of its
# bg_steps as a step.
background() {
	bg_name=$1
	shift
	printf '\n==> %s: started in the background\n' "$bg_name"
	: >"$logs/background.steps"
	set -m
	(
		rc=0
		"$@" >"$logs/background.log" 2>&1 || rc=$?
		exit "$rc"
	) &
	bg_pid=$!
	set +m
}

# bg_step NAME CMD...: in the background lane, run CMD as one step of it,
# recording its wall and CPU time for the table.
bg_step() {
	local name=$1 rc=0 t0
	shift
	printf '\n==> %s\n' "$name"
	t0=$(date +%s)
	timed "$logs/bg-step.times" "$@" || rc=$?
	printf '%s %s %s %s\n' "$(($(date +%s) - t0))" "$(times_cpu "$logs/bg-step.times")" "$rc" "$name" >>"$logs/background.steps"
	return "$rc"
}

# record_background: the table rows of the background lane's steps so far.
record_background() {
	local wall bcpu brc name
	while read -r wall bcpu brc name; do
		record "$name (background)" "$wall" "$bcpu" "$([ "$brc" = 0 ] && echo ok || echo "FAILED ($brc)")"
	done <"$logs/background.steps"
}

finish_background() {
	local t0 rc=0
	t0=$(date +%s)
	printf '\n==> waiting for: %s\n' "$bg_name"
	wait "$bg_pid" || rc=$?
	bg_pid=""
	cat "$logs/background.log"
	record_background
	record "  (waiting for it)" "$(($(date +%s) - t0))" "0" "$([ "$rc" = 0 ] && echo ok || echo "FAILED ($rc)")"
	if [ "$rc" != 0 ] && [ "${TEST_KEEP_GOING:-}" = 1 ]; then
		failed=1
		return 0
	fi
	return "$rc"
}

# wait_for FILE: wait until FILE exists (another lane writes it when it is
# done, with its exit status), then return that status.
wait_for() {
	local rc
	while [ ! -s "$1" ]; do sleep 2; done
	read -r rc <"$1"
	return "$rc"
}

# --- checks -----------------------------------------------------------------
check_gofmt() {
	local unformatted
	unformatted=$(git ls-files -z '*.go' | xargs -0 gofmt -l)
	[ -z "$unformatted" ] || { echo "not gofmt'ed:"; echo "$unformatted"; return 1; }
}

check_license_headers() {
	local missing
	license_header >"$logs/header"
	# One awk over every file: a file passes when its first 15 lines, after
	# a //go:build line and its blank line (gofmt keeps those on top), are
	# the header.
	missing=$(git ls-files -z '*.go' | xargs -0 awk -v hfile="$logs/header" '
		BEGIN { while ((getline l < hfile) > 0) h[++n] = l }
		FNR == 1 { if (NR > 1) report(); file = FILENAME; skip = ($0 ~ /^\/\/go:build /) ? 2 : 0; bad = 0 }
		FNR > skip && FNR <= skip + n && $0 != h[FNR - skip] { bad = 1 }
		FNR == skip + n { done = 1 }
		function report() { if (bad || !done) print file; done = 0 }
		END { if (NR > 0) report() }')
	[ -z "$missing" ] && return 0
	echo "these files do not start with the license header (license_header in hack/lib.sh):"
	echo "$missing" | sed 's/^/  /'
	return 1
}

check_tidy() {
	local m rc=0
	for m in "${all_modules[@]}"; do
		tidy_diff "$root/$m" || { echo "go.mod/go.sum of $m are not tidy: run (cd $m && go mod tidy)"; rc=1; }
	done
	return "$rc"
}

lint() {
	(cd "$1" && "$golangci_lint" run ./...)
}

# go test's own vet pass is off: golangci-lint's govet runs the same
# analyzers and more over every module, and go test's would recompute vet
# facts for all of k8s.io/* (about 110 CPU-seconds cold).
unit_test() {
	(cd "$1" && go test -race -vet=off -count=1 ./...)
}

# compile_e2e: compile every package of the e2e tests, race-built as
# test/e2e/run.sh builds them (go list -export compiles without linking; the
# run links), then tell the background lane, which starts the e2e suite once
# the servers are built too. It is the first race-built step: the k8s.io/*,
# controller-runtime and library packages it compiles are those every
# race-built test after it reuses.
compile_e2e() {
	local rc=0
	(cd test/e2e && go list -export -deps -test -race ./... >/dev/null) || rc=$?
	echo "$rc" >"$logs/e2e-compiled"
	return "$rc"
}

# The background lane: the servers' build, then (once the foreground has
# compiled the e2e tests) the e2e suite, then controller-runtime's own cache
# suite against crcache.New (hack/crsuite.sh: race-built, envtest on the same
# kube-apiserver and etcd), then examples/controller-runtime's manager on them
# (its test, which the coverage step ran and skipped without the servers:
# envtest takes them from TEST_ASSET_*), each run even if another fails.
# One after the other: run beside the e2e suite, the crsuite's race build
# and servers made the suite's timing-sensitive checks flake (tried on
# 2026-12-04: TestMetricsOverHTTP read a scrape between an event's counter
# and its gauge).
example_manager() {
	local bin=${TESTENV_BIN_DIR:-$root/.cache/testenv/bin}
	(cd examples/controller-runtime && TEST_ASSET_KUBE_APISERVER=$bin/kube-apiserver TEST_ASSET_ETCD=$bin/etcd \
		go test -race -vet=off -count=1 -v -run '^TestManager$' ./cmd)
}
server_lane() {
	local rc=0
	bg_step "build kube-apiserver and etcd (hack/testenv/build.sh)" hack/testenv/build.sh || rc=$?
	echo "$rc" >"$logs/servers-built"
	[ "$rc" = 0 ] || return "$rc"
	if ! bg_step "(the lane waiting for the e2e tests' compile)" wait_for "$logs/e2e-compiled"; then
		echo "the e2e tests did not compile: the e2e suite, crsuite and example were not run"
		return 1
	fi
	bg_step "e2e suite (test/e2e/run.sh)" test/e2e/run.sh || rc=$?
	bg_step "controller-runtime's cache suite (hack/crsuite.sh)" hack/crsuite.sh || rc=$?
	bg_step "examples/controller-runtime TestManager" example_manager || rc=$?
	return "$rc"
}

# The bench smoke starts its own kube-apiserver and etcd: it waits for the
# background lane to have built them.
bench_smoke() {
	wait_for "$logs/servers-built" || { echo "the servers did not build"; return 1; }
	hack/bench-scale.sh -smoke
}

# --- the suite --------------------------------------------------------------
echo "modules: ${all_modules[*]}"
background "servers, then e2e, controller-runtime's cache suite and examples/controller-runtime" server_lane
# The foreground runs at a lower priority than the background lane (started
# above, so it keeps the shell's): when both want the cores, the servers'
# build, the servers and the e2e suite's timing-sensitive checks get them
# first, and the foreground's compiles take what the lane, mostly waiting,
# leaves. It changes no step's CPU time, only who waits.
renice -n 5 -p $$ >/dev/null 2>&1 || true

step "gofmt" check_gofmt
step "license headers" check_license_headers
step "go mod tidy -diff (every module)" check_tidy
step "compile the e2e tests (race; go list -export)" compile_e2e
build_lint() { golangci_lint >"$logs/lint-path"; }
step "build golangci-lint (hack/tools)" build_lint
golangci_lint=$(cat "$logs/lint-path" 2>/dev/null || true)
# The modules whose tests exercise the library run once, with coverage
# (hack/coverage.sh: race-built, -coverpkg over the library, merged report);
# the others run plain.
mapfile -t covered_modules < <(hack/coverage.sh -list)
for m in "${unit_modules[@]}"; do
	[[ " ${covered_modules[*]} " == *" $m "* ]] && continue
	step "go test -race ($m)" unit_test "$m"
done
step "go test -race with coverage (${covered_modules[*]}; hack/coverage.sh)" hack/coverage.sh

# --- more steps go here, as
#   step "what it checks" command args...
# Race-built ones above the lint (the crsuite's race build runs in the
# background lane about when lint runs), steps that need the servers after a
# wait_for "$logs/servers-built" (as bench_smoke).
# ----------------------------------------------------------------------------

for m in "${lint_modules[@]}"; do
	step "golangci-lint ($m)" lint "$m"
done
step "hack/verify-codegen.sh" hack/verify-codegen.sh
step "API parity with client-go (hack/apiparity)" bash -c 'cd hack && go run ./apiparity -module-dir ..'
step "bench-scale smoke: N=300, every variant and 2 shards (hack/bench-scale.sh -smoke)" bench_smoke
if [ "$next" = 1 ]; then
	step "next lane: client-go $next_version (hack/next.sh)" hack/next.sh "$next_version"
fi

finish_background
exit "$failed"
