#!/usr/bin/env bash
# Fails if the generated tree is not what the generator makes now: generates
# into a temporary directory and compares it with the checked-in files.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
generate "$tmp"

status=0
if ! diff <(generated_files "$root") <(generated_files "$tmp") >"$tmp.list"; then
	echo "generated files missing (>) or stale (<):"
	cat "$tmp.list"
	status=1
fi
rm -f "$tmp.list"
while read -r f; do
	if [ -f "$root/$f" ] && ! diff -u "$root/$f" "$tmp/$f"; then
		status=1
	fi
done < <(generated_files "$tmp")
if [ "$status" -ne 0 ]; then
	echo "generated code is out of date: run hack/update-codegen.sh" >&2
	exit 1
fi
echo "generated code is up to date ($(generated_files "$tmp" | wc -l) files)"
