package view

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/wire"
)

// TestQuestionsIfUnanswered: the questions table says, for each of the
// three actions, what happens if nobody answers and when — computed from
// At as of now, not from the server's Text.
func TestQuestionsIfUnanswered(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 14, 0, 50, 0, time.UTC)
	at := time.Date(2026, 11, 26, 14, 5, 0, 0, time.UTC)
	tests := []struct {
		iu   *wire.IfUnanswered
		want string
	}{
		{&wire.IfUnanswered{At: at, Action: wire.IfUnansweredDefault, Default: "draft", Text: "stale"}, "default draft at 14:05 UTC (in 4m10s)"},
		{&wire.IfUnanswered{At: at, Action: wire.IfUnansweredEscalate, Next: "human", Text: "stale"}, "goes to human at 14:05 UTC (in 4m10s)"},
		{&wire.IfUnanswered{At: at, Action: wire.IfUnansweredExpire, Text: "stale"}, "expires at 14:05 UTC (in 4m10s)"},
		{&wire.IfUnanswered{At: now.Add(-90 * time.Second), Action: wire.IfUnansweredExpire}, "expires at 13:59 UTC (1m30s ago)"},
		{&wire.IfUnanswered{At: at.Add(24 * time.Hour), Action: wire.IfUnansweredExpire}, "expires at Nov 27 14:05 UTC (in 1d00h)"},
		{&wire.IfUnanswered{At: at, Action: wire.IfUnansweredExpire, Text: "at 13:00 UTC it expires (no default)"}, "expires (no default) at 14:05 UTC (in 4m10s)"},
		{&wire.IfUnanswered{At: at, Action: wire.IfUnansweredExpire, Text: "at 2026-11-25 13:00 UTC it fails: the task's total wait for answers (limits.max_wait_seconds) runs out"},
			"fails: the task's total wait for answers (limits.max_wait_seconds) runs out at 14:05 UTC (in 4m10s)"},
		{nil, "-"},
	}
	for _, tt := range tests {
		var b strings.Builder
		UI{}.Questions(&b, []wire.QuestionView{{TaskID: "t1", Round: 1, Question: "Publish?", Options: []string{"publish", "draft"},
			Action: "agora answer t1 publish", IfUnanswered: tt.iu}}, now)
		if !strings.Contains(b.String(), "IF UNANSWERED") || !strings.Contains(b.String(), tt.want) || strings.Contains(b.String(), "stale") {
			t.Errorf("questions table with %+v:\n%s\nwant %q", tt.iu, b.String(), tt.want)
		}
	}
}
