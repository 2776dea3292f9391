#!/usr/bin/env bash
# Fails if the generated tree is not what the generator makes now: generates
# into a temporary directory and compares it with the checked-in files; the
# same for examples/crd (hack/update-examples-crd.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tmp=$(mktemp -d)
crd=$(mktemp -d)
trap 'rm -rf "$tmp" "$crd"' EXIT
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

# examples/crd: regenerated in a copy holding only what its generators
# read (the module files and the API types), then compared.
mkdir -p "$crd/examples/crd"
cp "$root/go.mod" "$root/go.sum" "$crd/"
cp -r "$root/examples/crd/apis" "$crd/examples/crd/"
"$root/hack/update-examples-crd.sh" "$crd" >/dev/null
for d in apis client; do
	if ! diff -ru "$root/examples/crd/$d" "$crd/examples/crd/$d"; then
		echo "examples/crd/$d is out of date"
		status=1
	fi
done
if [ "$status" -ne 0 ]; then
	echo "generated code is out of date: run hack/update-codegen.sh" >&2
	exit 1
fi
echo "generated code is up to date ($(generated_files "$tmp" | wc -l) files, and examples/crd)"
