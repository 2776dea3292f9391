#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries used by test/e2e from the Go
# module proxy (no prebuilt binaries are downloaded).
#
#   hack/testenv/build.sh            # build into <repo>/.cache/testenv/bin if stale
#   TESTENV_BIN_DIR=/x build.sh      # build elsewhere
#   TESTENV_FORCE=1 build.sh         # rebuild even if the stamp matches
#
# A version stamp (bin/.stamp) records a hash of everything that decides the
# output (go.mod, go.sum, etcd/main.go, this script, the Go version); when it
# matches and both binaries exist, the build is skipped.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${TESTENV_BIN_DIR:-$repo/.cache/testenv/bin}"
mkdir -p "$bin"

# The go on PATH builds everything; nothing assumes where Go is installed.
command -v go >/dev/null || { echo "testenv: no go on PATH" >&2; exit 1; }

# The version and its build date come from go.mod (k8s.io/kubernetes) and the
# module proxy's time for that version, so a bump is a go.mod edit only.
read -r KUBE_VERSION KUBE_BUILD_DATE < <(cd "$here" && go list -m -f '{{.Version}} {{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
KUBE_MINOR=$(echo "$KUBE_VERSION" | cut -d. -f2)
# The published module has no VCS metadata; the commit is recorded as unknown.
KUBE_COMMIT="${KUBE_COMMIT:-0000000000000000000000000000000000000000}"

# The binaries are built with the go command's default flags (no -trimpath,
# cgo as the environment has it), the flags golangci-lint's package loading,
# hack/apiparity and the generator compile k8s.io/api, apimachinery and
# client-go with: on a cold cache hack/test.sh compiles those once for all of
# them, not once per flag set (about 400 CPU-seconds on 2 cores).
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

stamp_of() {
  {
    echo "kube=$KUBE_VERSION commit=$KUBE_COMMIT date=$KUBE_BUILD_DATE"
    go version
    cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "$here/build.sh"
  } | sha256sum | cut -d' ' -f1
}
want="$(stamp_of)"
if [[ -z "${TESTENV_FORCE:-}" && -x "$bin/kube-apiserver" && -x "$bin/etcd" && -f "$bin/.stamp" \
      && "$(cat "$bin/.stamp")" == "$want" ]]; then
  echo "testenv: binaries up to date in $bin ($KUBE_VERSION)"
  exit 0
fi
rm -f "$bin/.stamp"

cd "$here"
pkg_ver=k8s.io/component-base/version
cg_ver=k8s.io/client-go/pkg/version
ldflags="-s -w"
for p in "$pkg_ver" "$cg_ver"; do
  ldflags+=" -X $p.gitVersion=$KUBE_VERSION"
  ldflags+=" -X $p.gitMajor=1 -X $p.gitMinor=$KUBE_MINOR"
  ldflags+=" -X $p.gitCommit=$KUBE_COMMIT"
  ldflags+=" -X $p.gitTreeState=clean"
  ldflags+=" -X $p.buildDate=$KUBE_BUILD_DATE"
done

start=$(date +%s)
echo "testenv: building etcd"
go build -ldflags "-s -w" -o "$bin/etcd.tmp" ./etcd
mv "$bin/etcd.tmp" "$bin/etcd"

echo "testenv: building kube-apiserver $KUBE_VERSION (cold: see hack/testenv/README.md)"
go build -ldflags "$ldflags" -o "$bin/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$bin/kube-apiserver.tmp" "$bin/kube-apiserver"

"$bin/kube-apiserver" --version
echo "$want" > "$bin/.stamp"
echo "testenv: built in $(( $(date +%s) - start ))s into $bin"
