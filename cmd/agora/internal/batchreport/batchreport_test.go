package batchreport

import (
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

func TestIDFromFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ file, want string }{
		{"/x/nightly run.v2.jsonl", "nightly-run-v2"},
		{"tasks.jsonl", "tasks"},
		{"tasks", "tasks"},
		{".hidden", "hidden"},
		{"dir/-_x.jsonl", "x"},
		{"été.jsonl", "t-"},
	} {
		if got := IDFromFile(tt.file); got != tt.want {
			t.Errorf("IDFromFile(%q) = %q, want %q", tt.file, got, tt.want)
		}
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{"nightly", true},
		{"n_1-2", true},
		{"", false},
		{"-x", false},
		{"a b", false},
		{strings.Repeat("a", 80), true},
		{strings.Repeat("a", 81), false},
	} {
		if got := ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestLineList(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		lines []int
		want  string
	}{
		{[]int{3}, "line 3"},
		{[]int{3, 5, 9}, "lines 3, 5, 9"},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8}, "lines 1, 2, 3, 4, 5, 6, 7, 8"},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9}, "lines 1, 2, 3, 4, 5, 6, 7, 8 … (9 lines)"},
	} {
		if got := LineList(tt.lines); got != tt.want {
			t.Errorf("LineList(%v) = %q, want %q", tt.lines, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	r := Report{Results: []client.BatchLine{
		{Line: 1, Result: client.BatchSubmitted}, {Line: 2, Result: client.BatchExisting},
		{Line: 3, Result: client.BatchFailed}, {Line: 4}, {Line: 5, Result: client.BatchFailed},
	}}
	r.Count()
	if r.Submitted != 1 || r.Existing != 1 || r.Failed != 2 {
		t.Errorf("Count: %d submitted, %d existing, %d failed; want 1, 1, 2", r.Submitted, r.Existing, r.Failed)
	}
	if got, want := r.FailedLines(), "lines 3, 5"; got != want {
		t.Errorf("FailedLines = %q, want %q", got, want)
	}
}

// TestGroupFailures: one group per error and per set of conflicting
// fields, in the order of each one's first line; a field with the same two
// values on every line is shown with them, one that varies by its name.
func TestGroupFailures(t *testing.T) {
	t.Parallel()
	route := func(stored, now string) *client.Conflict {
		return &client.Conflict{Differences: []wire.Difference{{Field: "route", Stored: stored, Now: now}}}
	}
	r := Report{Batch: "b", Results: []client.BatchLine{
		{Line: 1, Result: client.BatchFailed, Error: "bad JSON"},
		{Line: 2, Result: client.BatchSubmitted},
		{Line: 3, Result: client.BatchFailed, TaskID: "b-3", Conflict: route(`"human"`, `"memory"`)},
		{Line: 4, Result: client.BatchFailed, Error: "bad JSON"},
		{Line: 5, Result: client.BatchFailed, TaskID: "b-5", Conflict: route(`"human"`, `"memory"`)},
		{Line: 6, Result: client.BatchFailed, TaskID: "x-6", Conflict: &client.Conflict{More: 2}},
	}}
	got := r.GroupFailures()
	if len(got) != 3 {
		t.Fatalf("GroupFailures = %+v; want 3 groups", got)
	}
	if got[0].Err != "bad JSON" || !slices.Equal(got[0].Lines, []int{1, 4}) {
		t.Errorf("group 1 = %+v; want bad JSON on lines 1, 4", got[0])
	}
	if !slices.Equal(got[1].Lines, []int{3, 5}) || !strings.HasPrefix(got[1].Err, "2 tasks: task id already used for a different request (route differs") ||
		!strings.Contains(got[1].Err, "--batch b-2") {
		t.Errorf("group 2 = %+v; want lines 3, 5, both tasks, the route and a new batch id", got[1])
	}
	if want := "task x-6: task id already used for a different request (and 2 more fields); give the line another task_id, or remove the task first (agora rm x-6)"; got[2].Err != want {
		t.Errorf("group 3 = %q, want %q", got[2].Err, want)
	}
	// Values that differ line by line are named, not shown.
	r.Results[4].Conflict = route(`"human"`, `"lookup"`)
	if g := r.GroupFailures()[1]; !strings.Contains(g.Err, "route differs (line by line)") {
		t.Errorf("varying values: %q; want the field named as varying", g.Err)
	}
}
