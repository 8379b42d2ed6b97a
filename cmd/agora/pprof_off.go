//go:build !agorapprof

package main

// startProfiling does nothing in the agora people run; a binary built with
// -tags agorapprof serves net/http/pprof (pprof_on.go).
func startProfiling() {}
