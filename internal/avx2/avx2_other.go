//go:build !amd64 || purego

package avx2

// Supported is false: there is no vector code here (avx2_amd64.go).
var Supported = false
