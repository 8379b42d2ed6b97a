package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/schemas"
)

// TestDecideOutcome: the settle decision, case by case — which terminal
// event counts, what the bus lacks, and what the runner reports for a
// container that left none.
func TestDecideOutcome(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	spec := &schemas.DispatchSpec{DispatchID: "d-1", TaskID: "t-1", Round: 2,
		Subagent: schemas.Subagent{Name: "fixer", Runtime: schemas.RuntimeExec}}
	ev := func(kind schemas.EventKind) schemas.Event {
		e := schemas.Event{Kind: kind, DispatchID: "d-1"}
		if kind == schemas.KindFailed {
			e.Failure = &schemas.Failure{Reason: schemas.ReasonProviderFailed, Detail: "the worker's own"}
		}
		return e
	}
	exited := func(code int) containerExit { return containerExit{Result: exit.Result{ExitCode: code}} }

	tests := []struct {
		name string
		// noRequest: the request is not known (spec nil).
		noRequest bool
		f         exitFacts
		// missing are the kinds to publish, in order; terminal the kind
		// that counts and byRunner whether the runner made it.
		missing  []schemas.EventKind
		terminal schemas.EventKind
		byRunner bool
		// reason, detail (substrings, all of them) and exit code of a
		// failure the runner made.
		reason schemas.FailureReason
		detail []string
		exit   int
	}{
		{name: "the worker published everything",
			f:       exitFacts{containerExit: exited(0), Stored: evs(ev, schemas.KindStarted, schemas.KindFinished), Stdout: evs(ev, schemas.KindStarted, schemas.KindFinished)},
			missing: nil, terminal: schemas.KindFinished},
		{name: "relayed: every line from stdout, terminal last",
			f:       exitFacts{containerExit: exited(0), Stdout: evs(ev, schemas.KindStarted, schemas.KindNeedsInput)},
			missing: kinds(schemas.KindStarted, schemas.KindNeedsInput), terminal: schemas.KindNeedsInput},
		{name: "the worker's terminal publish failed: recovered from stdout",
			f:       exitFacts{containerExit: exited(3), Stored: evs(ev, schemas.KindStarted), Stdout: evs(ev, schemas.KindStarted, schemas.KindFailed)},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed},
		{name: "the first stored terminal event counts over stdout's",
			f:       exitFacts{containerExit: exited(0), Stored: evs(ev, schemas.KindCancelled, schemas.KindFinished), Stdout: evs(ev, schemas.KindStarted, schemas.KindFinished)},
			missing: kinds(schemas.KindStarted), terminal: schemas.KindCancelled},
		{name: "a kind repeated on stdout goes out once",
			f:       exitFacts{containerExit: exited(0), Stdout: evs(ev, schemas.KindStarted, schemas.KindStarted, schemas.KindFinished, schemas.KindFailed)},
			missing: kinds(schemas.KindStarted, schemas.KindFinished), terminal: schemas.KindFinished},
		{name: "no terminal event: worker-lost with the exit code and last line",
			f:       exitFacts{containerExit: exited(2), Stdout: evs(ev, schemas.KindStarted), LastLine: "panic: boom"},
			missing: kinds(schemas.KindStarted, schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"container exited with code 2", "left no terminal event", "last output: panic: boom"}, exit: 2},
		{name: "OOM kill named",
			f:       exitFacts{containerExit: containerExit{Result: exit.Result{ExitCode: 137, OOMKilled: true}}},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"OOMKilled"}, exit: 137},
		{name: "an unreported SIGKILL is most likely the memory limit",
			f:       exitFacts{containerExit: containerExit{Result: exit.Result{ExitCode: 137, Signal: "SIGKILL"}}},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"killed by SIGKILL: most likely its memory limit"}, exit: 137},
		{name: "another signal named",
			f:       exitFacts{containerExit: containerExit{Result: exit.Result{ExitCode: 129, Signal: "SIGHUP", Err: errors.New("engine note")}}},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"(killed by SIGHUP)", "(engine note)"}, exit: 129},
		{name: "never ran: the engine's code",
			f:       exitFacts{containerExit: exited(-1)},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"the container never ran"}, exit: exitEngineError},
		{name: "the wait failed: never exit 0",
			f:       exitFacts{containerExit: containerExit{WaitErr: errors.New("engine gone")}},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"waiting for the container failed: engine gone"}, exit: exitEngineError},
		{name: "the backstop stopped it: a timeout",
			f:       exitFacts{containerExit: containerExit{Result: exit.Result{ExitCode: 137}, TimedOut: true}},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonTimeout, detail: []string{"ran past the dispatch timeout and was stopped by the runner", "code 137"}, exit: 137},
		{name: "killed for its workspace: provider-failed, over a timeout",
			f:       exitFacts{containerExit: containerExit{Result: exit.Result{ExitCode: 137}, TimedOut: true}, WorkspaceOver: "the workspace grew past 1 MiB"},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonProviderFailed, detail: []string{"the workspace grew past 1 MiB"}, exit: 137},
		{name: "an unsigned terminal line is quoted, not taken",
			f:       exitFacts{containerExit: exited(1), Unsigned: "fetch-failed: no key"},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"unsigned terminal event", "says: fetch-failed: no key"}, exit: 1},
		{name: "stopped for a cancel before the worker's handler: cancelled",
			f:       exitFacts{containerExit: exited(143), StoppedForCancel: true},
			missing: kinds(schemas.KindCancelled), terminal: schemas.KindCancelled, byRunner: true, exit: 143},
		{name: "stopped for a cancel before it ran: cancelled with 0",
			f:       exitFacts{containerExit: exited(-1), StoppedForCancel: true},
			missing: kinds(schemas.KindCancelled), terminal: schemas.KindCancelled, byRunner: true, exit: 0},
		{name: "the worker's cancelled event beats the runner's",
			f:       exitFacts{containerExit: exited(0), StoppedForCancel: true, Stdout: evs(ev, schemas.KindCancelled)},
			missing: kinds(schemas.KindCancelled), terminal: schemas.KindCancelled},
		{name: "request unknown (adopted, request file gone)", noRequest: true,
			f:       exitFacts{containerExit: exited(1)},
			missing: kinds(schemas.KindFailed), terminal: schemas.KindFailed, byRunner: true,
			reason: schemas.ReasonWorkerLost, detail: []string{"code 1"}, exit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := spec
			if tt.noRequest {
				s = nil
			}
			tt.f.Ran = 1500 * time.Millisecond
			out := decideOutcome("d-1", s, tt.f, now)
			var got []schemas.EventKind
			for _, e := range out.Missing {
				got = append(got, e.Kind)
			}
			if !slices.Equal(got, tt.missing) || out.Terminal.Kind != tt.terminal || out.ByRunner != tt.byRunner {
				t.Fatalf("decideOutcome = missing %v, terminal %s, by runner %v; want %v, %s, %v", got, out.Terminal.Kind, out.ByRunner, tt.missing, tt.terminal, tt.byRunner)
			}
			if !tt.byRunner {
				return
			}
			e := out.Missing[len(out.Missing)-1]
			if e.DispatchID != "d-1" || !e.Time.Equal(now) || e.ExitCode == nil || *e.ExitCode != tt.exit || e.DurationMS == nil || *e.DurationMS != 1500 {
				t.Errorf("runner's event = id %s time %s exit %v duration %v; want d-1, %s, %d, 1500", e.DispatchID, e.Time, deref(e.ExitCode), deref(e.DurationMS), now, tt.exit)
			}
			if s != nil && (e.TaskID != "t-1" || e.Round != 2 || e.Subagent != "fixer") {
				t.Errorf("runner's event = task %s round %d subagent %s; want the spec's", e.TaskID, e.Round, e.Subagent)
			}
			if s == nil && e.TaskID != "" {
				t.Errorf("runner's event without a request names task %q", e.TaskID)
			}
			if tt.terminal == schemas.KindCancelled {
				if e.Failure != nil {
					t.Errorf("cancelled event has a failure: %+v", e.Failure)
				}
				return
			}
			if e.Failure == nil || e.Failure.Reason != tt.reason {
				t.Fatalf("failure = %+v; want reason %s", e.Failure, tt.reason)
			}
			for _, want := range tt.detail {
				if !strings.Contains(e.Failure.Detail, want) {
					t.Errorf("detail = %q; want it to contain %q", e.Failure.Detail, want)
				}
			}
		})
	}
}

func evs(ev func(schemas.EventKind) schemas.Event, ks ...schemas.EventKind) []schemas.Event {
	var out []schemas.Event
	for _, k := range ks {
		out = append(out, ev(k))
	}
	return out
}

func kinds(ks ...schemas.EventKind) []schemas.EventKind { return ks }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
