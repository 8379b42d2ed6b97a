package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/wire"
)

// TestBatchSubmitGroupsErrors: 400 lines with the same mistake are one
// line of the summary, with their count and first line numbers, not 400.
func TestBatchSubmitGroupsErrors(t *testing.T) {
	t.Parallel()
	h, err := api.NewHandler(api.Config{Service: &apitest.Service{
		ListFunc: func(context.Context, wire.ListOptions) (wire.TaskPage, error) {
			return wire.TaskPage{}, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openapitest.Handler(t, h, openapitest.Lenient))
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
			`  lines 1, 2, 3, 4, 6, 7, 8, 9 … (400 lines): unknown field "subagnt" (known: allow_memory, capabilities,`,
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

// TestBatchResubmitNamesWhatDiffers: running a batch file again with
// another --route fails every line as a conflict, and the summary says so
// once, naming the field with both values and what to do; a field whose
// values vary by line is named without them.
func TestBatchResubmitNamesWhatDiffers(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := t.TempDir()
	lines := make([]string, 40)
	for i := range lines {
		lines[i] = echo(strconv.Itoa(i + 1))
	}
	file := batchFile(t, dir, "forty.jsonl", lines...)
	agora(t, s.env, "batch", "submit", file, "--route", "human").want(t, "the first run", 0, []string{"40 submitted"}, nil)

	r := agora(t, s.env, "batch", "submit", file, "--route", "memory,human")
	want := `  lines 1, 2, 3, 4, 5, 6, 7, 8 … (40 lines): 40 tasks: task id already used for a different request (route differs: stored "human", now "memory,human"); ` +
		"submit them under a new batch id (--batch forty-2), or remove the batch's tasks first (agora rm --batch forty --yes)\n"
	if r.code != 1 || !strings.Contains(r.stdout, "40 lines · 0 submitted · 0 already there · 40 failed\nfailed:\n"+want) {
		t.Errorf("batch submit with another --route: %v\nwant stdout with %q", r, want)
	}
	if n := strings.Count(r.stdout, "already used"); n != 1 {
		t.Errorf("the conflict is told %d times; want once:\n%s", n, r.stdout)
	}

	// The input changed on every line, and the route: the input is named
	// without values, the route with them.
	for i := range lines {
		lines[i] = echo(strconv.Itoa(i + 100))
	}
	batchFile(t, dir, "forty.jsonl", lines...)
	r = agora(t, s.env, "batch", "submit", file, "--route", "memory,human", "--json")
	var rep batchreport.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("batch submit --json: %v: %v", r, err)
	}
	c := rep.Results[0].Conflict
	if c == nil || len(c.Differences) != 2 || c.Differences[0] != (wire.Difference{Field: "input.n", Stored: "1", Now: "100"}) ||
		c.Differences[1] != (wire.Difference{Field: "route", Stored: `"human"`, Now: `"memory,human"`}) {
		t.Errorf("--json conflict of line 1 = %+v; want input.n 1 → 100 and route", c)
	}
	r = agora(t, s.env, "batch", "submit", file, "--route", "memory,human")
	if want := `40 tasks: task id already used for a different request (input.n differs (line by line); route differs: stored "human", now "memory,human")`; !strings.Contains(r.stdout, want) {
		t.Errorf("batch submit with other inputs and route: %v\nwant %q", r, want)
	}
}
