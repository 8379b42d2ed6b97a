package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
)

// TestBatchSubmitGroupsErrors: 400 lines with the same mistake are one
// line of the summary, with their count and first line numbers, not 400.
func TestBatchSubmitGroupsErrors(t *testing.T) {
	t.Parallel()
	h, err := api.NewHandler(api.Config{Service: &apitest.Service{
		ListFunc: func(context.Context, orchestrator.ListOptions) (orchestrator.TaskPage, error) {
			return orchestrator.TaskPage{}, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	lines := make([]string, 401)
	for i := range lines {
		lines[i] = `{"subagnt":{"name":"echoer"}}`
	}
	lines[4] = `not json`
	file := batchFile(t, t.TempDir(), "typos.jsonl", lines...)
	r := agora(t, []string{"AGORA_SERVER=" + srv.URL}, "batch", "submit", file)
	for _, want := range []string{
		"401 lines · 0 submitted · 0 already there · 401 failed\nfailed:\n" +
			`  lines 1, 2, 3, 4, 6, 7, 8, 9 … (400 lines): unknown field "subagnt"; the submit request's fields are`,
		"\n  line 5: bad JSON: invalid character 'o' in literal null (expecting 'u')\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("batch submit of 400 identical mistakes: stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if want := "\nagora batch submit: 401 of 401 lines failed (lines 1, 2, 3, 4, 5, 6, 7, 8 … (401 lines)); fix them"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("batch submit of 400 identical mistakes: %s; want exit 1 and %q", r, want)
	}
	if n := strings.Count(r.stdout, "subagnt"); n != 1 {
		t.Errorf("the summary names the mistake %d times; want once:\n%s", n, r.stdout)
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
		if got := lineList(tt.lines); got != tt.want {
			t.Errorf("lineList(%v) = %q, want %q", tt.lines, got, tt.want)
		}
	}
}
