package v1

// +genclient
// +genclient:nonNamespacd

// Typo carries a misspelt tag, which must be an error.
type Typo struct{}
