// +groupName=example.kubeinformers.io
// +groupGoName=Sample

// Package v1beta1 is the second version of the fixture group.
package v1beta1
