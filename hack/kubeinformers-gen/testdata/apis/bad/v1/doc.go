// +groupName=bad.kubeinformers.io
package v1
