// Package atstart calls hugeheap.Advise when the program starts; import it
// for that side effect only, from a main package. It imports nothing but
// package hugeheap (itself only syscall and unsafe), so by Go's order of
// initialisation (sorted by import path, dependencies first) its init runs
// before the large package inits sorted after it: the JSON Schema library's
// meta-schemas, the AWS SDK's tables.
package atstart

import "github.com/agoradev/agora/internal/hugeheap"

func init() { hugeheap.Advise() }
