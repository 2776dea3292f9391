#!/usr/bin/env bash
# Runs the hot-path benchmarks (this library and client-go in one run) and
# writes the benchstat comparison into BENCHMARKS.md, between the lines
#   <!-- bench.sh:begin -->  and  <!-- bench.sh:end -->
# Everything outside those markers (the prose, other sections) is left as it
# is. Usage: hack/bench.sh [count]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
count=${1:-10}
doc="$root/BENCHMARKS.md"
begin='<!-- bench.sh:begin -->'
end='<!-- bench.sh:end -->'
if [ "$(grep -cxF -e "$begin" -e "$end" "$doc")" != 2 ]; then
	echo "bench.sh: $doc needs exactly one '$begin' line and one '$end' line after it" >&2
	exit 1
fi

raw=$(mktemp)
block=$(mktemp)
trap 'rm -f "$raw" "$block" "$doc.tmp"' EXIT
(cd "$root" && go test -run '^$' -bench 'BenchmarkPods' -benchmem -count "$count" -cpu 1,8 . | tee "$raw")
table=$(cd "$root/hack" && go tool benchstat -col /impl "$raw")

cat >"$block" <<MD
Measured $(date -u +%Y-%m-%d) on $(nproc) cores, $(go env GOVERSION), $count runs each:

\`\`\`
$table
\`\`\`
MD

# Keep the marker lines, replace what is between them.
awk -v begin="$begin" -v end="$end" -v block="$block" '
	$0 == begin { print; while ((getline line < block) > 0) print line; skip = 1; next }
	$0 == end   { skip = 0 }
	!skip
' "$doc" >"$doc.tmp"
mv "$doc.tmp" "$doc"
echo "updated the hot-path table in $doc"
