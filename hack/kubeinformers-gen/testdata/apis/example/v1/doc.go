// +k8s:deepcopy-gen=package

// +groupName=example.kubeinformers.io
// +groupGoName=Sample

// Package v1 is a fixture API group for the generator's golden tests.
package v1
