// Package apitest holds a hand-written fake orchestrator.Service for tests
// of the HTTP API and of its clients: each method calls the function field
// of the same name, and one left nil fails the call with an error naming it
// (the API answers it 500 internal).
//
// A test helper: what it may import, docs/architecture.md.
package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// Service is a fake orchestrator.Service built from functions.
type Service struct {
	SubmitFunc    func(ctx context.Context, req wire.SubmitRequest) (*wire.Task, error)
	GetFunc       func(ctx context.Context, taskID string) (*wire.Task, error)
	ListFunc      func(ctx context.Context, opts wire.ListOptions) (wire.TaskPage, error)
	QuestionsFunc func(ctx context.Context, opts wire.PageOptions) (wire.QuestionPage, error)
	AnswerFunc    func(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error)
	GroupsFunc    func(ctx context.Context, opts wire.GroupOptions) ([]wire.QuestionGroup, error)
	StatsFunc     func(ctx context.Context, opts wire.StatsOptions) (wire.Stats, error)
	CancelFunc    func(ctx context.Context, taskID string) (*wire.Task, error)
	RespawnFunc   func(ctx context.Context, taskID string) (*wire.Task, error)
	ContinueFunc  func(ctx context.Context, taskID, message, by string) (*wire.Task, error)
	RemoveFunc    func(ctx context.Context, taskID string) error
	ReplayFunc    func(ctx context.Context, taskID string, req wire.ReplayRequest) (*wire.Task, error)
	ForkFunc      func(ctx context.Context, taskID string, req wire.ForkRequest) (*wire.Task, error)

	ReplayBatchFunc func(ctx context.Context, batch string, req wire.ReplayRequest) (wire.BatchReplay, error)
	WatchFunc       func(ctx context.Context, fn func(wire.Change)) error
	LogsFunc        func(ctx context.Context, taskID string, round int, follow bool, w io.Writer) error

	ResultFunc       func(ctx context.Context, taskID string) (json.RawMessage, error)
	OpenArtifactFunc func(ctx context.Context, taskID, name string) (wire.Artifact, io.ReadCloser, error)

	ParkedEventsFunc  func(ctx context.Context) ([]wire.ParkedEvent, wire.PipelineStats, error)
	RetryParkedFunc   func(ctx context.Context, seq uint64) error
	DiscardParkedFunc func(ctx context.Context, seq uint64) error
}

var _ orchestrator.Service = (*Service)(nil)

func unset(method string) error { return fmt.Errorf("apitest: Service.%sFunc is not set", method) }

func (s *Service) Submit(ctx context.Context, req wire.SubmitRequest) (*wire.Task, error) {
	if s.SubmitFunc == nil {
		return nil, unset("Submit")
	}
	return s.SubmitFunc(ctx, req)
}

func (s *Service) Get(ctx context.Context, taskID string) (*wire.Task, error) {
	if s.GetFunc == nil {
		return nil, unset("Get")
	}
	return s.GetFunc(ctx, taskID)
}

func (s *Service) List(ctx context.Context, opts wire.ListOptions) (wire.TaskPage, error) {
	if s.ListFunc == nil {
		return wire.TaskPage{}, unset("List")
	}
	return s.ListFunc(ctx, opts)
}

func (s *Service) Questions(ctx context.Context, opts wire.PageOptions) (wire.QuestionPage, error) {
	if s.QuestionsFunc == nil {
		return wire.QuestionPage{}, unset("Questions")
	}
	return s.QuestionsFunc(ctx, opts)
}

func (s *Service) QuestionGroups(ctx context.Context, opts wire.GroupOptions) ([]wire.QuestionGroup, error) {
	if s.GroupsFunc == nil {
		return nil, unset("QuestionGroups")
	}
	return s.GroupsFunc(ctx, opts)
}

func (s *Service) Stats(ctx context.Context, opts wire.StatsOptions) (wire.Stats, error) {
	if s.StatsFunc == nil {
		return wire.Stats{}, unset("Stats")
	}
	return s.StatsFunc(ctx, opts)
}

func (s *Service) Answer(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error) {
	if s.AnswerFunc == nil {
		return nil, unset("Answer")
	}
	return s.AnswerFunc(ctx, req)
}

func (s *Service) Cancel(ctx context.Context, taskID string) (*wire.Task, error) {
	if s.CancelFunc == nil {
		return nil, unset("Cancel")
	}
	return s.CancelFunc(ctx, taskID)
}

func (s *Service) Respawn(ctx context.Context, taskID string) (*wire.Task, error) {
	if s.RespawnFunc == nil {
		return nil, unset("Respawn")
	}
	return s.RespawnFunc(ctx, taskID)
}

func (s *Service) Continue(ctx context.Context, taskID, message, by string) (*wire.Task, error) {
	if s.ContinueFunc == nil {
		return nil, unset("Continue")
	}
	return s.ContinueFunc(ctx, taskID, message, by)
}

func (s *Service) Remove(ctx context.Context, taskID string) error {
	if s.RemoveFunc == nil {
		return unset("Remove")
	}
	return s.RemoveFunc(ctx, taskID)
}

// Watch calls WatchFunc; with none it blocks until ctx ends, as a service
// with no changes does.
func (s *Service) Watch(ctx context.Context, fn func(wire.Change)) error {
	if s.WatchFunc == nil {
		<-ctx.Done()
		return nil
	}
	return s.WatchFunc(ctx, fn)
}

func (s *Service) Logs(ctx context.Context, taskID string, round int, follow bool, w io.Writer) error {
	if s.LogsFunc == nil {
		return unset("Logs")
	}
	return s.LogsFunc(ctx, taskID, round, follow, w)
}

func (s *Service) Result(ctx context.Context, taskID string) (json.RawMessage, error) {
	if s.ResultFunc == nil {
		return nil, unset("Result")
	}
	return s.ResultFunc(ctx, taskID)
}

func (s *Service) OpenArtifact(ctx context.Context, taskID, name string) (wire.Artifact, io.ReadCloser, error) {
	if s.OpenArtifactFunc == nil {
		return wire.Artifact{}, nil, unset("OpenArtifact")
	}
	return s.OpenArtifactFunc(ctx, taskID, name)
}

func (s *Service) ParkedEvents(ctx context.Context) ([]wire.ParkedEvent, wire.PipelineStats, error) {
	if s.ParkedEventsFunc == nil {
		return nil, wire.PipelineStats{}, unset("ParkedEvents")
	}
	return s.ParkedEventsFunc(ctx)
}

func (s *Service) RetryParked(ctx context.Context, seq uint64) error {
	if s.RetryParkedFunc == nil {
		return unset("RetryParked")
	}
	return s.RetryParkedFunc(ctx, seq)
}

func (s *Service) DiscardParked(ctx context.Context, seq uint64) error {
	if s.DiscardParkedFunc == nil {
		return unset("DiscardParked")
	}
	return s.DiscardParkedFunc(ctx, seq)
}

func (s *Service) Replay(ctx context.Context, taskID string, req wire.ReplayRequest) (*wire.Task, error) {
	if s.ReplayFunc == nil {
		return nil, unset("Replay")
	}
	return s.ReplayFunc(ctx, taskID, req)
}

func (s *Service) ReplayBatch(ctx context.Context, batch string, req wire.ReplayRequest) (wire.BatchReplay, error) {
	if s.ReplayBatchFunc == nil {
		return wire.BatchReplay{}, unset("ReplayBatch")
	}
	return s.ReplayBatchFunc(ctx, batch, req)
}

func (s *Service) Fork(ctx context.Context, taskID string, req wire.ForkRequest) (*wire.Task, error) {
	if s.ForkFunc == nil {
		return nil, unset("Fork")
	}
	return s.ForkFunc(ctx, taskID, req)
}
