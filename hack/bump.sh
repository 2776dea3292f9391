#!/usr/bin/env bash
# Moves this repository, in place, to another Kubernetes release: for the day
# a client-go version is tagged.
#
#   hack/bump.sh [-skip MODULE]... VERSION      e.g. hack/bump.sh v0.38.0
#
#   1. every k8s.io staging module (k8s.io/api, apimachinery, client-go, …)
#      in every go.mod goes to VERSION, and k8s.io/kubernetes (hack/testenv)
#      to the matching v1 version with its staging modules replaced by VERSION;
#   2. `go mod tidy` in every module, with the workarounds for module
#      versions the module proxy refuses (proxy_gaps in hack/lib.sh; each is
#      printed, and used only when the real version is refused);
#   3. the informer tree is regenerated (hack/update-codegen.sh) and the
#      modules tidied again.
#
# Every go command runs with the Go toolchain that k8s.io/client-go@VERSION's
# go.mod asks for (k8s_toolchain in hack/lib.sh; NEXT_GOTOOLCHAIN overrides),
# fetched by the go command through GOTOOLCHAIN. -skip MODULE (a directory
# relative to the repository, e.g. hack/testenv) bumps that module's go.mod
# but does not tidy it: hack/next.sh skips the e2e server's module unless it
# runs the e2e suite. go.mod's go line follows the dependencies' (tidy raises
# it; a move to an older minor first lowers it to client-go's at that
# release, downgrade_gomods in hack/lib.sh). hack/next.sh runs this script in
# a copy of the repository and then checks the copy: it is this script's dry
# run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	echo "usage: hack/bump.sh [-skip MODULE]... VERSION   (a k8s.io/client-go version, e.g. v0.38.0)" >&2
	exit 2
}
skip=()
while [ $# -gt 0 ]; do
	case $1 in
	-skip) [ $# -ge 2 ] || usage; skip+=("${2%/}"); shift 2 ;;
	-h | -help | --help) usage ;;
	-*) echo "bump: unknown flag $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# = 1 ] || usage
version=$1
k8s_check_version "$version" || usage
command -v go >/dev/null || { echo "bump: no go on PATH" >&2; exit 1; }

# In seconds: a VERSION the proxy lacks, or a toolchain it cannot serve.
tc=$(k8s_toolchain "$version")
export GOTOOLCHAIN=$tc
echo "bump: Go toolchain $tc (GOTOOLCHAIN) for k8s.io/client-go@$version"

old=$(gomod_require_version "$root/go.mod" k8s.io/client-go)
bump_gomods "$version"
if [ "$(k8s_minor "$version")" -lt "$(k8s_minor "$old")" ]; then
	# Down a minor (the other lane on the previous release).
	downgrade_gomods "$(gomod_go_version "$(proxy_gomod "k8s.io/client-go@$version")")"
fi

mods=()
while read -r m; do
	if [[ " ${skip[*]} " == *" $m "* ]]; then
		echo "bump: $m/go.mod bumped but not tidied (-skip $m)"
		continue
	fi
	mods+=("$m")
done < <(modules)
for m in "${mods[@]}"; do
	tidy_module "$root/$m"
done

"$root/hack/update-codegen.sh"
# Regeneration can add or drop imports (a new group, a removed version).
for m in "${mods[@]}"; do
	tidy_module "$root/$m"
done
# A go line the bump raised (go 1.27.0) names the toolchain the bump used, so
# that an older go fetches that one (use_repo_toolchain in hack/lib.sh makes
# the scripts work under GOTOOLCHAIN=local too).
set_toolchain_lines "$tc"

echo "bump: $root is at k8s.io/client-go $version (Go toolchain $tc)"
# Prose, tests and scripts that name the old release by its number.
if [ "$old" != "$version" ] && git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	left=$(git -C "$root" grep -l -F -e "$old" -e "$(kube_version "$old")" -- ':!*go.sum' || true)
	if [ -n "$left" ]; then
		echo "bump: these files still name $old or $(kube_version "$old"); review them:"
		echo "  ${left//$'\n'/$'\n'  }"
	fi
fi
