package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/wire"
)

// TestListVerbsPage: status and questions show one page by default and
// say how to see the rest; --cursor gives the next page, --limit sizes
// it, --all follows every page; --json carries next_cursor.
func TestListVerbsPage(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	env := s.env
	for i := range 5 {
		s.submit(t, fmt.Sprintf("pg-%d", i))
	}
	for i := range 3 {
		id := fmt.Sprintf("ask-%d", i)
		s.submit(t, id)
		s.ask(t, id, fmt.Sprintf("Question %d?", i), "yes", "no")
	}

	r := agora(t, env, "status", "--limit", "3")
	r.want(t, "status --limit 3", 0, []string{"5 queued · 3 needs input", "3 tasks shown; more: 'agora status --limit 3 --cursor "}, nil)
	if n := strings.Count(r.stdout, "agora logs pg-") + strings.Count(r.stdout, "agora answer ask-"); n != 3 {
		t.Errorf("status --limit 3 shows %d tasks, want 3:\n%s", n, r.stdout)
	}
	cursor := r.stdout[strings.Index(r.stdout, "--cursor ")+len("--cursor "):]
	cursor = cursor[:strings.IndexByte(cursor, '\'')]
	next := agora(t, env, "status", "--limit", "3", "--cursor", cursor)
	next.want(t, "status, the next page", 0, []string{"agora logs pg-4", "agora logs pg-3", "agora logs pg-2", "more: "}, nil)
	if strings.Contains(next.stdout, "ask-") {
		t.Errorf("the second page repeats the first:\n%s", next.stdout)
	}

	all := agora(t, env, "status", "--all")
	all.want(t, "status --all", 0, []string{"agora logs pg-0", "agora answer ask-0"}, nil)
	if strings.Contains(all.stdout, "more:") {
		t.Errorf("status --all still offers more:\n%s", all.stdout)
	}
	if def := agora(t, env, "status"); strings.Contains(def.stdout, "more:") || !strings.Contains(def.stdout, "pg-0") {
		t.Errorf("status with 8 tasks and the default page of 100:\n%s", def.stdout)
	}

	var page wire.TaskList
	r = agora(t, env, "status", "--json", "--limit", "2", "--state", "queued")
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Tasks) != 2 || page.NextCursor == "" || page.Summary.Counts["queued"] != 5 {
		t.Errorf("status --json --limit 2 --state queued = %v (%v); want 2 tasks, a next_cursor and the counts", r, err)
	}
	r = agora(t, env, "status", "--json", "--all", "--state", "queued")
	page = wire.TaskList{}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Tasks) != 5 || page.NextCursor != "" {
		t.Errorf("status --json --all --state queued = %v (%v); want 5 tasks, no next_cursor", r, err)
	}

	r = agora(t, env, "questions", "--limit", "2")
	r.want(t, "questions --limit 2", 0, []string{"ask-0", "ask-1", "2 questions shown; more: 'agora questions --limit 2 --cursor "}, nil)
	if strings.Contains(r.stdout, "ask-2") {
		t.Errorf("questions --limit 2 shows a third:\n%s", r.stdout)
	}
	agora(t, env, "questions", "--all").want(t, "questions --all", 0, []string{"ask-0", "ask-1", "ask-2"}, nil)
	var qs wire.QuestionList
	r = agora(t, env, "questions", "--json", "--limit", "1")
	if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil || len(qs.Questions) != 1 || qs.Questions[0].TaskID != "ask-0" || qs.NextCursor == "" {
		t.Errorf("questions --json --limit 1 = %v (%v)", r, err)
	}

	for _, args := range [][]string{
		{"status", "--limit", "1001"},
		{"status", "--limit", "-1"},
		{"status", "--all", "--limit", "5"},
		{"questions", "--all", "--cursor", "x"},
		{"questions", "--group", "--limit", "2"},
	} {
		if r := agora(t, env, args...); r.code != 2 {
			t.Errorf("%v: %v; want a usage error (exit 2)", args, r)
		}
	}
	agora(t, env, "status", "--cursor", "garbage").want(t, "status with a bad cursor", 2, nil, []string{"cursor"})
}

// TestRegistryListPages: subagent list and show --versions page like the
// task lists; --json stays an array, with the hint on stderr.
func TestRegistryListPages(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	for _, name := range []string{"a1", "a2", "a3"} {
		data, _ := json.Marshal(wire.Env{Name: name, Values: map[string]string{"K": name}})
		file := filepath.Join(t.TempDir(), "env.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		agora(t, s.env, "env", "register", file).want(t, "register "+name, 0, nil, nil)
	}
	r := agora(t, s.env, "env", "list", "--limit", "2")
	r.want(t, "env list --limit 2", 0, []string{"a1", "a2", "2 names shown; more: 'agora env list --cursor "}, nil)
	if strings.Contains(r.stdout, "a3") {
		t.Errorf("env list --limit 2 shows a3:\n%s", r.stdout)
	}
	r = agora(t, s.env, "env", "list", "--json", "--limit", "2")
	var entries []*wire.Entry
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil || len(entries) != 2 || !strings.Contains(r.stderr, "more:") {
		t.Errorf("env list --json --limit 2 = %v (%v); want an array of 2 and the hint on stderr", r, err)
	}
	r = agora(t, s.env, "env", "list", "--json", "--all")
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil || len(entries) != 3 || r.stderr != "" {
		t.Errorf("env list --json --all = %v (%v); want an array of 3", r, err)
	}
	agora(t, s.env, "env", "show", "a1", "--versions", "--all").want(t, "env show --versions --all", 0, []string{"a1"}, nil)
	if r := agora(t, s.env, "env", "show", "a1", "--limit", "2"); r.code != 2 {
		t.Errorf("env show without --versions but with --limit: %v; want a usage error", r)
	}
}
