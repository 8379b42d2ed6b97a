package answer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/answertest"
)

func TestHumanAsk(t *testing.T) {
	t.Parallel()
	q := answer.Question{TaskID: "t-4", Round: 1, Question: "Deploy now?"}
	tests := []struct {
		name      string
		notifyErr error
		nilNotify bool
		wantErr   string
	}{
		{name: "notifies and waits"},
		{name: "no notifier", nilNotify: true},
		{name: "notify fails: still pending, failure reported", notifyErr: errors.New("slack down"), wantErr: "notify failed: slack down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var notified []answer.Question
			notify := func(_ context.Context, q answer.Question) error {
				notified = append(notified, q)
				return tt.notifyErr
			}
			if tt.nilNotify {
				notify = nil
			}
			got, err := answer.NewHuman(notify).Ask(t.Context(), q)
			if outcome(err) != "pending" || got != (answer.Reply{}) {
				t.Fatalf("Ask = %+v, %v; want pending", got, err)
			}
			if tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Ask error = %q; want it to contain %q", err, tt.wantErr)
			}
			if tt.notifyErr != nil && !errors.Is(err, tt.notifyErr) {
				t.Errorf("Ask error = %v; want it to wrap %v", err, tt.notifyErr)
			}
			if !tt.nilNotify && (len(notified) != 1 || notified[0].TaskID != "t-4") {
				t.Errorf("notify calls = %+v; want one with the question", notified)
			}
		})
	}
}

func TestHumanContract(t *testing.T) {
	t.Parallel()
	answertest.Answerer(t, answer.NewHuman(nil), answer.Question{Question: "?"}, time.Second)
}
