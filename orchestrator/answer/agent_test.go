package answer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/answertest"
)

// fakeRunner is a hand-written AgentRunner: RunAgentFunc does the work.
type fakeRunner struct {
	RunAgentFunc func(ctx context.Context, subagent string, input json.RawMessage) (answer.AgentResult, error)
}

func (f fakeRunner) RunAgent(ctx context.Context, subagent string, input json.RawMessage) (answer.AgentResult, error) {
	return f.RunAgentFunc(ctx, subagent, input)
}

func TestAgentAsk(t *testing.T) {
	t.Parallel()
	withOptions := answer.Question{TaskID: "t-1", Round: 3, Subagent: "coder", Question: "A or B?", Options: []string{"A", "B"}, Context: "both compile"}
	freeText := answer.Question{TaskID: "t-2", Round: 1, Subagent: "coder", Question: "Which branch?"}
	tests := []struct {
		name    string
		q       answer.Question
		result  answer.AgentResult
		runErr  error
		want    string // outcome
		wantAns string
		wantBy  string
		wantErr string
	}{
		{name: "answer.json object", q: withOptions, result: answer.AgentResult{Output: `{"answer": "B"}`, LastLine: "A", TaskID: "t-9"},
			want: "answered", wantAns: "B", wantBy: "agent triage (task t-9)"},
		{name: "answer.json string", q: withOptions, result: answer.AgentResult{Output: `"a"` + "\n", TaskID: "t-9"},
			want: "answered", wantAns: "A", wantBy: "agent triage (task t-9)"},
		{name: "answer.json plain text", q: freeText, result: answer.AgentResult{Output: "main\n", TaskID: "t-9"},
			want: "answered", wantAns: "main", wantBy: "agent triage (task t-9)"},
		{name: "last stdout line", q: withOptions, result: answer.AgentResult{LastLine: "  B  ", TaskID: "t-9"},
			want: "answered", wantAns: "B", wantBy: "agent triage (task t-9)"},
		{name: "last stdout line as JSON", q: freeText, result: answer.AgentResult{LastLine: `{"answer":"release-1.2"}`},
			want: "answered", wantAns: "release-1.2", wantBy: "agent triage"},
		{name: "index", q: withOptions, result: answer.AgentResult{LastLine: "2", TaskID: "t-9"},
			want: "answered", wantAns: "B", wantBy: "agent triage (task t-9)"},
		{name: "empty answer", q: withOptions, result: answer.AgentResult{TaskID: "t-9"},
			want: "declined", wantErr: "no answer"},
		{name: "empty answer field", q: freeText, result: answer.AgentResult{Output: `{"answer": " "}`},
			want: "declined", wantErr: "no answer"},
		{name: "not among the options", q: withOptions, result: answer.AgentResult{Output: `{"answer": "C"}`, TaskID: "t-9"},
			want: "declined", wantErr: `agent triage (task t-9): answer.json: answer "C" is not one of: A, B (or 1-2)`},
		{name: "answer.json of the wrong shape", q: withOptions, result: answer.AgentResult{Output: `{"choice": "A"}`},
			want: "declined", wantErr: `answer.json: want {"answer": "…"}`},
		{name: "answer.json broken", q: withOptions, result: answer.AgentResult{Output: `{"answer": `},
			want: "declined", wantErr: "answer.json"},
		{name: "runner fails", q: withOptions, runErr: errors.New("task t-9 failed: provider-failed"),
			want: "error", wantErr: "agent triage: task t-9 failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var gotSub string
			var gotInput map[string]any
			run := fakeRunner{RunAgentFunc: func(ctx context.Context, subagent string, input json.RawMessage) (answer.AgentResult, error) {
				gotSub = subagent
				if err := json.Unmarshal(input, &gotInput); err != nil {
					t.Errorf("input %s: %v", input, err)
				}
				return tt.result, tt.runErr
			}}
			got, err := answer.NewAgent("triage", run).WithLogger(testLogger(t)).Ask(t.Context(), tt.q)
			if outcome(err) != tt.want {
				t.Fatalf("Ask = %+v, %v; want %s", got, err, tt.want)
			}
			if tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Ask error = %q; want it to contain %q", err, tt.wantErr)
			}
			if tt.want == "answered" && (got.Answer != tt.wantAns || got.By != tt.wantBy) {
				t.Errorf("Ask = %+v; want %q by %q", got, tt.wantAns, tt.wantBy)
			}
			if gotSub != "triage" {
				t.Errorf("RunAgent subagent = %q; want triage", gotSub)
			}
			for _, k := range []string{"question", "options", "context", "task_id", "round", "subagent"} {
				if _, ok := gotInput[k]; !ok {
					t.Errorf("input %v has no %q", gotInput, k)
				}
			}
			if gotInput["question"] != tt.q.Question || gotInput["task_id"] != tt.q.TaskID || gotInput["subagent"] != "coder" || gotInput["round"] != float64(tt.q.Round) {
				t.Errorf("input = %v; want the question of %+v", gotInput, tt.q)
			}
			if opts, _ := gotInput["options"].([]any); len(opts) != len(tt.q.Options) {
				t.Errorf("input options = %v; want %q", gotInput["options"], tt.q.Options)
			}
		})
	}
}

func TestAgentRespectsContext(t *testing.T) {
	t.Parallel()
	run := fakeRunner{RunAgentFunc: func(ctx context.Context, _ string, _ json.RawMessage) (answer.AgentResult, error) {
		<-ctx.Done() // the sub-agent runs longer than the step allows
		return answer.AgentResult{}, ctx.Err()
	}}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := answer.NewAgent("slow", run).Ask(ctx, answer.Question{Question: "?"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ask past the step timeout = %v; want context.DeadlineExceeded", err)
	}
}

func TestAgentContract(t *testing.T) {
	t.Parallel()
	run := fakeRunner{RunAgentFunc: func(context.Context, string, json.RawMessage) (answer.AgentResult, error) {
		return answer.AgentResult{Output: `{"answer":"b"}`, TaskID: "t-5"}, nil
	}}
	answertest.Answerer(t, answer.NewAgent("triage", run), answer.Question{Question: "A or B?", Options: []string{"A", "B"}}, time.Second)
}
