// Package v1 has no +groupName: the group is the directory, "widgets".
package v1
