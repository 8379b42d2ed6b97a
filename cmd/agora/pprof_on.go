//go:build agorapprof

package main

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
)

// startProfiling serves net/http/pprof at $AGORA_PPROF_LISTEN (a loopback
// address): only in a binary built with -tags agorapprof, which
// `make bench-api` builds to profile serve under load (docs/capacity.md).
// The agora people run has no such listener.
func startProfiling() {
	addr := os.Getenv("AGORA_PPROF_LISTEN")
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			fmt.Fprintln(os.Stderr, "pprof listener:", err)
		}
	}()
}
