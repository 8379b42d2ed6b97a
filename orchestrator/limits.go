package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/agoradev/agora/internal/fargate"
	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Maximums are this server's ceilings on what one task may ask for or
// hold. A request over one is refused with ErrInvalidRequest naming the
// field, the value, the maximum and the flag that sets it; a sub-agent
// whose round goes over one (partial_state, the task's record) ends the
// task failed. Zero fields take their defaults (WithDefaults).
type Maximums struct {
	// MemoryMB bounds resources.memory_mb (--max-memory-mb).
	MemoryMB int64
	// CPUs bounds resources.cpus (--max-cpus).
	CPUs float64
	// Pids bounds resources.pids (--max-pids).
	Pids int64
	// TimeoutSeconds bounds timeout_seconds, per round (--max-timeout).
	TimeoutSeconds int
	// Rounds bounds limits.max_rounds (--max-rounds).
	Rounds int
	// WaitSeconds bounds limits.max_wait_seconds (--max-wait).
	WaitSeconds int
	// InputBytes bounds the input JSON as sent (--max-input-kb).
	InputBytes int
	// PartialStateBytes bounds a round's partial_state, inline or by ref
	// (--max-partial-state-kb).
	PartialStateBytes int64
	// TaskBytes bounds a task's stored record: the request, every round,
	// question and answer (--max-task-kb).
	TaskBytes int
	// RetryAttempts bounds retry.attempts, a round's dispatches under its
	// retry policy (--max-retry-attempts).
	RetryAttempts int
	// EgressHosts bounds the entries of a task's egress allow-list
	// (--max-egress-hosts).
	EgressHosts int
	// AllowHostNetwork lets a task ask for network "host", which gives its
	// sub-agent the host's loopback (NATS, the API): off unless the
	// operator turns it on (--allow-host-network).
	AllowHostNetwork bool
	// FargateTaskSizes says this server's runners run their dispatches on
	// ECS Fargate: a task whose resources no Fargate task size holds is
	// refused at submit, naming the nearest size, instead of failing when
	// a runner claims it (--fargate-task-sizes; `agora serve` with a
	// Fargate runner sets it itself). The orchestrator cannot tell by
	// itself which runner claims a task.
	FargateTaskSizes bool
}

// DefaultMaximums are the maximums of a server that sets none; each is
// explained in docs/orchestrator.md#limits.
func DefaultMaximums() Maximums {
	return Maximums{
		MemoryMB: 16 << 10, // 16 GiB
		// Where the orchestrator does not know the runners' hosts; `agora
		// serve` with its own runner uses the host's cores.
		CPUs:           16,
		Pids:           4096,
		TimeoutSeconds: 24 * 60 * 60,      // 24 h per round
		Rounds:         100,               // rounds per task
		WaitSeconds:    30 * 24 * 60 * 60, // 30 days of waiting for answers
		InputBytes:     256 << 10,
		// The contract's cap on the whole sentinel: by default the
		// orchestrator refuses nothing the worker accepts; an operator may
		// lower it.
		PartialStateBytes: 1 << 20,
		// Under NATS's default max payload of 1 MiB, which a KV value and
		// the dispatch request built from the record must fit.
		TaskBytes:     768 << 10,
		RetryAttempts: 10,
		EgressHosts:   32,
	}
}

// WithDefaults returns m with every unset field at its default.
func (m Maximums) WithDefaults() Maximums {
	d := DefaultMaximums()
	if m.MemoryMB <= 0 {
		m.MemoryMB = d.MemoryMB
	}
	if m.CPUs <= 0 {
		m.CPUs = d.CPUs
	}
	if m.Pids <= 0 {
		m.Pids = d.Pids
	}
	if m.PartialStateBytes <= 0 {
		m.PartialStateBytes = d.PartialStateBytes
	}
	if m.TimeoutSeconds <= 0 {
		m.TimeoutSeconds = d.TimeoutSeconds
	}
	if m.Rounds <= 0 {
		m.Rounds = d.Rounds
	}
	if m.WaitSeconds <= 0 {
		m.WaitSeconds = d.WaitSeconds
	}
	if m.InputBytes <= 0 {
		m.InputBytes = d.InputBytes
	}
	if m.TaskBytes <= 0 {
		m.TaskBytes = d.TaskBytes
	}
	if m.RetryAttempts <= 0 {
		m.RetryAttempts = d.RetryAttempts
	}
	if m.EgressHosts <= 0 {
		m.EgressHosts = d.EgressHosts
	}
	return m
}

// Validate names every maximum the contract cannot honour.
func (m Maximums) Validate() error {
	var errs []error
	if m.TimeoutSeconds > schemas.MaxTimeoutSeconds {
		errs = append(errs, fmt.Errorf("--max-timeout %ds is over the contract's %ds (7 days)", m.TimeoutSeconds, schemas.MaxTimeoutSeconds))
	}
	if m.MemoryMB > schemas.MaxMemoryMB {
		errs = append(errs, fmt.Errorf("--max-memory-mb %d is over the contract's %d", m.MemoryMB, schemas.MaxMemoryMB))
	}
	if m.CPUs > schemas.MaxCPUs {
		errs = append(errs, fmt.Errorf("--max-cpus %g is over the contract's %d", m.CPUs, schemas.MaxCPUs))
	}
	if m.Pids > schemas.MaxPids {
		errs = append(errs, fmt.Errorf("--max-pids %d is over the contract's %d", m.Pids, schemas.MaxPids))
	}
	if m.Rounds > schemas.MaxRounds {
		errs = append(errs, fmt.Errorf("--max-rounds %d is over the contract's %d", m.Rounds, schemas.MaxRounds))
	}
	if m.EgressHosts > schemas.MaxEgressHosts {
		errs = append(errs, fmt.Errorf("--max-egress-hosts %d is over the contract's %d", m.EgressHosts, schemas.MaxEgressHosts))
	}
	if m.WaitSeconds > schemas.MaxWaitSeconds {
		errs = append(errs, fmt.Errorf("--max-wait %ds is over the contract's %ds (365 days)", m.WaitSeconds, schemas.MaxWaitSeconds))
	}
	if m.RetryAttempts > MaxRetryAttempts {
		errs = append(errs, fmt.Errorf("--max-retry-attempts %d is over the contract's %d", m.RetryAttempts, MaxRetryAttempts))
	}
	return errors.Join(errs...)
}

// MaxRetryAttempts is the contract's ceiling on retry.attempts
// (schemas/subagent.schema.json).
const MaxRetryAttempts = 100

// fieldSource names where a submitted value came from, for messages: ""
// for the request itself, else the registered sub-agent that gave it.
type fieldSource func(field string) string

// checkMaximums refuses a request over this server's maximums: resources,
// timeout, limits and input. It runs after the registry filled in the
// definition's defaults, so a definition over a maximum is refused too.
func (o *Orchestrator) checkMaximums(req *wire.SubmitRequest, from fieldSource) error {
	m := o.max
	over := func(field, value, max, flag string) error {
		return fmt.Errorf("%w: %s %s%s is over this server's maximum %s (%s)", wire.ErrInvalidRequest, field, value, from(field), max, flag)
	}
	below := func(field string, value int64, rule string) error {
		return fmt.Errorf("%w: %s %d%s: %s", wire.ErrInvalidRequest, field, value, from(field), rule)
	}
	if r := req.Resources; r != nil {
		switch {
		case r.MemoryMB < 0:
			return below("resources.memory_mb", r.MemoryMB, "want at least 6 (MiB)")
		case r.MemoryMB > m.MemoryMB:
			return over("resources.memory_mb", i64(r.MemoryMB), i64(m.MemoryMB), "--max-memory-mb")
		case r.CPUs < 0:
			return fmt.Errorf("%w: resources.cpus %g%s: want more than 0", wire.ErrInvalidRequest, r.CPUs, from("resources.cpus"))
		case r.CPUs > m.CPUs:
			return over("resources.cpus", f64(r.CPUs), f64(m.CPUs), "--max-cpus")
		case r.Pids < 0:
			return below("resources.pids", r.Pids, "want at least 16")
		case r.Pids > m.Pids:
			return over("resources.pids", i64(r.Pids), i64(m.Pids), "--max-pids")
		}
	}
	if err := checkFargateSize(req.Resources, m); err != nil {
		return fmt.Errorf("%w: resources%s: %v", wire.ErrInvalidRequest, from("resources"), err)
	}
	if req.Network == schemas.NetworkHost && !m.AllowHostNetwork {
		return fmt.Errorf("%w: network %q%s is not allowed on this server: it would give the sub-agent the host's loopback (NATS, the API); an operator allows it with --allow-host-network",
			wire.ErrInvalidRequest, req.Network, from("network"))
	}
	if n := len(req.Egress); n > m.EgressHosts {
		return over("egress", fmt.Sprintf("(%d hosts)", n), strconv.Itoa(m.EgressHosts), "--max-egress-hosts")
	}
	switch {
	case req.TimeoutSeconds < 0:
		return below("timeout_seconds", int64(req.TimeoutSeconds), "want at least 1 (0 or none: the runner's default)")
	case req.TimeoutSeconds > m.TimeoutSeconds:
		return over("timeout_seconds", strconv.Itoa(req.TimeoutSeconds), strconv.Itoa(m.TimeoutSeconds), "--max-timeout")
	case req.Limits.MaxRounds < 0:
		return below("limits.max_rounds", int64(req.Limits.MaxRounds), fmt.Sprintf("want at least 1 (0 or none: the default %d)", DefaultMaxRounds))
	case req.Limits.MaxRounds > m.Rounds:
		return over("limits.max_rounds", strconv.Itoa(req.Limits.MaxRounds), strconv.Itoa(m.Rounds), "--max-rounds")
	case req.Limits.MaxWaitSeconds < 0:
		return below("limits.max_wait_seconds", int64(req.Limits.MaxWaitSeconds), "want at least 1 (0 or none: the default 7 days)")
	case req.Limits.MaxWaitSeconds > m.WaitSeconds:
		return over("limits.max_wait_seconds", strconv.Itoa(req.Limits.MaxWaitSeconds), strconv.Itoa(m.WaitSeconds), "--max-wait")
	case req.Retry != nil:
		if err := req.Retry.Check(m.RetryAttempts); err != nil {
			return fmt.Errorf("%w: %v%s", wire.ErrInvalidRequest, err, from("retry"))
		}
	}
	switch {
	case len(req.Input) > m.InputBytes:
		return fmt.Errorf("%w: input is %d bytes, over this server's maximum %d (--max-input-kb %d); pass large data through a capability bundle or object storage instead",
			wire.ErrInvalidRequest, len(req.Input), m.InputBytes, m.InputBytes>>10)
	}
	return nil
}

// checkFargateSize refuses, when the runners are on Fargate
// (Maximums.FargateTaskSizes), resources no Fargate task size holds, with
// the runner's own check (internal/fargate): what the task leaves out is
// the runner's default, checked when it claims the dispatch.
func checkFargateSize(r *schemas.Resources, m Maximums) error {
	if !m.FargateTaskSizes || r == nil || (r.CPUs <= 0 && r.MemoryMB <= 0) {
		return nil
	}
	// Within the maximums, checked before: the conversions fit.
	nano, _ := units.NanoCPUs(r.CPUs)
	mem, _ := units.MiB(r.MemoryMB)
	_, err := fargate.FitResources(nano, mem)
	return err
}

// fillDefaults puts the default of a limit into a request that leaves it
// empty, when the default is over what this server allows: a task then
// gets the server's maximum, not more.
func (o *Orchestrator) fillDefaults(req *wire.SubmitRequest) {
	if req.Limits.MaxRounds == 0 && DefaultMaxRounds > o.max.Rounds {
		req.Limits.MaxRounds = o.max.Rounds
	}
	if req.Limits.MaxWaitSeconds == 0 && DefaultMaxWait.Seconds() > float64(o.max.WaitSeconds) {
		req.Limits.MaxWaitSeconds = o.max.WaitSeconds
	}
	if req.TimeoutSeconds == 0 && o.max.TimeoutSeconds < defaultTimeoutSeconds {
		req.TimeoutSeconds = o.max.TimeoutSeconds
	}
}

// defaultTimeoutSeconds is the worker's and the runner's default dispatch
// timeout, 1 hour.
const defaultTimeoutSeconds = 60 * 60

// checkRecord refuses to store a task whose record is over
// Maximums.TaskBytes: an answer, a follow-up or a request that would make
// it so is ErrInvalidRequest.
func (o *Orchestrator) checkRecord(t *wire.Task, what string) error {
	size, err := recordSize(t)
	if err != nil {
		return err
	}
	if size > o.max.TaskBytes {
		return fmt.Errorf("%w: %s would make task %s's record %d bytes, over this server's maximum %d (--max-task-kb %d)",
			wire.ErrInvalidRequest, what, t.ID, size, o.max.TaskBytes, o.max.TaskBytes>>10)
	}
	return nil
}

func recordSize(t *wire.Task) (int, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return 0, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return len(data), nil
}

// taskEnvelope is the room a task's record leaves under the NATS max
// payload for what a dispatch request adds to it (spec, resume).
const taskEnvelope = 64 << 10

// Bounds of what an over-limit question keeps in the record.
const keptQuestionBytes = 1 << 10

// questionOverLimits checks the question round r just asked against the
// maximums: its partial_state (inline or by ref) and the task's record
// with it. Over one, the question is cut down to what the record can keep
// (its first KiB; no options, context or partial_state) and the outcome
// that fails the task is returned; nil when within the limits. A sub-agent
// cannot make a record the store refuses, which would hold the event
// pipeline back.
func (o *Orchestrator) questionOverLimits(t *wire.Task, r *wire.Round) *wire.Outcome {
	q := r.Question
	if q == nil {
		return nil
	}
	var out *wire.Outcome
	size := int64(len(q.PartialState))
	if q.PartialStateRef != nil {
		size = q.PartialStateRef.Size
	}
	if size > o.max.PartialStateBytes {
		out = &wire.Outcome{Reason: "max_partial_state", Detail: fmt.Sprintf("round %d left a partial_state of %d bytes, over this server's maximum %d (--max-partial-state-kb %d)",
			r.N, size, o.max.PartialStateBytes, o.max.PartialStateBytes>>10)}
	} else if n, err := recordSize(t); err == nil && n > o.max.TaskBytes {
		out = &wire.Outcome{Reason: "max_task_size", Detail: fmt.Sprintf("round %d asked a question that makes the task's record %d bytes, over this server's maximum %d (--max-task-kb %d)",
			r.N, n, o.max.TaskBytes, o.max.TaskBytes>>10)}
	}
	if out == nil {
		return nil
	}
	kept := *q
	kept.Question = cut(kept.Question, keptQuestionBytes)
	kept.Options, kept.Context, kept.Default, kept.PartialState, kept.PartialStateRef = nil, "", nil, nil, nil
	r.Question = &kept
	return out
}

// cut is s cut to at most n bytes on a rune boundary, marked with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func i64(v int64) string   { return strconv.FormatInt(v, 10) }
func f64(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
