/*
Copyright The kubeinformers Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package crsuite is the harness that runs controller-runtime's own
// pkg/cache suite against crcache.New: hack/crsuite.sh copies the suite's
// external test files (cache_suite_test.go, cache_test.go,
// informer_cache_test.go) from the module cache of the controller-runtime
// version go.mod requires, with cache.New rewritten to crcache.New, and runs
// them against hack/testenv's kube-apiserver and etcd. The copies are passed
// to go test as an overlay: they never enter the source tree.
//
// The package has no code. Its imports are those of the copied files, so
// that go.mod and go.sum hold what the suite builds with while `go mod tidy`
// sees only this file.
package crsuite

import (
	// The imports of controller-runtime's pkg/cache suite rewritten to
	// crcache.New (hack/crsuite.sh fails, naming the import, when a suite
	// imports one not listed here).
	_ "github.com/kubeinformers/informers/crcache"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/api/errors"
	_ "k8s.io/apimachinery/pkg/api/meta"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	_ "k8s.io/apimachinery/pkg/fields"
	_ "k8s.io/apimachinery/pkg/labels"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apimachinery/pkg/runtime/schema"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/client-go/tools/cache"
	_ "sigs.k8s.io/controller-runtime/pkg/cache"
	_ "sigs.k8s.io/controller-runtime/pkg/client"
	_ "sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	_ "sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/controller-runtime/pkg/log"
	_ "sigs.k8s.io/controller-runtime/pkg/log/zap"
	_ "sigs.k8s.io/controller-runtime/pkg/manager"
)
