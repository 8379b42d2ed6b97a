package main

import (
	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/internal/compute/procbench"
)

// computeProcess is the measuring engine (internal/compute/procbench): no
// container, the worker binary as a process. Never a default.
const computeProcess = procbench.Name

// registerBenchmarkEngine adds --benchmark-engine, the one way to ask for
// --compute process.
func registerBenchmarkEngine(fs *flag.FlagSet, v *bool) {
	fs.BoolVar(v, "benchmark-engine", false, "allow --compute process: every dispatch runs as a plain, unisolated process of this host, for measuring agora only (docs/capacity.md)")
}

// checkMeasuringEngine refuses --compute process unless --benchmark-engine
// asks for it: it runs sub-agents with the operator's own rights.
func checkMeasuringEngine(compute string, benchmark bool, image string) error {
	switch {
	case compute == computeProcess && !benchmark:
		return usagef("--compute process runs every dispatch as a plain, unisolated process of this host, for measuring agora only (docs/capacity.md): add --benchmark-engine to ask for it")
	case benchmark && compute != computeProcess:
		return usagef("--benchmark-engine goes with --compute process only")
	case compute == computeProcess && image != "":
		return usagef("--compute process runs the agora-worker binary, not an image: drop --image")
	}
	return nil
}
