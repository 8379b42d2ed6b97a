//go:build !linux || !(amd64 || arm64)

package hugeheap

// Advise does nothing off 64-bit Linux.
func Advise() {}
