#!/usr/bin/env bash
# Runs golangci-lint (.golangci.yml) in every Go module of the repository,
# with the version pinned in hack/tools/go.mod, built once. hack/test.sh runs
# the same checks as steps of the suite. Extra arguments go to
# `golangci-lint run`, e.g. hack/lint.sh --fix
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
lint=$(golangci_lint)
rc=0
while read -r m; do
	has_go_files "$m" || continue
	echo "==> golangci-lint ($m)"
	(cd "$root/$m" && "$lint" run "$@" ./...) || rc=1
done < <(modules)
exit "$rc"
