#!/usr/bin/env bash
# Statement coverage of the library's own code (the root package, gensupport,
# internal/... and sharding) by every test that exercises it.
#
# Most behaviour tests of the root package live in the test module
# (test/conformance, test/clientgo), so `go test -cover` at the root counts
# only the root module's own tests and reports a figure that means little.
# This script runs the tests of the root module and of every module that
# builds against it through a replace directive (found at run time), race-built
# as hack/test.sh runs them (so the k8s.io/* packages come from the same build
# cache), with -coverpkg set to the library's packages; each test binary writes
# its counters to a GOCOVERDIR-style directory (-test.gocoverdir), and
# `go tool covdata` merges them. It prints, for every hand-written file of
# those packages (generated files, which carry "$generated_line", are left
# out), its statements and the share covered by each module's tests and by all
# of them together; then a line per package and the total.
#
# test/e2e is skipped, and the output says so: it needs a kube-apiserver and
# etcd (test/e2e/run.sh). So is bench/scale, whose tests exercise only the
# harness (see skip below). Coverage is reported, not enforced: no threshold
# fails the script; a failing test does.
#
#   hack/coverage.sh                 the table
#   hack/coverage.sh -o cover.out    also the merged profile, for
#                                    go tool cover -html=cover.out (at the root)
#   hack/coverage.sh -list           only the modules whose tests it runs
#                                    (hack/test.sh runs those here only)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$root"

out="" list=""
while [ $# -gt 0 ]; do
	case "$1" in
	-list)
		list=1
		shift
		;;
	-o)
		[ $# -ge 2 ] || { echo "coverage.sh: -o needs a file name" >&2; exit 2; }
		out=$(realpath -m "$2")
		shift 2
		;;
	*)
		echo "usage: hack/coverage.sh [-list] [-o merged-profile]" >&2
		exit 2
		;;
	esac
done

module=$(go list -m)
coverpkg="$module,$module/internal/...,$module/sharding,$module/gensupport,$module/dynamicinformer,$module/metadatainformer"

# Modules left out, with the reason printed.
declare -A skip=(
	[test/e2e]="needs a kube-apiserver and etcd; run test/e2e/run.sh (hack/test.sh does)"
	[bench/scale]="a benchmark harness: its tests check its own flags and reports, not the library"
	[crcache/crsuite]="its only tests are controller-runtime's cache suite, copied in at test time, which needs a kube-apiserver and etcd; run hack/crsuite.sh (hack/test.sh does)"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The modules whose tests can exercise the library: the root module, and each
# module whose go.mod replaces it with this checkout.
covered_modules=()
while read -r m; do
	if [ "$m" != . ]; then
		dir=$(cd "$m" && go list -m -f '{{with .Replace}}{{.Dir}}{{end}}' "$module" 2>/dev/null) || dir=""
		if [ -z "$dir" ] || [ "$(cd "$m" && realpath -m "$dir")" != "$root" ]; then
			continue
		fi
	fi
	if [ -n "${skip[$m]:-}" ]; then
		[ -n "$list" ] || echo "skipped $m: ${skip[$m]}"
		continue
	fi
	covered_modules+=("$m")
done < <(modules)
if [ -n "$list" ]; then
	printf '%s\n' "${covered_modules[@]}"
	exit 0
fi

echo "coverpkg: $coverpkg"
dirs=() profiles=()
for m in "${covered_modules[@]}"; do
	name=${m//\//_}
	[ "$m" != . ] || name=root
	d="$tmp/counters/$name"
	mkdir -p "$d"
	dirs+=("$d")
	echo "==> go test -race -coverpkg ($m)"
	# go test's vet is off as in hack/test.sh: golangci-lint runs govet.
	if ! (cd "$m" && go test -race -vet=off -count=1 -coverpkg="$coverpkg" ./... -args -test.gocoverdir="$d") >"$tmp/test.log" 2>&1; then
		cat "$tmp/test.log"
		echo "coverage.sh: the tests of $m failed" >&2
		exit 1
	fi
	echo "    $(grep -c '^ok' "$tmp/test.log" || true) packages passed"
	go tool covdata textfmt -i="$d" -o "$tmp/$name.out"
	profiles+=("$tmp/$name.out")
done

merged_dirs=$(IFS=,; echo "${dirs[*]}")
go tool covdata textfmt -i="$merged_dirs" -o "$tmp/merged.out"
if [ -n "$out" ]; then
	cp "$tmp/merged.out" "$out"
fi

generated_files "$root" >"$tmp/generated"

echo
echo "Statements covered by the tests of each module, and by all of them (generated files left out):"

# The table. Every profile line is FILE:BLOCK STATEMENTS COUNT; a block may
# appear once per test binary, so counts are summed per block first. The
# statements of a file are those of the merged profile; a module whose tests
# never load a package counts none of its statements as covered.
headers=()
for m in "${covered_modules[@]}"; do
	headers+=("${m/#./root}")
done
awk -v prefix="$module/" -v headers="${headers[*]}" '
	# Arguments: the generated files, then one profile per module, then the
	# merged profile.
	BEGIN { for (i = 1; i < ARGC; i++) argn[ARGV[i]] = i }
	FILENAME == ARGV[1] { generated[$0] = 1; next }
	/^mode:/ { next }
	{
		split($1, loc, ":")
		f = loc[1]
		if (index(f, prefix) == 1) f = substr(f, length(prefix) + 1)
		if (f in generated) next
		key = f SUBSEP loc[2]
		src = argn[FILENAME] - 1 # a column: each module, then all
		stmts[key] = $2
		count[src, key] += $3
		files[f] = 1
	}
	END {
		n = split(headers, head, " ")
		head[n + 1] = "all"
		for (key in stmts) {
			split(key, k, SUBSEP)
			f = k[1]
			pkg = f
			if (!sub("/[^/]*$", "", pkg)) pkg = "."
			total[f] += stmts[key]
			ptotal[pkg] += stmts[key]
			gtotal += stmts[key]
			pkgs[pkg] = 1
			for (s = 1; s <= n + 1; s++) if (count[s, key] > 0) {
				cov[s, f] += stmts[key]
				pcov[s, pkg] += stmts[key]
				gcov[s] += stmts[key]
			}
		}
		width = 44
		for (s = 1; s <= n + 1; s++) w[s] = length(head[s]) > 7 ? length(head[s]) + 1 : 8
		line = sprintf("%-" width "s %6s", "hand-written file", "stmts")
		for (s = 1; s <= n + 1; s++) line = line sprintf(" %" w[s] "s", head[s])
		print line
		nf = 0
		for (f in files) if (f in total) list[++nf] = f
		# Sort: files of the root package first, then by path.
		for (i = 2; i <= nf; i++) for (j = i; j > 1 && less(list[j], list[j - 1]); j--) {
			t = list[j]; list[j] = list[j - 1]; list[j - 1] = t
		}
		for (i = 1; i <= nf; i++) row(list[i], total[list[i]], cov, list[i])
		print ""
		np = 0
		for (p in pkgs) plist[++np] = p
		for (i = 2; i <= np; i++) for (j = i; j > 1 && plist[j] < plist[j - 1]; j--) {
			t = plist[j]; plist[j] = plist[j - 1]; plist[j - 1] = t
		}
		for (i = 1; i <= np; i++) {
			label = plist[i] == "." ? "root package" : "package " plist[i]
			row(label, ptotal[plist[i]], pcov, plist[i])
		}
		for (s = 1; s <= n + 1; s++) gc[s, "total"] = gcov[s]
		row("total (hand-written)", gtotal, gc, "total")
	}
	function less(a, b,   ad, bd) {
		ad = index(a, "/") > 0; bd = index(b, "/") > 0
		if (ad != bd) return bd
		return a < b
	}
	function row(label, st, c, k,   s, line) {
		line = sprintf("%-" width "s %6d", label, st)
		for (s = 1; s <= n + 1; s++) line = line sprintf(" %" (w[s] - 1) ".1f%%", st ? 100 * c[s, k] / st : 0)
		print line
	}
' "$tmp/generated" "${profiles[@]}" "$tmp/merged.out"
if [ -n "$out" ]; then
	echo "merged profile: $out (per function: go tool cover -func=$out; annotated source: go tool cover -html=$out)"
else
	echo "which statements: hack/coverage.sh -o cover.out, then go tool cover -html=cover.out"
fi
