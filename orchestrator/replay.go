package orchestrator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Replay and fork (docs/replay.md).
//
// A replay is a new task made from a finished one: the same request (or
// another registered version of its sub-agent), from round 1, carrying the
// original's answered rounds (wire.Replay). Its questions never reach the
// route: apply answers each one from the recording when it is the same
// question (sameQuestion, sameOptions), and fails the
// replay at once when it is not — a CI job replaying tasks must never
// wait for a person. Every difference is a wire.Divergence on the task.
//
// A fork is a new task made from round N of another: rounds 1..N copied
// (they do not run again), round N answered with another answer, and
// round N+1 queued with round N's workspace snapshot and partial_state.

// replayChannel is the answer channel of a replayed answer.
const replayChannel = "replay"

// Replay starts a replay of the finished task taskID.
func (o *Orchestrator) Replay(ctx context.Context, taskID string, req wire.ReplayRequest) (*wire.Task, error) {
	orig, err := o.visible(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return o.replay(ctx, orig, req, "")
}

// replay makes and queues the replay of orig; batch, when set, is the new
// task's batch label.
func (o *Orchestrator) replay(ctx context.Context, orig *wire.Task, req wire.ReplayRequest, batch string) (*wire.Task, error) {
	if orig.State != wire.StateFinished {
		return nil, fmt.Errorf("task %s is %s; replay takes a finished task: %w", orig.ID, orig.State, wire.ErrWrongState)
	}
	sub, pins, hash, err := o.replayRequest(ctx, orig, req.SubagentRef)
	if err != nil {
		return nil, err
	}
	sub.Labels = derivedLabels(orig.Request.Labels, batch)
	rec := recording(orig)
	rec.Strict = req.Strict
	by := caller(ctx).actor()
	detail := "of " + orig.ID
	if req.SubagentRef != "" {
		detail += " with " + req.SubagentRef
	}
	return o.derive(ctx, orig, req.TaskID, sub, pins, hash,
		wire.TaskLink{Kind: wire.LinkReplay, By: by},
		wire.HistoryEntry{Action: wire.ActionReplay, By: by, Detail: detail},
		func(t *wire.Task, now time.Time) error {
			t.Replay = rec
			t.Rounds = []wire.Round{{N: 1, Attempt: 1, DispatchID: dispatchIDOf(t, 1, 1), State: wire.StateQueued, QueuedAt: now}}
			return nil
		})
}

// replayRequest is the request a replay of orig runs: orig's own, pinned
// as it was, or with ref, the registered sub-agent ref resolves to, with
// the bundles the original request added itself.
func (o *Orchestrator) replayRequest(ctx context.Context, orig *wire.Task, ref string) (wire.SubmitRequest, *wire.Pins, string, error) {
	req := orig.Request
	req.TaskID, req.SubagentRef, req.FromCI = "", "", false
	req.Labels = maps.Clone(req.Labels)
	if ref == "" {
		return req, orig.Pins, orig.SubagentHash, nil
	}
	// The registry's bundles come first in a resolved request; what follows
	// them is what the request gave itself.
	caps, envs := req.Capabilities, req.Env
	if p := orig.Pins; p != nil {
		caps, envs = caps[min(len(p.Capabilities), len(caps)):], envs[min(len(p.Env), len(envs)):]
	}
	req.Subagent = wire.SubmitRequest{}.Subagent
	req.SubagentRef = ref
	req.Capabilities, req.Env = caps, envs
	pins, from, err := o.resolve(ctx, &req)
	if err != nil {
		return req, nil, "", err
	}
	req.SubagentRef = ""
	if err := o.checkMaximums(&req, from); err != nil {
		return req, nil, "", err
	}
	if err := o.validate(&req); err != nil {
		return req, nil, "", err
	}
	o.fillDefaults(&req)
	return req, pins, subagentHash(req), nil
}

// derivedLabels are a replay's or fork's labels: the original's, but in
// batch (none: no batch; the original's batch counts its own tasks).
func derivedLabels(labels map[string]string, batch string) map[string]string {
	out := maps.Clone(labels)
	delete(out, wire.BatchLabel)
	if batch != "" {
		if out == nil {
			out = map[string]string{}
		}
		out[wire.BatchLabel] = batch
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// recording is what a replay of orig answers from and compares with.
func recording(orig *wire.Task) *wire.Replay {
	rec := &wire.Replay{Of: orig.ID, Recorded: []wire.RecordedRound{}}
	for _, r := range lastAttempts(orig) {
		rec.Rounds = max(rec.Rounds, r.N)
		switch {
		case r.Answer == nil:
		case r.Question != nil:
			rec.Recorded = append(rec.Recorded, wire.RecordedRound{Round: r.N, Question: r.Question.Question, Options: r.Question.Options, Answer: r.Answer.Value})
		default:
			rec.Recorded = append(rec.Recorded, wire.RecordedRound{Round: r.N, Answer: r.Answer.Value, FollowUp: true})
		}
	}
	rec.ResultDigest = resultDigest(orig.Result, orig.ResultRef)
	return rec
}

// lastAttempts is the last attempt of each round of t, in order.
func lastAttempts(t *wire.Task) []*wire.Round {
	var out []*wire.Round
	for i := range t.Rounds {
		if i+1 < len(t.Rounds) && t.Rounds[i+1].N == t.Rounds[i].N {
			continue // a later attempt of the same round follows
		}
		out = append(out, &t.Rounds[i])
	}
	return out
}

// resultDigest identifies a result for comparison: the sha256 of its
// canonical JSON (keys sorted, no insignificant space) when inline, the
// stored blob's sha256 when by ref; empty for none.
func resultDigest(inline json.RawMessage, ref *schemas.ObjectRef) string {
	if ref != nil {
		return "sha256:" + ref.SHA256
	}
	if len(bytes.TrimSpace(inline)) == 0 {
		return ""
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(inline))
	d.UseNumber()
	data := []byte(inline)
	if d.Decode(&v) == nil {
		if canon, err := json.Marshal(v); err == nil {
			data = canon
		}
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Fork starts a new task from round req.Round of taskID with another
// answer.
func (o *Orchestrator) Fork(ctx context.Context, taskID string, req wire.ForkRequest) (*wire.Task, error) {
	orig, err := o.visible(ctx, taskID)
	if err != nil {
		return nil, err
	}
	var at *wire.Round
	rounds := lastAttempts(orig)
	for _, r := range rounds {
		if r.N == req.Round {
			at = r
		}
	}
	if at == nil || at.Question == nil {
		return nil, fmt.Errorf("%w: task %s round %d asked no question; fork takes a round that asked ('agora status %s' shows them)",
			wire.ErrInvalidRequest, orig.ID, req.Round, orig.ID)
	}
	canonical, err := answer.ValidateAnswer(questionOf(orig, at), req.Answer)
	if err != nil {
		return nil, fmt.Errorf("task %s round %d: %w: %v", orig.ID, at.N, wire.ErrInvalidAnswer, err)
	}
	sub := orig.Request
	sub.TaskID, sub.SubagentRef, sub.FromCI = "", "", false
	sub.Labels = derivedLabels(orig.Request.Labels, "")
	by := orDefault(req.By, caller(ctx).actor())
	via := ""
	if id := caller(ctx); id.Name != "" && id.Name != by {
		via = id.Name
	}
	return o.derive(ctx, orig, req.TaskID, sub, orig.Pins, orig.SubagentHash,
		wire.TaskLink{Kind: wire.LinkFork, Round: at.N, Answer: canonical, By: by},
		wire.HistoryEntry{Action: wire.ActionFork, By: by, Via: via, Detail: fmt.Sprintf("of %s at round %d: %q", orig.ID, at.N, clip(canonical, 200))},
		func(t *wire.Task, now time.Time) error {
			for _, r := range rounds {
				if r.N > at.N {
					break
				}
				cp := *r
				cp.CopiedFrom, cp.DispatchID, cp.Attempt = r.DispatchID, dispatchIDOf(t, r.N, 1), 1
				cp.Enqueued, cp.RetryAt, cp.IfUnanswered, cp.StepDeadline = true, time.Time{}, nil, time.Time{}
				if r.N == at.N {
					cp.State = wire.StateNeedsInput
					cp.Result, cp.ResultRef, cp.Artifacts = nil, nil, nil
					cp.Answer = &wire.Answer{Value: canonical, By: by, Via: via, Channel: wire.LinkFork, At: now}
					cp.Decisions = []wire.Decision{{StepIndex: 0, Step: wire.LinkFork, Result: "answered", Detail: "by " + by + ", forked from " + orig.ID, At: now}}
					if err := o.copySnapshot(ctx, r.DispatchID, cp.DispatchID, orig.Request.Workspace); err != nil {
						return err
					}
				}
				t.Rounds = append(t.Rounds, cp)
			}
			o.nextRound(t, at.N+1, "")
			return nil
		})
}

// copySnapshot gives the fork's copy of a round the workspace snapshot
// record of the original's (the archive it names is stored by content and
// shared), so the fork's next round restores it under its own dispatch id
// and removing either task leaves the other's intact.
func (o *Orchestrator) copySnapshot(ctx context.Context, from, to, mode string) error {
	if mode == schemas.WorkspaceFresh || o.cfg.Store == nil {
		return nil
	}
	rc, err := o.cfg.Store.Get(ctx, snapshotKey(from))
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("%w: round %s has no workspace snapshot (its task was removed, or its runner could not store one)", wire.ErrWrongState, from)
	}
	if err != nil {
		return fmt.Errorf("read the workspace snapshot record of %s: %w", from, err)
	}
	defer rc.Close()
	if err := o.cfg.Store.Put(ctx, snapshotKey(to), rc); err != nil {
		return fmt.Errorf("copy the workspace snapshot record of %s to %s: %w", from, to, err)
	}
	return nil
}

// snapshotKey is where the runner records a dispatch's workspace snapshot
// (runner/snapshot.go writes it).
func snapshotKey(dispatchID string) string { return "dispatches/" + dispatchID + "/workspace.json" }

// derive creates a task made from orig (replay, fork) with request req,
// fills its rounds with build, links both tasks and queues its current
// round.
func (o *Orchestrator) derive(ctx context.Context, orig *wire.Task, id string, req wire.SubmitRequest, pins *wire.Pins, hash string,
	link wire.TaskLink, entry wire.HistoryEntry, build func(*wire.Task, time.Time) error) (*wire.Task, error) {
	if id == "" {
		id = newTaskID()
	}
	if err := wire.CheckTaskID(id); err != nil {
		return nil, err
	}
	if err := o.checkLocalSecrets(ctx, req.Env); err != nil {
		return nil, err
	}
	generation, err := o.store.generation(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%s of task %s: %w", link.Kind, orig.ID, err)
	}
	req.TaskID = id
	now := o.now()
	t := &wire.Task{ID: id, Request: req, SubagentHash: hash, Pins: pins, SubmitHash: requestHash(req), Generation: generation,
		Owner: caller(ctx).Name, State: wire.StateQueued, CreatedAt: now, UpdatedAt: now}
	back := link
	back.TaskID, back.At = orig.ID, now
	t.Origin = &back
	o.record(t, entry)
	if err := build(t, now); err != nil {
		return nil, err
	}
	if err := o.checkRecord(t, "the "+link.Kind); err != nil {
		return nil, err
	}
	if err := o.store.create(ctx, t); errors.Is(err, bus.ErrKeyExists) {
		return nil, fmt.Errorf("%w: task id %s is taken; give another (or none)", wire.ErrConflict, id)
	} else if err != nil {
		return nil, fmt.Errorf("%s of task %s: %w", link.Kind, orig.ID, err)
	}
	link.TaskID, link.At = id, now
	if _, err := o.store.update(ctx, orig.ID, func(o *wire.Task) error {
		o.Derived = append(o.Derived, link)
		if n := len(o.Derived); n > wire.MaxDerived {
			o.Derived = o.Derived[n-wire.MaxDerived:]
		}
		return nil
	}); err != nil {
		// The new task stands; only the original's list lacks it.
		o.log.Warn("link the original to its "+link.Kind, "task_id", orig.ID, "derived", id, "error", err)
	}
	o.log.Info("task "+link.Kind, "task_id", id, "of", orig.ID, "by", entry.By)
	t, err = o.enqueue(ctx, t)
	if err != nil {
		return nil, err
	}
	return o.view(t), nil
}

// ReplayBatch replays every finished task of batch into a new batch.
func (o *Orchestrator) ReplayBatch(ctx context.Context, batch string, req wire.ReplayRequest) (wire.BatchReplay, error) {
	if batch == "" {
		return wire.BatchReplay{}, fmt.Errorf("%w: empty batch id", wire.ErrInvalidRequest)
	}
	if req.TaskID != "" {
		return wire.BatchReplay{}, fmt.Errorf("%w: task_id names one task; a batch replay names its tasks itself", wire.ErrInvalidRequest)
	}
	c, err := o.listing(ctx)
	if err != nil {
		return wire.BatchReplay{}, err
	}
	f := filterOf(wire.ListOptions{Label: wire.BatchLabel + "=" + batch})
	if id := caller(ctx); !id.Admin && !id.Answerer {
		f.owner, f.scoped = id.Name, true
	}
	var ids []string
	var from *sortKey
	for {
		sel, _, more := c.pageTasks(f, from, wire.MaxPageLimit)
		for _, s := range sel {
			ids = append(ids, s.key.id)
		}
		if !more || len(sel) == 0 {
			break
		}
		k := sel[len(sel)-1].key
		from = &k
	}
	if len(ids) == 0 {
		return wire.BatchReplay{}, fmt.Errorf("batch %s: %w (no task of yours carries it)", batch, wire.ErrNotFound)
	}
	out := wire.BatchReplay{Of: batch, Batch: batch + "-replay-" + newTaskID()[2:8], Replays: []wire.ReplayStarted{}}
	for i := len(ids) - 1; i >= 0; i-- { // oldest first, as submitted
		orig, err := o.visible(ctx, ids[i])
		if errors.Is(err, wire.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		if orig.State != wire.StateFinished {
			out.Skipped++
			continue
		}
		one := req
		one.TaskID = out.Batch + "-" + orig.ID
		if wire.CheckTaskID(one.TaskID) != nil {
			one.TaskID = ""
		}
		started := wire.ReplayStarted{Original: orig.ID}
		if t, err := o.replay(ctx, orig, one, out.Batch); err != nil {
			started.Error = err.Error()
		} else {
			started.Replay = t.ID
		}
		out.Replays = append(out.Replays, started)
	}
	return out, nil
}

// sameQuestion and sameOptions compare as the memory answerer and the
// question groups do (answer.MemoryKey): the text trimmed, case-folded,
// inner white space collapsed and trailing punctuation dropped; the
// options trimmed, in any order, duplicates ignored.
func sameQuestion(a, b string) bool { return QuestionGroupKey(a, nil) == QuestionGroupKey(b, nil) }

func sameOptions(a, b []string) bool { return QuestionGroupKey("", a) == QuestionGroupKey("", b) }

// replayQuestion answers round r's question of replay t from the
// recording, or fails the replay when the question is not the one
// recorded. It reports whether a next round was queued.
func (o *Orchestrator) replayQuestion(t *wire.Task, r *wire.Round, now time.Time) bool {
	rp := t.Replay
	q := r.Question
	rec := recordedAt(rp, r.N)
	var d *wire.Divergence
	switch {
	case rec == nil || rec.FollowUp:
		what := fmt.Sprintf("the original finished at round %d", rp.Rounds)
		if rec != nil {
			what = fmt.Sprintf("the original's round %d finished and was continued", r.N)
		} else if r.N < rp.Rounds {
			what = fmt.Sprintf("the original's round %d did not ask", r.N)
		}
		d = &wire.Divergence{Round: r.N, Kind: wire.DivergenceNewQuestion, Detail: fmt.Sprintf("round %d asked %q, a question not asked before: %s", r.N, q.Question, what)}
	case !sameQuestion(q.Question, rec.Question):
		d = &wire.Divergence{Round: r.N, Kind: wire.DivergenceQuestion, Detail: fmt.Sprintf("round %d asked %q; the original asked %q", r.N, q.Question, rec.Question)}
	case !sameOptions(q.Options, rec.Options):
		d = &wire.Divergence{Round: r.N, Kind: wire.DivergenceOptions, Detail: fmt.Sprintf("round %d asked %q with options %s; the original offered %s", r.N, q.Question, optionsText(q.Options), optionsText(rec.Options))}
	}
	if d == nil {
		// The options matched trimmed: the recorded answer is the option
		// spelt as this question spells it.
		value := rec.Answer
		for _, opt := range q.Options {
			if strings.TrimSpace(opt) == strings.TrimSpace(value) {
				value = opt
				break
			}
		}
		canonical, err := answer.ValidateAnswer(questionOf(t, r), value)
		if err != nil {
			d = &wire.Divergence{Round: r.N, Kind: wire.DivergenceOptions, Detail: fmt.Sprintf("round %d: the recorded answer %q does not fit: %v", r.N, rec.Answer, err)}
		} else {
			r.Answer = &wire.Answer{Value: canonical, By: "replay of " + rp.Of, Channel: replayChannel, At: now}
			r.Decisions = append(r.Decisions, wire.Decision{StepIndex: 0, Step: replayChannel, Result: "answered",
				Detail: fmt.Sprintf("the answer recorded in %s round %d", rp.Of, rec.Round), At: now})
			o.record(t, wire.HistoryEntry{Action: wire.ActionAnswer, By: r.Answer.By, Detail: fmt.Sprintf("round %d via replay: %q", r.N, clip(canonical, 200))})
			rp.Matched++
			o.nextRound(t, r.N+1, "")
			return true
		}
	}
	// Fail fast: nobody is asked, nothing waits.
	d.At = now
	rp.Divergences = append(rp.Divergences, *d)
	t.State, t.Outcome = wire.StateFailed, &wire.Outcome{Reason: "replay_diverged", Detail: d.Detail}
	o.settleReplay(t, now)
	return false
}

// replayFinished compares round r's finish with the recording: a round
// the original went on from (a question, a follow-up) is a divergence, a
// recorded follow-up is sent again. It reports whether a next round was
// queued.
func (o *Orchestrator) replayFinished(t *wire.Task, r *wire.Round, now time.Time) bool {
	rp := t.Replay
	rec := recordedAt(rp, r.N)
	switch {
	case rec != nil && rec.FollowUp:
		r.Answer = &wire.Answer{Value: rec.Answer, By: "replay of " + rp.Of, Channel: "continue", At: now}
		o.record(t, wire.HistoryEntry{Action: wire.ActionContinue, By: r.Answer.By, Detail: fmt.Sprintf("round %d: %q", r.N+1, clip(rec.Answer, 200))})
		o.nextRound(t, r.N+1, rec.Answer)
		return true
	case rec != nil:
		rp.Divergences = append(rp.Divergences, wire.Divergence{Round: r.N, Kind: wire.DivergenceFewerRounds, At: now,
			Detail: fmt.Sprintf("round %d finished without asking; the original asked %q and ran %d rounds", r.N, rec.Question, rp.Rounds)})
	case r.N < rp.Rounds:
		rp.Divergences = append(rp.Divergences, wire.Divergence{Round: r.N, Kind: wire.DivergenceFewerRounds, At: now,
			Detail: fmt.Sprintf("finished after %d rounds; the original ran %d", r.N, rp.Rounds)})
	}
	if got := resultDigest(t.Result, t.ResultRef); got != rp.ResultDigest {
		rp.Divergences = append(rp.Divergences, wire.Divergence{Round: r.N, Kind: wire.DivergenceResult, At: now,
			Detail: fmt.Sprintf("the result differs from the original's (%s)", digestText(got, rp.ResultDigest))})
	}
	return false
}

// settleReplay gives an ended replay its verdict, once; an end other than
// finished is a divergence of its own.
func (o *Orchestrator) settleReplay(t *wire.Task, now time.Time) {
	rp := t.Replay
	if rp == nil || rp.Verdict != "" || !t.State.Terminal() {
		return
	}
	if t.State != wire.StateFinished && rp.FirstFailing() == nil {
		detail := "the replay " + stateLabel(t.State)
		if t.Outcome != nil {
			detail += ": " + t.Outcome.Detail
		}
		rp.Divergences = append(rp.Divergences, wire.Divergence{Round: len(lastAttempts(t)), Kind: wire.DivergenceOutcome, At: now,
			Detail: detail + "; the original finished"})
	}
	rp.Verdict = wire.ReplayMatched
	if rp.FirstFailing() != nil {
		rp.Verdict = wire.ReplayDiverged
	}
}

func recordedAt(rp *wire.Replay, n int) *wire.RecordedRound {
	for i := range rp.Recorded {
		if rp.Recorded[i].Round == n {
			return &rp.Recorded[i]
		}
	}
	return nil
}

func optionsText(opts []string) string {
	if len(opts) == 0 {
		return "(none)"
	}
	data, _ := json.Marshal(opts)
	return string(data)
}

func digestText(got, want string) string {
	short := func(d string) string {
		if d == "" {
			return "none"
		}
		if len(d) > 19 {
			return d[:19]
		}
		return d
	}
	return "now " + short(got) + ", was " + short(want)
}

// notReplay refuses to respawn or continue a replay: a round run again or
// added would make its comparison with the original meaningless.
func notReplay(t *wire.Task, what string) error {
	if t.Replay == nil {
		return nil
	}
	return fmt.Errorf("task %s is a replay of %s and is not %s; replay %s again instead (agora replay %s --wait): %w",
		t.ID, t.Replay.Of, what, t.Replay.Of, t.Replay.Of, wire.ErrWrongState)
}
