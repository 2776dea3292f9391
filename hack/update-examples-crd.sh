#!/usr/bin/env bash
# Regenerates the code of examples/crd the way a user of this library does:
# deepcopy, the clientset and the listers with k8s.io/code-generator's
# deepcopy-gen, client-gen and lister-gen (built from the tool module
# hack/codegen, so the library never requires code-generator), and the
# informers with our cmd/kubeinformers-gen, given informer-gen's flags.
#
#   hack/update-examples-crd.sh [DIR]
#
# DIR is a copy of the repository to regenerate in (default: this one);
# hack/verify-codegen.sh passes a temporary copy and compares.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dest=$(cd "${1:-$root}" && pwd)
pkg=github.com/kubeinformers/informers/examples/crd
header="$root/hack/boilerplate.go.txt"
apis=("$pkg/apis/gadgets/v1" "$pkg/apis/gadgets/v1alpha1")

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root/hack/codegen" && go build -o "$bin/" \
	k8s.io/code-generator/cmd/deepcopy-gen k8s.io/code-generator/cmd/client-gen k8s.io/code-generator/cmd/lister-gen)
(cd "$root/cmd/kubeinformers-gen" && go build -o "$bin/" .)

cd "$dest"
rm -rf examples/crd/client
find examples/crd/apis -name zz_generated.deepcopy.go -delete

"$bin/deepcopy-gen" --go-header-file "$header" --output-file zz_generated.deepcopy.go "${apis[@]}"
# deepcopy-gen still writes the pre-Go 1.17 "// +build" line under
# "//go:build"; drop it, so that the license header follows as in every file.
find examples/crd/apis -name zz_generated.deepcopy.go -exec sed -i '2{/^\/\/ +build /d}' {} +
"$bin/client-gen" --go-header-file "$header" \
	--output-dir examples/crd/client/clientset --output-pkg "$pkg/client/clientset" \
	--clientset-name versioned --input-base "$pkg/apis" --input gadgets/v1 --input gadgets/v1alpha1
"$bin/lister-gen" --go-header-file "$header" \
	--output-dir examples/crd/client/listers --output-pkg "$pkg/client/listers" "${apis[@]}"
# The one step that differs from kube_codegen.sh: kubeinformers-gen where it
# runs informer-gen, with the same flags.
"$bin/kubeinformers-gen" --go-header-file "$header" \
	--output-dir examples/crd/client/informers --output-pkg "$pkg/client/informers" \
	--versioned-clientset-package "$pkg/client/clientset/versioned" \
	--listers-package "$pkg/client/listers" "${apis[@]}"
echo "regenerated examples/crd in $dest"
