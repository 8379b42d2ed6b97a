package schemas

// The contract's maximums: the "maximum" of each field in the JSON Schemas
// (dispatch-spec, dispatch-request, subagent). TestMaximumsMatchSchemas
// keeps these constants in step with them. A server's own maximums
// (`agora serve --max-…`) may only be lower.
const (
	// MaxTimeoutSeconds bounds timeout_seconds: 7 days.
	MaxTimeoutSeconds = 604800
	// MaxCPUs bounds resources.cpus.
	MaxCPUs = 256
	// MaxMemoryMB bounds resources.memory_mb: 16 TiB, so that the limit in
	// bytes always fits an int64.
	MaxMemoryMB = 16 << 20
	// MaxPids bounds resources.pids: Linux's largest pid_max (2^22).
	MaxPids = 1 << 22
	// MaxRounds bounds a sub-agent file's limits.max_rounds.
	MaxRounds = 1000
	// MaxWaitSeconds bounds a sub-agent file's limits.max_wait_seconds: 365 days.
	MaxWaitSeconds = 365 * 24 * 60 * 60
)
