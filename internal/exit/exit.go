// Package exit says how a process ended: one Result that process
// supervision (internal/proc, the worker's runtime) and every compute
// engine (a container's main process) report, so callers read one shape
// and never tuples or magic numbers.
package exit

// Result is how a process — a runtime under the worker, or a container's
// main process — ended.
type Result struct {
	// ExitCode is the process's exit status, or 128+N when it was killed by
	// signal N (the shell convention, so 137 for SIGKILL, 143 for SIGTERM).
	// With a container's init, it is the init's, which mirrors its child's.
	// It is -1 when an engine has none because the process never ran (an ECS
	// task stopped before its container started); Err then says why.
	ExitCode int
	// Signal names the signal that ended the process, e.g. "SIGKILL"; empty
	// when it exited on its own.
	Signal string
	// OOMKilled reports that the kernel's OOM killer ended the process
	// because its container reached its memory limit. Only a container
	// engine can tell; internal/proc never sets it.
	OOMKilled bool
	// Err is what went wrong around the process rather than in it: the
	// context that stopped it (errors.Is works with context.Canceled,
	// context.DeadlineExceeded and a context's cause), output that could not
	// be copied, or an error an engine reported for the container itself
	// (not for the call), e.g. a failure to tear it down.
	Err error
}

// Successful reports whether the process exited 0 on its own, with nothing
// going wrong around it.
func (r Result) Successful() bool {
	return r.ExitCode == 0 && r.Signal == "" && !r.OOMKilled && r.Err == nil
}
