package orchestrator

import (
	"context"
	"encoding/json"
	"io"

	"github.com/agoradev/agora/wire"
)

// Service is what the HTTP API (and through it the CLI, the web page and
// the Go client) can ask of the orchestrator. *Orchestrator implements it.
type Service interface {
	Submit(ctx context.Context, req wire.SubmitRequest) (*wire.Task, error)
	Get(ctx context.Context, taskID string) (*wire.Task, error)
	// List returns one page of the tasks matching opts, newest first, in
	// their list view (ListView), and the counts of all tasks by state.
	List(ctx context.Context, opts wire.ListOptions) (wire.TaskPage, error)
	// Questions returns one page of the open questions, oldest first.
	Questions(ctx context.Context, opts wire.PageOptions) (wire.QuestionPage, error)
	// QuestionGroups returns the open questions grouped: identical ones
	// of one batch are one group (see wire.QuestionGroup).
	QuestionGroups(ctx context.Context, opts wire.GroupOptions) ([]wire.QuestionGroup, error)
	// Stats is question quality and round economics per sub-agent over
	// the tasks the caller may see that opts chooses.
	Stats(ctx context.Context, opts wire.StatsOptions) (wire.Stats, error)
	Answer(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error)
	Cancel(ctx context.Context, taskID string) (*wire.Task, error)
	Respawn(ctx context.Context, taskID string) (*wire.Task, error)
	Continue(ctx context.Context, taskID, message, by string) (*wire.Task, error)
	Remove(ctx context.Context, taskID string) error
	// Replay starts a new task that runs the finished task taskID again
	// from round 1, answering each question from its recorded answers
	// (docs/replay.md).
	Replay(ctx context.Context, taskID string, req wire.ReplayRequest) (*wire.Task, error)
	// ReplayBatch replays every finished task of a batch into a new batch.
	ReplayBatch(ctx context.Context, batch string, req wire.ReplayRequest) (wire.BatchReplay, error)
	// Fork starts a new task from round req.Round of taskID — its
	// workspace snapshot and partial_state — with another answer.
	Fork(ctx context.Context, taskID string, req wire.ForkRequest) (*wire.Task, error)
	// Watch calls fn with every task change until ctx ends.
	Watch(ctx context.Context, fn func(wire.Change)) error
	// Logs writes the output of a round (0: the current one) to w: the
	// stored output of a round that has ended; with follow, a running
	// round's live output until it ends, then the rest from storage.
	Logs(ctx context.Context, taskID string, round int, follow bool, w io.Writer) error
	// Result is what the task hands back (JSON): its last round's result,
	// read from storage and verified when it is stored by ref; null when
	// the task ended without one; ErrWrongState before it ends.
	Result(ctx context.Context, taskID string) (json.RawMessage, error)
	// OpenArtifact returns one of the task's artifacts and its content,
	// read from storage by sha256; the caller verifies what it reads
	// (sha256, size) before trusting it. ErrNotFound when the task has no
	// artifact of that name.
	OpenArtifact(ctx context.Context, taskID, name string) (wire.Artifact, io.ReadCloser, error)
	// ParkedEvents lists the lifecycle events the pipeline gave up on,
	// oldest first, and its counters.
	ParkedEvents(ctx context.Context) ([]wire.ParkedEvent, wire.PipelineStats, error)
	// RetryParked applies a parked event again; once applied it is no
	// longer parked.
	RetryParked(ctx context.Context, seq uint64) error
	// DiscardParked forgets a parked event.
	DiscardParked(ctx context.Context, seq uint64) error
}

// Follower is a watch of a Service running aside (Follow).
type Follower struct {
	// Changes delivers the changes kept, in order.
	Changes <-chan *Followed
	// Ready is closed once the watch is in place: a caller that reads
	// the state after it misses no change.
	Ready <-chan struct{}
	// Done delivers what Watch returned, once it has.
	Done <-chan error
}

// Follow watches svc with ctx (and its identity) until ctx ends,
// delivering the changes keep accepts (nil: all). Ready is closed when svc
// says its watch is in place (an Orchestrator does), or at once for a
// Service that cannot.
//
// An Orchestrator's watch is shared by every watcher of the process and
// fills Changes itself, up to DefaultWatchLag changes: a reader that falls
// that far behind is dropped, and Done delivers ErrWatchLagged. Another
// Service's watch runs in a goroutine, delivering on a channel of buffer
// n; a full channel holds it back until ctx ends: bound the reader.
func Follow(ctx context.Context, svc Service, keep func(wire.Change) bool, n int) Follower {
	if o, ok := svc.(*Orchestrator); ok {
		return o.follow(ctx, keep)
	}
	changes := make(chan *Followed, n)
	ready := make(chan struct{})
	done := make(chan error, 1)
	fn := func(c wire.Change) {
		if keep != nil && !keep(c) {
			return
		}
		select {
		case changes <- &Followed{Change: c}:
		case <-ctx.Done():
		}
	}
	go func() { done <- WatchWhenReady(ctx, svc, fn, func() { close(ready) }) }()
	return Follower{Changes: changes, Ready: ready, Done: done}
}

// Followed is one change a Follower delivers. Its Task is shared with
// every other watcher: read it, do not change it.
type Followed struct {
	wire.Change
	// JSON is the change encoded, made once for every watcher; nil when
	// the Service did not encode it (the reader encodes Change).
	JSON []byte
}

// Watcher is the part of a Service WatchWhenReady needs.
type Watcher interface {
	Watch(ctx context.Context, fn func(wire.Change)) error
}

// WatchWhenReady runs w's watch until ctx ends and calls ready once it is
// in place: at that moment for an Orchestrator (WatchReady), at once for a
// Watcher that cannot say.
func WatchWhenReady(ctx context.Context, w Watcher, fn func(wire.Change), ready func()) error {
	if rw, ok := w.(interface {
		WatchReady(context.Context, func(wire.Change), func()) error
	}); ok {
		return rw.WatchReady(ctx, fn, ready)
	}
	ready()
	return w.Watch(ctx, fn)
}
