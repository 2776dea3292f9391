package v1

// +genclient
// +genclient:nonNamespaced

// CSIStorageCapacity tests the -ies plural and an initialism.
type CSIStorageCapacity struct{}
