package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// exampleAPI serves the real API on loopback, backed by a fake orchestrator
// holding task t-42 of sub-agent "triage": running, then asking "Bug or
// feature?". It accepts the token "ci-bot:s3cret:answerer": an answering
// service, which may answer any task, for itself or for a person it names.
func exampleAPI() *httptest.Server {
	asked := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	question := &schemas.NeedsInput{Question: "Bug or feature?", Options: []string{"bug", "feature"}}
	round1 := wire.Round{N: 1, DispatchID: "t-42-r1", State: wire.StateNeedsInput, AskedAt: asked, Question: question}
	running := &wire.Task{ID: "t-42", State: wire.StateRunning,
		Rounds:    []wire.Round{{N: 1, DispatchID: "t-42-r1", State: wire.StateRunning}},
		Attention: wire.Attention{Kind: "running", Summary: "round 1 running for 3s"}}
	waiting := &wire.Task{ID: "t-42", State: wire.StateNeedsInput, Rounds: []wire.Round{round1},
		Attention: wire.Attention{Required: true, Kind: "needs_answer",
			Summary: "needs input: Bug or feature? (bug / feature)", Action: "agora answer t-42 bug"}}

	var mu sync.Mutex
	var answer *wire.Answer
	svc := &apitest.Service{
		SubmitFunc: func(_ context.Context, req wire.SubmitRequest) (*wire.Task, error) {
			return &wire.Task{ID: req.TaskID, Request: req, State: wire.StateQueued,
				Rounds:    []wire.Round{{N: 1, DispatchID: req.TaskID + "-r1", State: wire.StateQueued}},
				Attention: wire.Attention{Kind: "none", Summary: "round 1 queued for a runner slot; no action needed"}}, nil
		},
		GetFunc: func(_ context.Context, id string) (*wire.Task, error) {
			if id != "t-42" {
				return nil, fmt.Errorf("task %s: %w", id, wire.ErrNotFound)
			}
			return running, nil
		},
		WatchFunc: func(ctx context.Context, fn func(wire.Change)) error {
			fn(wire.Change{TaskID: "t-42", Task: waiting})
			<-ctx.Done()
			return nil
		},
		QuestionsFunc: func(context.Context, wire.PageOptions) (wire.QuestionPage, error) {
			return wire.QuestionPage{Questions: []wire.QuestionView{{TaskID: "t-42", Round: 1, DispatchID: "t-42-r1", Subagent: "triage",
				Question: question.Question, Options: question.Options, AskedAt: asked, Action: "agora answer t-42 bug"}}}, nil
		},
		AnswerFunc: func(_ context.Context, req wire.AnswerRequest) (*wire.Task, error) {
			mu.Lock()
			defer mu.Unlock()
			if answer != nil {
				return nil, fmt.Errorf("task t-42 round 1: %w by %s via %s at %s (answer %q)", wire.ErrAlreadyAnswered,
					answer.By, answer.Channel, answer.At.Format(time.RFC3339), answer.Value)
			}
			answer = &wire.Answer{Value: req.Answer, By: req.By, Channel: req.Channel, At: asked.Add(5 * time.Minute)}
			r1 := round1
			r1.Answer = answer
			return &wire.Task{ID: "t-42", State: wire.StateQueued, Rounds: []wire.Round{r1,
				{N: 2, DispatchID: "t-42-r2", State: wire.StateQueued}}}, nil
		},
	}
	h, err := api.NewHandler(api.Config{Service: svc, Tokens: []string{"ci-bot:s3cret:answerer"}})
	if err != nil {
		log.Fatal(err)
	}
	return httptest.NewServer(h)
}

func ExampleClient_Submit() {
	srv := exampleAPI()
	defer srv.Close()
	ctx := context.Background()

	c := client.New(srv.URL, "s3cret")
	task, err := c.Submit(ctx, wire.SubmitRequest{
		TaskID:   "t-42", // a retry with the same id and request returns the same task
		Subagent: schemas.Subagent{Name: "triage", Runtime: schemas.RuntimeExec, Command: []string{"./triage.sh"}},
		Input:    json.RawMessage(`{"issue": 1234}`),
		Route:    "memory,human=24h",
		Labels:   map[string]string{"pipeline": "nightly"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(task.ID, task.State)
	fmt.Println(task.Attention.Summary)
	// Output:
	// t-42 queued
	// round 1 queued for a runner slot; no action needed
}

func ExampleClient_Wait() {
	srv := exampleAPI()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()

	c := client.New(srv.URL, "s3cret")
	// Wait returns when the task needs input or has ended.
	task, err := c.Wait(ctx, "t-42")
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case task.State == wire.StateNeedsInput:
		q := task.Rounds[len(task.Rounds)-1].Question
		fmt.Println("asks:", q.Question, q.Options)
		fmt.Println("next:", task.Attention.Action)
	case task.State == wire.StateFinished:
		fmt.Println("done")
	default:
		fmt.Println("ended", task.State)
	}
	// Output:
	// asks: Bug or feature? [bug feature]
	// next: agora answer t-42 bug
}

func ExampleClient_Answer() {
	srv := exampleAPI()
	defer srv.Close()
	ctx := context.Background()

	c := client.New(srv.URL, "s3cret")
	// Every open question, following the pages (Questions reads one).
	questions, err := c.QuestionsAll(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range questions {
		fmt.Printf("%s round %d: %s %v\n", q.TaskID, q.Round, q.Question, q.Options)
	}

	// The token is named ci-bot, so ci-bot answers.
	task, err := c.Answer(ctx, wire.AnswerRequest{TaskID: "t-42", Round: 1, Answer: "bug"})
	if err != nil {
		log.Fatal(err)
	}
	a := task.Rounds[0].Answer
	fmt.Printf("%s by %s via %s; round %d %s\n", a.Value, a.By, a.Channel, len(task.Rounds), task.State)

	// The first answer wins.
	_, err = c.Answer(ctx, wire.AnswerRequest{TaskID: "t-42", Answer: "feature", By: "alice"})
	fmt.Println(errors.Is(err, wire.ErrAlreadyAnswered))
	fmt.Println(err)
	// Output:
	// t-42 round 1: Bug or feature? [bug feature]
	// bug by ci-bot via api; round 2 queued
	// true
	// agora api: task t-42 round 1: question already answered by ci-bot via api at 2025-06-01T10:05:00Z (answer "bug") (HTTP 409, already_answered)
}

func ExampleError() {
	srv := exampleAPI()
	defer srv.Close()

	c := client.New(srv.URL, "s3cret")
	_, err := c.Get(context.Background(), "t-7")
	fmt.Println(errors.Is(err, wire.ErrNotFound))
	if apiErr, ok := errors.AsType[*client.Error](err); ok {
		fmt.Println(apiErr.Status, apiErr.Code, apiErr.Message)
	}
	// Output:
	// true
	// 404 not_found task t-7: task not found
}
