package view

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

// Replay prints what a replay found: its verdict and every divergence.
func Replay(w io.Writer, t *wire.Task) {
	rp := t.Replay
	if rp == nil {
		fmt.Fprintf(w, "%s is not a replay\n", t.ID)
		return
	}
	fmt.Fprintf(w, "%s replay of %s: %s (%s); %d question%s answered from the recording\n", t.ID, rp.Of, OrDash(rp.Verdict), StateLabel(t.State),
		rp.Matched, PluralS(rp.Matched))
	for _, d := range rp.Divergences {
		note := ""
		if !d.Fails(rp.Strict) {
			note = " (reported; --strict makes it fail)"
		}
		fmt.Fprintf(w, "  round %d  %s: %s%s\n", d.Round, d.Kind, d.Detail, note)
	}
}

// ClipList is s, cut to n items and a count of the rest.
func ClipList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
}

// Forked says what fork made of task from at req.Round: the new task t.
func Forked(w io.Writer, t *wire.Task, from string, req wire.ForkRequest) {
	given := req.Answer
	if t.Origin != nil {
		given = t.Origin.Answer // as the question's option spells it
	}
	fmt.Fprintf(w, "%s forks %s at round %d with %q: round %d %s; 'agora status %s' shows it, 'agora logs %s -f' follows it\n",
		t.ID, from, req.Round, given, req.Round+1, StateLabel(t.State), t.ID, t.ID)
}

// ReplayVerdict is "" for a matched replay, else the line that names its
// first divergence (or how it ended) and where its timeline is.
func ReplayVerdict(t *wire.Task) string {
	rp := t.Replay
	if rp != nil && rp.Verdict == wire.ReplayMatched {
		return ""
	}
	what := fmt.Sprintf("ended %s", StateLabel(t.State))
	if rp != nil {
		if d := rp.FirstFailing(); d != nil {
			what = d.Kind + ": " + d.Detail
		}
	}
	return fmt.Sprintf("replay %s diverged: %s; 'agora status %s' shows its timeline", t.ID, what, t.ID)
}

// ReplayBatchStarted says what replay --batch started, and the
// originals it could not replay.
func ReplayBatchStarted(w io.Writer, out wire.BatchReplay, batch string) {
	started := 0
	for _, r := range out.Replays {
		if r.Replay != "" {
			started++
		}
	}
	fmt.Fprintf(w, "batch %s replays %s: %d task%s started, %d not finished skipped; 'agora replay --batch %s --wait' summarises when they end\n",
		out.Batch, out.Of, started, PluralS(started), out.Skipped, batch)
	for _, r := range out.Replays {
		if r.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.Original, r.Error)
		}
	}
}

// ReplayBatch writes a line per replay of a batch — matched, its first
// divergence, or why it was not started or followed (finals and errs are
// FollowAll's) — and the counts; it returns the originals whose replay did
// not match.
func ReplayBatch(w io.Writer, out wire.BatchReplay, finals []*wire.Task, errs []error) (failed []string) {
	matched, failed := 0, []string{}
	for i, r := range out.Replays {
		line := ""
		switch {
		case r.Error != "":
			line = "not started: " + r.Error
		case errors.Is(errs[i], client.ErrRemoved):
			line = fmt.Sprintf("not followed: replay %s was removed while waiting for it", r.Replay)
		case errs[i] != nil:
			line = "not followed: " + errs[i].Error()
		case finals[i].Replay != nil && finals[i].Replay.Verdict == wire.ReplayMatched:
			matched++
			line = "matched"
		default:
			line = strings.TrimPrefix(ReplayVerdict(finals[i]), "replay ")
		}
		if line != "matched" {
			failed = append(failed, r.Original)
		}
		fmt.Fprintf(w, "%s → %s  %s\n", r.Original, OrDash(r.Replay), line)
	}
	fmt.Fprintf(w, "batch %s: %d of %d replay%s matched, %d diverged; %d task%s of %s not finished, not replayed\n",
		out.Batch, matched, len(out.Replays), PluralS(len(out.Replays)), len(out.Replays)-matched, out.Skipped, PluralS(out.Skipped), out.Of)
	return failed
}
