package view

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

func TestWords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, got, want string
	}{
		{"ms", HumanDuration(850 * time.Millisecond), "850ms"},
		{"negative", HumanDuration(-time.Second), "0ms"},
		{"seconds", HumanDuration(12 * time.Second), "12s"},
		{"minutes", HumanDuration(4*time.Minute + 5*time.Second), "4m05s"},
		{"hours", HumanDuration(2*time.Hour + 3*time.Minute), "2h03m"},
		{"days", HumanDuration(76 * time.Hour), "3d04h"},
		{"clip short", Clip("a  b\nc", 10), "a b c"},
		{"clip long", Clip("abcdefgh", 4), "abc…"},
		{"shell word plain", ShellWord("team=ops"), "team=ops"},
		{"shell word quoted", ShellWord("it's x"), `'it'\''s x'`},
		{"task list", TaskList([]string{"t-1", "t-2", "t-3"}, 8), "t-1,t-2,… (+1)"},
		{"task list fits", TaskList([]string{"t-1", "t-2"}, 8), "t-1,t-2"},
		{"round", RoundText(&wire.Round{N: 2, Attempt: 3}), "2 (attempt 3)"},
		{"no round", RoundText(nil), "-"},
		{"state", StateLabel(wire.StateNeedsInput), "needs input"},
		{"or dash", OrDash(""), "-"},
		{"plural", PluralS(2), "s"},
		{"words", strings.Join(Words("agora status", "--state", "failed", "--label", "team=a b", "--limit", ""), " "), "agora status --state failed --label 'team=a b'"},
		{"replay matched", ReplayVerdict(&wire.Task{ID: "r", Replay: &wire.Replay{Verdict: wire.ReplayMatched}}), ""},
		{"replay not a replay", ReplayVerdict(&wire.Task{ID: "r", State: wire.StateFailed}), "replay r diverged: ended failed; 'agora status r' shows its timeline"},
		{"filter none", FilterText("", "", wire.TaskPage{}), ""},
		{"filter state", FilterText("failed", "", wire.TaskPage{Summary: wire.Summary{Counts: map[wire.State]int{wire.StateFailed: 3, wire.StateFinished: 9}}}),
			"showing failed: 3 of 12 tasks"},
		{"filter label, more pages", FilterText("", "a=b", wire.TaskPage{Tasks: []*wire.Task{{}}, NextCursor: "c",
			Summary: wire.Summary{Counts: map[wire.State]int{wire.StateFinished: 1}}}), "showing labelled a=b: at least 1 of 1 task"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestPaint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		u    UI
		want string
	}{
		{UI{}, "x"},
		{UI{TTY: true}, "x"},
		{UI{TTY: true, Color: true}, "\x1b[1mx\x1b[0m"},
	} {
		if got := tt.u.Paint(Bold, "x"); got != tt.want {
			t.Errorf("%+v.Paint = %q, want %q", tt.u, got, tt.want)
		}
	}
}

func TestBulkSummary(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	BulkSummary(&b, "cancelled", "already ended", BulkReport{Selector: "--batch b", Matched: 4, LeftAlone: 1, Done: 1, Skipped: 1, Failed: 1,
		Results: []client.BulkItem{{TaskID: "t-1", Result: client.BulkDone}, {TaskID: "t-2", Result: client.BulkSkipped},
			{TaskID: "t-3", Result: "failed", Error: "t-3: boom"}}})
	want := "cancelled 1 of 4 tasks (--batch b) · 1 already ended, left alone · 1 skipped · 1 failed\n" +
		"  skipped, 1 task (t-2): its state changed meanwhile\n  failed, 1 task (t-3): …: boom\n"
	if b.String() != want {
		t.Errorf("BulkSummary =\n%s\nwant\n%s", b.String(), want)
	}
}
