package v1beta1

// +genclient

// IngressClass is namespaced here only to test the -es plural.
type IngressClass struct{}
