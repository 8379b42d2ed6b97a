package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// limitsStack is the real orchestrator (embedded NATS, file storage, a
// registry) with no runner: rounds stay queued unless the test publishes
// their events.
type limitsStack struct {
	*logsStack
	reg *registry.Registry
}

func newLimitsStack(t *testing.T, max Maximums) *limitsStack {
	t.Helper()
	ctx := t.Context()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	reg, err := registry.Open(ctx, b, store)
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Bus: b, Store: store, Registry: reg, Max: max, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	return &limitsStack{logsStack: &logsStack{bus: b, store: store, orch: o}, reg: reg}
}

// inputOf is a JSON object of exactly n bytes.
func inputOf(n int) json.RawMessage {
	const frame = len(`{"x":""}`)
	return json.RawMessage(`{"x":"` + strings.Repeat("a", n-frame) + `"}`)
}

// TestSubmitMaximums holds every limit of a submitted task under, at and
// over this server's maximum, and at absurd values that used to overflow
// (a memory_mb of 2^44 shifted into bytes is 0: no limit at all).
func TestSubmitMaximums(t *testing.T) {
	t.Parallel()
	def := newLimitsStack(t, Maximums{})
	custom := newLimitsStack(t, Maximums{MemoryMB: 512, CPUs: 1.5, Pids: 64, TimeoutSeconds: 60, Rounds: 3,
		WaitSeconds: 3600, InputBytes: 1024, TaskBytes: 4 << 10})
	res := func(cpus float64, mb, pids int64) *schemas.Resources {
		return &schemas.Resources{CPUs: cpus, MemoryMB: mb, Pids: pids}
	}
	tests := []struct {
		name  string
		stack *limitsStack
		req   wire.SubmitRequest
		want  string // "" accepted; else the error says this
	}{
		{name: "memory under", req: wire.SubmitRequest{Resources: res(0, 1024, 0)}},
		{name: "memory at", req: wire.SubmitRequest{Resources: res(0, 16384, 0)}},
		{name: "memory over", req: wire.SubmitRequest{Resources: res(0, 16385, 0)},
			want: "resources.memory_mb 16385 is over this server's maximum 16384 (--max-memory-mb)"},
		{name: "memory 2^44 MiB (wraps to 0 bytes)", req: wire.SubmitRequest{Resources: res(0, 17592186044416, 0)},
			want: "resources.memory_mb 17592186044416 is over this server's maximum 16384 (--max-memory-mb)"},
		{name: "memory MaxInt64", req: wire.SubmitRequest{Resources: res(0, math.MaxInt64, 0)},
			want: "resources.memory_mb 9223372036854775807 is over this server's maximum 16384 (--max-memory-mb)"},
		{name: "memory negative", req: wire.SubmitRequest{Resources: res(0, -1, 0)}, want: "resources.memory_mb -1: want at least 6"},
		{name: "cpus at", req: wire.SubmitRequest{Resources: res(16, 0, 0)}},
		{name: "cpus over", req: wire.SubmitRequest{Resources: res(16.5, 0, 0)},
			want: "resources.cpus 16.5 is over this server's maximum 16 (--max-cpus)"},
		{name: "cpus absurd", req: wire.SubmitRequest{Resources: res(1e300, 0, 0)},
			want: "resources.cpus 1e+300 is over this server's maximum 16 (--max-cpus)"},
		{name: "cpus +Inf", req: wire.SubmitRequest{Resources: res(math.Inf(1), 0, 0)},
			want: "resources.cpus +Inf is over this server's maximum 16 (--max-cpus)"},
		{name: "pids at", req: wire.SubmitRequest{Resources: res(0, 0, 4096)}},
		{name: "pids over", req: wire.SubmitRequest{Resources: res(0, 0, 4097)},
			want: "resources.pids 4097 is over this server's maximum 4096 (--max-pids)"},
		{name: "pids absurd", req: wire.SubmitRequest{Resources: res(0, 0, 1<<62)},
			want: "resources.pids 4611686018427387904 is over this server's maximum 4096 (--max-pids)"},
		{name: "timeout at", req: wire.SubmitRequest{TimeoutSeconds: 86400}},
		{name: "timeout over", req: wire.SubmitRequest{TimeoutSeconds: 86401},
			want: "timeout_seconds 86401 is over this server's maximum 86400 (--max-timeout)"},
		{name: "timeout absurd (overflows a Duration)", req: wire.SubmitRequest{TimeoutSeconds: math.MaxInt},
			want: "timeout_seconds 9223372036854775807 is over this server's maximum 86400 (--max-timeout)"},
		{name: "timeout negative", req: wire.SubmitRequest{TimeoutSeconds: -5}, want: "timeout_seconds -5: want at least 1"},
		{name: "rounds at", req: wire.SubmitRequest{Limits: wire.Limits{MaxRounds: 100}}},
		{name: "rounds over", req: wire.SubmitRequest{Limits: wire.Limits{MaxRounds: 101}},
			want: "limits.max_rounds 101 is over this server's maximum 100 (--max-rounds)"},
		{name: "rounds absurd", req: wire.SubmitRequest{Limits: wire.Limits{MaxRounds: math.MaxInt}},
			want: "limits.max_rounds 9223372036854775807 is over this server's maximum 100 (--max-rounds)"},
		{name: "rounds negative", req: wire.SubmitRequest{Limits: wire.Limits{MaxRounds: -1}}, want: "limits.max_rounds -1: want at least 1"},
		{name: "wait at", req: wire.SubmitRequest{Limits: wire.Limits{MaxWaitSeconds: 30 * 86400}}},
		{name: "wait over", req: wire.SubmitRequest{Limits: wire.Limits{MaxWaitSeconds: 30*86400 + 1}},
			want: "limits.max_wait_seconds 2592001 is over this server's maximum 2592000 (--max-wait)"},
		{name: "wait absurd (overflows a Duration)", req: wire.SubmitRequest{Limits: wire.Limits{MaxWaitSeconds: math.MaxInt}},
			want: "limits.max_wait_seconds 9223372036854775807 is over this server's maximum 2592000 (--max-wait)"},
		{name: "input at", req: wire.SubmitRequest{Input: inputOf(256 << 10)}},
		{name: "input over", req: wire.SubmitRequest{Input: inputOf(256<<10 + 1)},
			want: "input is 262145 bytes, over this server's maximum 262144 (--max-input-kb 256)"},

		{name: "custom memory at", stack: custom, req: wire.SubmitRequest{Resources: res(0, 512, 0)}},
		{name: "custom memory over", stack: custom, req: wire.SubmitRequest{Resources: res(0, 513, 0)},
			want: "resources.memory_mb 513 is over this server's maximum 512 (--max-memory-mb)"},
		{name: "custom cpus at", stack: custom, req: wire.SubmitRequest{Resources: res(1.5, 0, 0)}},
		{name: "custom cpus over", stack: custom, req: wire.SubmitRequest{Resources: res(2, 0, 0)},
			want: "resources.cpus 2 is over this server's maximum 1.5 (--max-cpus)"},
		{name: "custom pids over", stack: custom, req: wire.SubmitRequest{Resources: res(0, 0, 65)},
			want: "resources.pids 65 is over this server's maximum 64 (--max-pids)"},
		{name: "custom timeout over", stack: custom, req: wire.SubmitRequest{TimeoutSeconds: 61},
			want: "timeout_seconds 61 is over this server's maximum 60 (--max-timeout)"},
		{name: "custom rounds over", stack: custom, req: wire.SubmitRequest{Limits: wire.Limits{MaxRounds: 4}},
			want: "limits.max_rounds 4 is over this server's maximum 3 (--max-rounds)"},
		{name: "custom wait over", stack: custom, req: wire.SubmitRequest{Limits: wire.Limits{MaxWaitSeconds: 3601}},
			want: "limits.max_wait_seconds 3601 is over this server's maximum 3600 (--max-wait)"},
		{name: "custom input at", stack: custom, req: wire.SubmitRequest{Input: inputOf(1024)}},
		{name: "custom input over", stack: custom, req: wire.SubmitRequest{Input: inputOf(1025)},
			want: "input is 1025 bytes, over this server's maximum 1024 (--max-input-kb 1)"},
		{name: "custom task record over", stack: custom, req: wire.SubmitRequest{Input: inputOf(1000),
			Labels: map[string]string{"big": strings.Repeat("l", 4<<10)}},
			want: "over this server's maximum 4096 (--max-task-kb 4)"},
	}
	for i, tt := range tests {
		s := def
		if tt.stack != nil {
			s = tt.stack
		}
		tt.req.TaskID = fmt.Sprintf("limit-%d", i)
		tt.req.Subagent = script("limited", "true")
		task, err := s.orch.Submit(t.Context(), tt.req)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Submit = %v, want it accepted", tt.name, err)
		case tt.want != "" && err == nil:
			t.Errorf("%s: Submit accepted the task (resources %+v); want an error saying %q", tt.name, task.Request.Resources, tt.want)
		case tt.want != "" && (!errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Submit = %v; want ErrInvalidRequest saying %q", tt.name, err, tt.want)
		}
	}
	// A task that leaves its limits empty on a server whose maximums are
	// below the defaults gets the maximums.
	task, err := custom.orch.Submit(t.Context(), wire.SubmitRequest{TaskID: "defaults", Subagent: script("limited", "true")})
	if err != nil {
		t.Fatal(err)
	}
	if l := task.Request.Limits; l.MaxRounds != 3 || l.MaxWaitSeconds != 3600 || task.Request.TimeoutSeconds != 60 {
		t.Errorf("Submit(no limits) on a server with lower maximums: limits %+v, timeout %d; want 3 rounds, 3600 s, 60 s",
			l, task.Request.TimeoutSeconds)
	}
}

// TestMaximumsValidate refuses maximums over what the contract allows.
func TestMaximumsValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultMaximums().Validate(); err != nil {
		t.Errorf("DefaultMaximums().Validate() = %v", err)
	}
	bad := Maximums{MemoryMB: schemas.MaxMemoryMB + 1, CPUs: 257, Pids: schemas.MaxPids + 1, TimeoutSeconds: 604801,
		Rounds: 1001, WaitSeconds: math.MaxInt}.WithDefaults()
	err := bad.Validate()
	for _, want := range []string{"--max-memory-mb", "--max-cpus", "--max-pids", "--max-timeout", "--max-rounds", "--max-wait"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v; want it to name %s", bad, err, want)
		}
	}
	if _, err := New(Config{Bus: bustest.Bus(t), Max: bad}); err == nil {
		t.Error("New accepted maximums over the contract's")
	}
}

// TestRegisteredDefaultsOverMaximums refuses a registered sub-agent whose
// defaults are over this server's maximums, naming the definition, unless
// the request overrides them.
func TestRegisteredDefaultsOverMaximums(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{})
	ctx := t.Context()
	big, err := s.reg.RegisterSubagent(ctx, wire.Subagent{Name: "big", Runtime: "exec", Command: wire.Command{"true"},
		Resources: &schemas.Resources{MemoryMB: 65536}, TimeoutSeconds: 7 * 86400, Limits: &wire.SubagentLimits{MaxRounds: 500}})
	if err != nil {
		t.Fatal(err)
	}
	from := "(from the registered sub-agent " + big.Entry.Ref() + ")"
	tests := []struct {
		name string
		req  wire.SubmitRequest
		want string
	}{
		{"memory", wire.SubmitRequest{TimeoutSeconds: 60, Limits: wire.Limits{MaxRounds: 5}},
			"resources.memory_mb 65536 " + from + " is over this server's maximum 16384 (--max-memory-mb)"},
		{"timeout", wire.SubmitRequest{Resources: &schemas.Resources{MemoryMB: 1024}, Limits: wire.Limits{MaxRounds: 5}},
			"timeout_seconds 604800 " + from + " is over this server's maximum 86400 (--max-timeout)"},
		{"rounds", wire.SubmitRequest{Resources: &schemas.Resources{MemoryMB: 1024}, TimeoutSeconds: 60},
			"limits.max_rounds 500 " + from + " is over this server's maximum 100 (--max-rounds)"},
		{"all overridden", wire.SubmitRequest{Resources: &schemas.Resources{MemoryMB: 1024}, TimeoutSeconds: 60, Limits: wire.Limits{MaxRounds: 5}}, ""},
	}
	for i, tt := range tests {
		tt.req.TaskID, tt.req.SubagentRef = fmt.Sprintf("reg-%d", i), "big"
		_, err := s.orch.Submit(ctx, tt.req)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Submit = %v, want it accepted", tt.name, err)
		case tt.want != "" && (!errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Submit = %v; want ErrInvalidRequest saying %q", tt.name, err, tt.want)
		}
	}
}

// TestInvalidTaskIDs: an id that cannot be a task id is ErrInvalidID (an
// ErrInvalidRequest) on every operation, never a KV error.
func TestInvalidTaskIDs(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{})
	ctx := t.Context()
	ops := map[string]func(id string) error{
		"Get": func(id string) error { _, err := s.orch.Get(ctx, id); return err },
		"Answer": func(id string) error {
			_, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: id, Answer: "x"})
			return err
		},
		"Cancel":   func(id string) error { _, err := s.orch.Cancel(ctx, id); return err },
		"Respawn":  func(id string) error { _, err := s.orch.Respawn(ctx, id); return err },
		"Continue": func(id string) error { _, err := s.orch.Continue(ctx, id, "more", "me"); return err },
		"Remove":   func(id string) error { return s.orch.Remove(ctx, id) },
		"Logs":     func(id string) error { return s.orch.Logs(ctx, id, 0, false, io.Discard) },
	}
	long := strings.Repeat("a", 97)
	for _, id := range []string{">", "*", "a b", "..", ".", "a.b", "-a", "", "t/1", "a\x00", long, strings.Repeat("x", 5000)} {
		for name, op := range ops {
			err := op(id)
			if !errors.Is(err, wire.ErrInvalidID) || !errors.Is(err, wire.ErrInvalidRequest) {
				t.Errorf("%s(%q) = %v; want ErrInvalidID", name, cut(id, 20), err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, "letters, digits") || !strings.Contains(msg, fmt.Sprintf("%q", cut(id, 100))) {
				t.Errorf("%s(%q) = %q; want the message to name the id and the rule", name, cut(id, 20), msg)
			}
		}
	}
	if _, err := s.orch.Get(ctx, strings.Repeat("a", 96)); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Get(96 letters) = %v; want ErrNotFound (a valid id)", err)
	}
}

// askedTask submits a task and plays its round 1 asking q.
func (s *limitsStack) askedTask(t *testing.T, id string, q schemas.NeedsInput) *wire.Task {
	t.Helper()
	s.submit(t, id)
	dispatch := id + "-r1"
	s.publish(t, schemas.KindStarted, dispatch)
	zero, ms := 0, int64(10)
	ev := schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: dispatch, Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms, NeedsInput: &q}
	if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
		t.Fatalf("publish needs_input of %s: %v", dispatch, err)
	}
	var task *wire.Task
	err := testutil.Poll(t.Context(), 30*time.Second, testutil.DefaultPollInterval, func() error {
		var err error
		if task, err = s.orch.Get(t.Context(), id); err != nil {
			return testutil.Permanent(err)
		}
		if task.State == wire.StateNeedsInput || task.State.Terminal() {
			return nil
		}
		return fmt.Errorf("task %s is %s, want the question applied", id, task.State)
	})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestQuestionOverLimits: a round whose partial_state (inline or by ref)
// or question is over the maximums ends the task failed with the limit
// named; the record keeps the question cut down, so the event is applied
// and the pipeline moves on.
func TestQuestionOverLimits(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{PartialStateBytes: 1 << 10, TaskBytes: 16 << 10})
	sha := strings.Repeat("ab", 32)
	tests := []struct {
		name       string
		q          schemas.NeedsInput
		wantReason string
		wantDetail string
	}{
		{"partial_state inline at the maximum", schemas.NeedsInput{Question: "ok?", PartialState: inputOf(1 << 10)}, "", ""},
		{"partial_state inline over", schemas.NeedsInput{Question: "ok?", Options: []string{"y", "n"}, PartialState: inputOf(1<<10 + 1)},
			"max_partial_state", "round 1 left a partial_state of 1025 bytes, over this server's maximum 1024 (--max-partial-state-kb 1)"},
		{"partial_state by ref over", schemas.NeedsInput{Question: "ok?", PartialStateRef: &schemas.ObjectRef{URI: "file:///x", SHA256: sha, Size: 5 << 20}},
			"max_partial_state", "partial_state of 5242880 bytes, over this server's maximum 1024"},
		{"question over the record", schemas.NeedsInput{Question: strings.Repeat("q", 20<<10), Context: strings.Repeat("c", 1000)},
			"max_task_size", "over this server's maximum 16384 (--max-task-kb 16)"},
	}
	for i, tt := range tests {
		task := s.askedTask(t, fmt.Sprintf("asked-%d", i), tt.q)
		if tt.wantReason == "" {
			if task.State != wire.StateNeedsInput {
				t.Errorf("%s: task is %s (%+v), want needs_input", tt.name, task.State, task.Outcome)
			}
			continue
		}
		if task.State != wire.StateFailed || task.Outcome == nil || task.Outcome.Reason != tt.wantReason || !strings.Contains(task.Outcome.Detail, tt.wantDetail) {
			t.Errorf("%s: task is %s with %+v; want failed, %s, %q", tt.name, task.State, task.Outcome, tt.wantReason, tt.wantDetail)
			continue
		}
		q := task.Rounds[0].Question
		if q == nil || len(q.Question) > keptQuestionBytes+len("…") || q.PartialState != nil || q.PartialStateRef != nil || q.Options != nil || q.Context != "" {
			t.Errorf("%s: kept question = %+v; want it cut down to its first KiB", tt.name, q)
		}
	}
}

// TestAnswerOverRecordLimit: an answer or a follow-up that would grow the
// task's record past its maximum is refused; a smaller one is taken.
func TestAnswerOverRecordLimit(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{TaskBytes: 16 << 10})
	ctx := t.Context()
	s.askedTask(t, "answered", schemas.NeedsInput{Question: "which?"})
	_, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: "answered", Answer: strings.Repeat("a", 16<<10)})
	if !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), "the answer would make task answered's record") ||
		!strings.Contains(err.Error(), "over this server's maximum 16384 (--max-task-kb 16)") {
		t.Errorf("Answer(16 KiB) = %v; want ErrInvalidRequest naming the record's maximum", err)
	}
	if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: "answered", Answer: "small"}); err != nil {
		t.Errorf("Answer(small) after a refused one = %v", err)
	}
}

// TestHostNetworkGated: network "host" gives a sub-agent the host's
// loopback (NATS, the API), so only an operator's --allow-host-network
// lets a task ask for it; none and bridge stay open to every client.
func TestHostNetworkGated(t *testing.T) {
	t.Parallel()
	closed := newLimitsStack(t, Maximums{})
	open := newLimitsStack(t, Maximums{AllowHostNetwork: true})
	ctx := t.Context()
	for i, network := range []string{"", "none", "bridge"} {
		if _, err := closed.orch.Submit(ctx, wire.SubmitRequest{TaskID: fmt.Sprintf("net-%d", i), Subagent: script("s", "true"), Network: network}); err != nil {
			t.Errorf("network %q refused: %v", network, err)
		}
	}
	_, err := closed.orch.Submit(ctx, wire.SubmitRequest{TaskID: "net-host", Subagent: script("s", "true"), Network: "host"})
	if !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), `network "host"`) || !strings.Contains(err.Error(), "--allow-host-network") {
		t.Errorf("network host on a server that does not allow it = %v; want invalid, naming the flag", err)
	}
	if _, err := open.orch.Submit(ctx, wire.SubmitRequest{TaskID: "net-host", Subagent: script("s", "true"), Network: "host"}); err != nil {
		t.Errorf("network host with --allow-host-network = %v", err)
	}
}

// TestFargateTaskSizesAtSubmit: on a server whose runners are on Fargate
// (Maximums.FargateTaskSizes), a task whose resources no Fargate task size
// holds is refused at submit, naming the nearest size, whether the request
// or its registered sub-agent asks for them; a server that does not say so
// leaves the check to the runner's claim.
func TestFargateTaskSizesAtSubmit(t *testing.T) {
	t.Parallel()
	// Maximums above Fargate's largest size, or nothing could be refused.
	max := Maximums{MemoryMB: 256 << 10, CPUs: 64}
	fargate := max
	fargate.FargateTaskSizes = true
	on, off := newLimitsStack(t, fargate), newLimitsStack(t, max)
	ctx := t.Context()
	big, err := on.reg.RegisterSubagent(ctx, wire.Subagent{Name: "big", Runtime: "exec", Command: wire.Command{"true"},
		Resources: &schemas.Resources{CPUs: 4, MemoryMB: 130 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	res := func(cpus float64, mb int64) *schemas.Resources { return &schemas.Resources{CPUs: cpus, MemoryMB: mb} }
	tests := []struct {
		name string
		req  wire.SubmitRequest
		want string // "" accepted
	}{
		{name: "a size", req: wire.SubmitRequest{Resources: res(1, 2048)}},
		{name: "rounded up to a size (0.25 vCPU has no 4 GiB; 0.5 vCPU has)", req: wire.SubmitRequest{Resources: res(0.25, 4096)}},
		{name: "largest size", req: wire.SubmitRequest{Resources: res(16, 120<<10)}},
		{name: "memory only", req: wire.SubmitRequest{Resources: res(0, 60<<10)}},
		{name: "no resources: the runner's defaults", req: wire.SubmitRequest{}},
		{name: "memory past every size", req: wire.SubmitRequest{Resources: res(4, 130<<10)},
			want: "resources: no Fargate task size has 4 vCPU and 130 GiB; the nearest is 16 vCPU with 120 GiB (cpu 16384, memory 122880): ask for at most that (resources.cpus 16, resources.memory_mb 122880)"},
		{name: "cpus past every size", req: wire.SubmitRequest{Resources: res(20, 0)},
			want: "resources: no Fargate task size has 20 vCPU; the nearest is 16 vCPU with 32 GiB (cpu 16384, memory 32768)"},
		{name: "from the registered sub-agent", req: wire.SubmitRequest{SubagentRef: "big"},
			want: "resources (from the registered sub-agent " + big.Entry.Ref() + "): no Fargate task size has 4 vCPU and 130 GiB; the nearest is 16 vCPU with 120 GiB"},
		{name: "the registered sub-agent's, overridden", req: wire.SubmitRequest{SubagentRef: "big", Resources: res(4, 30<<10)}},
	}
	for i, tt := range tests {
		tt.req.TaskID = fmt.Sprintf("fargate-%d", i)
		if tt.req.SubagentRef == "" {
			tt.req.Subagent = script("sized", "true")
		}
		_, err := on.orch.Submit(ctx, tt.req)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Submit = %v, want it accepted", tt.name, err)
		case tt.want != "" && (!errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Submit = %v; want ErrInvalidRequest saying %q", tt.name, err, tt.want)
		}
		if tt.req.SubagentRef != "" {
			continue
		}
		if _, err := off.orch.Submit(ctx, tt.req); err != nil {
			t.Errorf("%s: Submit on a server without FargateTaskSizes = %v, want it accepted (the runner checks)", tt.name, err)
		}
	}
}
