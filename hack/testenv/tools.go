//go:build tools

// Package tools pins the commands that build.sh compiles, so `go mod tidy`
// keeps every module they need in go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
