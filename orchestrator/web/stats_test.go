package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/web"
	"github.com/agoradev/agora/wire"
)

// statsStub is the stand-in service with stats: it answers Stats with st
// and keeps the options each call gave.
type statsStub struct {
	*stubService
	st   wire.Stats
	mu   sync.Mutex
	opts []wire.StatsOptions
}

func (s *statsStub) Stats(_ context.Context, opts wire.StatsOptions) (wire.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	return s.st, nil
}

func (s *statsStub) lastOpts() wire.StatsOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts[len(s.opts)-1]
}

// statsFixture serves the pages of a statsStub at a fixed clock.
func statsFixture(t *testing.T, now time.Time) (*statsStub, *httptest.Server) {
	t.Helper()
	svc := &statsStub{stubService: &stubService{tasks: map[string]*wire.Task{}, outputs: map[string]string{}}, st: sampleStats()}
	auth, err := api.NewAuth(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(web.Config{Service: svc, Auth: auth, Logger: natstest.Logger(t), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return svc, srv
}

func sampleStats() wire.Stats {
	painter := wire.SubagentStats{Subagent: "painter", Tasks: 3, EndedTasks: 3, Questions: 6, QuestionsPerTask: 2,
		WithOptions: 3, WithOptionsShare: 0.5, WithDefault: 3, WithDefaultShare: 0.5, Answered: 5, AnsweredWithDefault: 3,
		DefaultTaken: 2, DefaultTakenShare: 2.0 / 3, DefaultAssumed: 1,
		AnswerWait: wire.Durations{Count: 5, MedianMS: 90_000, P90MS: 3_600_000, MaxMS: 3_600_000, TotalMS: 3_900_000},
		Rounds:     8, Dispatches: 8, RoundsPerTask: wire.Distribution{Count: 3, Mean: 8.0 / 3, Median: 3, P90: 3, Max: 3},
		ColdStart: wire.Durations{Count: 8, MedianMS: 1200, P90MS: 2500, MaxMS: 2600, TotalMS: 12_000},
		Usage:     &wire.UsageStats{Tasks: 3, InputTokens: 3000, OutputTokens: 1500, CostUSD: 0.75, TokensPerTask: 1500, CostPerTaskUSD: 0.25}}
	quiet := wire.SubagentStats{Subagent: strings.Repeat("linter-", 20), Tasks: 1, EndedTasks: 1, Rounds: 1, Dispatches: 1,
		RoundsPerTask: wire.Distribution{Count: 1, Mean: 1, Median: 1, P90: 1, Max: 1}, ColdStart: wire.Durations{Count: 1, MedianMS: 900, P90MS: 900, MaxMS: 900, TotalMS: 900}}
	total := painter
	total.Subagent, total.Tasks, total.EndedTasks, total.QuestionsPerTask, total.Rounds, total.Dispatches = "", 4, 4, 1.5, 9, 9
	return wire.Stats{Total: total, Subagents: []wire.SubagentStats{painter, quiet}, OmittedSubagents: 2}
}

// TestStatsPage: the page asks the service for what its filters say and
// shows the numbers; a period it does not offer is a 400 naming the
// ones it does.
func TestStatsPage(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	svc, srv := statsFixture(t, now)
	resp, err := http.Get(srv.URL + "/stats?subagent=painter&batch=b-7&since=7d")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /stats: %d %s", resp.StatusCode, body)
	}
	if got, want := svc.lastOpts(), (wire.StatsOptions{Subagent: "painter", Label: wire.BatchLabel + "=b-7", Since: now.Add(-7 * 24 * time.Hour)}); got != want {
		t.Errorf("Stats(%+v), want %+v", got, want)
	}
	for _, want := range []string{
		`4 tasks asked 6 questions, which kept them waiting 1h 5m in all.`,
		`<td>50%</td>`, `67% <small>(1 assumed)</small>`, `1m 30s · 1h 0m`, `2.7 · 3`, `1s · 2s`, `1500 · $0.2500`,
		`href="/stats?batch=b-7&amp;since=7d&amp;subagent=painter"`, `2 more sub-agents`, `<option value="7d" selected>`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the stats page lacks %q", want)
		}
	}
	resp, err = http.Get(srv.URL + "/stats?since=yesterday")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "choose 24h, 7d or 30d") {
		t.Errorf("GET /stats?since=yesterday: %d %s; want 400 naming the periods", resp.StatusCode, body)
	}
}

// TestStatsPageInBrowser: in Chromium, the stats page shows the total and
// each sub-agent; a sub-agent's link shows its stats alone, keeping the
// filters; the form filters; at 390 px it does not scroll sideways.
func TestStatsPageInBrowser(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	svc, srv := statsFixture(t, now)
	c := newChrome(t, 1000, 800)
	c.do("load the stats page", chromedp.Navigate(srv.URL+"/?"), chromedp.WaitVisible(chromedp.CSS(`a[href="/stats"]`)))
	eval[bool](c, `(document.querySelector('a[href="/stats"]').click(), true)`)
	c.do("follow the header's stats link", chromedp.WaitVisible(chromedp.CSS("#stats-table")))
	rows := eval[[]string](c, `[...document.querySelectorAll("#stats-table tbody tr")].map(r => r.dataset.subagent + ": " + r.cells[1].textContent + " tasks, " + r.cells[5].textContent)`)
	want := []string{": 4 tasks, 67% (1 assumed)", "painter: 3 tasks, 67% (1 assumed)", strings.Repeat("linter-", 20) + ": 1 tasks, –"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	// The form: a batch and a period.
	eval[bool](c, `(document.querySelector('input[name="batch"]').value = "b-9", document.querySelector('select[name="since"]').value = "24h", document.querySelector(".filters button").click(), true)`)
	// The new page is the one whose form shows the filter.
	c.do("the filtered page", chromedp.WaitVisible(chromedp.CSS(`input[name="batch"][value="b-9"]`)))
	if got := svc.lastOpts(); got.Label != wire.BatchLabel+"=b-9" || got.Subagent != "" || got.Since.IsZero() {
		t.Errorf("after the form: Stats(%+v), want batch b-9 of the last 24 hours", got)
	}
	eval[bool](c, `(document.querySelector('tr[data-subagent="painter"] a').click(), true)`)
	c.do("painter's page", chromedp.WaitVisible(chromedp.CSS(`input[name="subagent"][value="painter"]`)))
	if got := svc.lastOpts(); got.Subagent != "painter" || got.Label != wire.BatchLabel+"=b-9" || got.Since.IsZero() {
		t.Errorf("after painter's link: Stats(%+v), want painter, still batch b-9 of the last 24 hours", got)
	}

	// With AGORA_SCREENSHOTS=DIR, the picture docs/stats.md shows.
	if dir := os.Getenv("AGORA_SCREENSHOTS"); dir != "" {
		c.do("load the stats page", chromedp.Navigate(srv.URL+"/stats"), chromedp.WaitVisible(chromedp.CSS("#stats-table")))
		ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			t.Fatalf("screenshot /stats: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stats.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	phone := newChrome(t, 390, 844)
	phone.do("load the stats page at 390 px", chromedp.Navigate(srv.URL+"/stats"), chromedp.WaitVisible(chromedp.CSS("#stats-table")))
	sizes := eval[[]int](phone, `[document.documentElement.scrollWidth, document.documentElement.clientWidth, document.body.scrollWidth]`)
	if sizes[1] != 390 || sizes[0] > sizes[1] || sizes[2] > sizes[1] {
		t.Errorf("/stats at 390 px: scrollWidth %d (body %d) > clientWidth %d: the page scrolls sideways", sizes[0], sizes[2], sizes[1])
	}
}
