package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// What a task hands back: its last round's result and artifacts, when that
// round finished (docs/contract.md, "The result").
//
// The orchestrator never follows a URI from an event: a result_ref or an
// artifact is read from this orchestrator's own storage at
// blobs/sha256/<sha256>, and what is read must have that sha256 (and the
// size recorded). A sub-agent cannot name a file outside storage, and a
// blob somebody replaced is refused, not served.

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// recordResult copies what finished round r's event hands back onto r.
func (o *Orchestrator) recordResult(r *wire.Round, ev schemas.Event) {
	r.Result, r.ResultRef, r.Artifacts = nil, nil, nil
	if len(ev.Result) > 0 {
		r.Result = ev.Result
	}
	if ref := ev.ResultRef; ref != nil && sha256Hex.MatchString(ref.SHA256) {
		r.ResultRef = o.ownRef(*ref)
	}
	for _, a := range ev.Artifacts {
		if !sha256Hex.MatchString(a.SHA256) || !schemas.ValidArtifactName(a.Name) {
			continue // the schema refuses these; never a key we would read
		}
		r.Artifacts = append(r.Artifacts, wire.Artifact{Name: a.Name, Size: a.Size, SHA256: a.SHA256})
	}
}

// ownRef is ref pointing at this orchestrator's storage, where it is read.
func (o *Orchestrator) ownRef(ref schemas.ObjectRef) *schemas.ObjectRef {
	if o.cfg.Store != nil {
		ref.URI = o.cfg.Store.URI(storage.BlobKey(ref.SHA256))
	}
	return &ref
}

// setTaskResult makes the task's result its current round r's (none when r
// did not finish), keeping the record within the maximum: an inline
// result that would push it over is stored and referenced; an artifact
// list that still does is an explained failure.
func (o *Orchestrator) setTaskResult(ctx context.Context, t *wire.Task, r *wire.Round) *wire.Outcome {
	t.Result, t.ResultRef, t.Artifacts = r.Result, r.ResultRef, r.Artifacts
	n, err := recordSize(t)
	if err != nil || n <= o.max.TaskBytes {
		return nil
	}
	if len(r.Result) > 0 && o.cfg.Store != nil {
		// Content-addressed: storing it again on a retried update is harmless.
		_, ref, err := storage.PutBlob(ctx, o.cfg.Store, bytes.NewReader(r.Result))
		if err == nil {
			r.ResultRef = &schemas.ObjectRef{URI: ref.URI, SHA256: ref.SHA256, Size: ref.Size}
			r.Result = nil
			t.Result, t.ResultRef = nil, r.ResultRef
			if n, err = recordSize(t); err != nil || n <= o.max.TaskBytes {
				return nil
			}
		} else {
			o.log.Warn("store a task's result to keep its record small", "task_id", t.ID, "error", err)
		}
	}
	out := &wire.Outcome{Reason: "max_task_size", Detail: fmt.Sprintf("round %d finished with a result and %d artifacts that make the task's record %d bytes, over this server's maximum %d (--max-task-kb %d); hand back fewer artifacts",
		r.N, len(r.Artifacts), n, o.max.TaskBytes, o.max.TaskBytes>>10)}
	r.Artifacts, t.Artifacts = nil, nil
	if len(r.Result) > 1<<10 {
		r.Result, t.Result = nil, nil
	}
	return out
}

// Result returns the result task id hands back: its inline result, or the
// one its result_ref names read from storage and verified. A task that
// has not ended is ErrWrongState; one that ended without a result is
// JSON null.
func (o *Orchestrator) Result(ctx context.Context, taskID string) (json.RawMessage, error) {
	t, err := o.visible(ctx, taskID)
	if err != nil {
		return nil, err
	}
	switch {
	case len(t.Result) > 0:
		return t.Result, nil
	case t.ResultRef != nil:
		return o.readResult(ctx, t.ID, *t.ResultRef)
	case !t.State.Terminal():
		return nil, fmt.Errorf("task %s is %s: its result comes when it finishes (agora dispatch --wait waits for it): %w", t.ID, stateLabel(t.State), wire.ErrWrongState)
	}
	return json.RawMessage("null"), nil
}

func (o *Orchestrator) readResult(ctx context.Context, taskID string, ref schemas.ObjectRef) (json.RawMessage, error) {
	if o.cfg.Store == nil {
		return nil, fmt.Errorf("result of task %s: this orchestrator has no storage (start it with --storage, the runners' storage)", taskID)
	}
	if !sha256Hex.MatchString(ref.SHA256) {
		return nil, fmt.Errorf("result of task %s: sha256 %q is not 64 hex digits", taskID, ref.SHA256)
	}
	data, err := storage.GetVerified(ctx, o.cfg.Store, storage.BlobKey(ref.SHA256), ref.SHA256, schemas.ResultMaxBytes)
	if err != nil {
		return nil, fmt.Errorf("result of task %s: %w%s", taskID, err, notStoredYet(err))
	}
	if int64(len(data)) != ref.Size {
		return nil, fmt.Errorf("result of task %s: %d bytes in storage, want %d", taskID, len(data), ref.Size)
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("result of task %s: stored result is not JSON", taskID)
	}
	return data, nil
}

// ErrArtifactStorage wraps a failure to read an artifact that the task
// lists: missing from storage, or not what its sha256 says.
var ErrArtifactStorage = errors.New("artifact not readable from storage")

// OpenArtifact returns artifact name of task id and its content, read from
// storage by its sha256. The caller must check what it reads against the
// artifact's SHA256 and Size (VerifyingReader does) before trusting it.
func (o *Orchestrator) OpenArtifact(ctx context.Context, taskID, name string) (wire.Artifact, io.ReadCloser, error) {
	t, err := o.visible(ctx, taskID)
	if err != nil {
		return wire.Artifact{}, nil, err
	}
	var (
		a     *wire.Artifact
		names []string
	)
	for i := range t.Artifacts {
		names = append(names, t.Artifacts[i].Name)
		if t.Artifacts[i].Name == name {
			a = &t.Artifacts[i]
		}
	}
	if a == nil {
		have := "it has none"
		if len(names) > 0 {
			have = "it has " + strings.Join(clipNames(names, 10), ", ")
		}
		return wire.Artifact{}, nil, fmt.Errorf("task %s has no artifact %q (%s): %w", t.ID, name, have, wire.ErrNotFound)
	}
	if o.cfg.Store == nil {
		return wire.Artifact{}, nil, fmt.Errorf("artifact %s of task %s: this orchestrator has no storage (start it with --storage, the runners' storage)", name, t.ID)
	}
	if !sha256Hex.MatchString(a.SHA256) {
		return wire.Artifact{}, nil, fmt.Errorf("artifact %s of task %s: sha256 %q is not 64 hex digits: %w", name, t.ID, a.SHA256, ErrArtifactStorage)
	}
	rc, err := o.cfg.Store.Get(ctx, storage.BlobKey(a.SHA256))
	if err != nil {
		return wire.Artifact{}, nil, fmt.Errorf("artifact %s of task %s (sha256 %s): %w: %w%s", name, t.ID, a.SHA256, ErrArtifactStorage, err, notStoredYet(err))
	}
	return *a, rc, nil
}

// notStoredYet explains a blob missing from storage: a worker that
// publishes its own events (--worker-nats) can report a round before its
// runner has uploaded what the round stored.
func notStoredYet(err error) string {
	if errors.Is(err, storage.ErrNotFound) {
		return " (not in this server's storage: where workers publish their own events, the runner uploads a round's blobs moments after it ends — try again; otherwise the runner could not upload it, see its log)"
	}
	return ""
}

func clipNames(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}
