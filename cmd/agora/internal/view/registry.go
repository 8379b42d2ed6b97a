package view

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agoradev/agora/wire"
)

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// retryText is a retry policy in a line: "3 attempts on worker-lost,
// timeout; waits 10s, then ×2, at most 5m0s".
func retryText(p *wire.RetryPolicy) string {
	reasons := make([]string, len(p.On))
	for i, r := range p.On {
		reasons[i] = string(r)
	}
	mult, most := wire.DefaultBackoffMultiplier, wire.DefaultBackoffMaxSeconds
	if b := p.Backoff; b != nil {
		if b.Multiplier > 0 {
			mult = b.Multiplier
		}
		if b.MaxSeconds > 0 {
			most = b.MaxSeconds
		}
	}
	return fmt.Sprintf("%d attempts on %s; waits %s, then ×%g, at most %s", p.Attempts, strings.Join(reasons, ", "),
		p.Delay(2), mult, time.Duration(most)*time.Second)
}

// Entries writes registry entries of kind, one per row; latest marks each
// as its name's latest version.
func (u UI) Entries(w io.Writer, kind wire.Kind, entries []*wire.Entry, latest bool) {
	header := []string{"NAME", "VERSION", "SEQ", "REGISTERED"}
	switch kind {
	case wire.KindSubagent:
		header = append(header, "RUNTIME", "USES")
	case wire.KindCapability:
		header = append(header, "FILES", "SIZE")
	case wire.KindEnv:
		header = append(header, "VALUES", "SECRETS")
	}
	header = append(header, "DESCRIPTION")
	var rows [][]Cell
	for _, e := range entries {
		seq := fmt.Sprint(e.Seq)
		if latest {
			seq += " (latest)"
		}
		row := []Cell{{e.Name, Bold}, {e.Version, ""}, {seq, ""}, {e.CreatedAt.Local().Format(time.DateTime), Dim}}
		switch kind {
		case wire.KindSubagent:
			uses := "-"
			if s := e.Subagent; s != nil {
				if all := append(append([]string{}, s.Capabilities...), s.Env...); len(all) > 0 {
					uses = strings.Join(all, ", ")
				}
				row = append(row, Cell{string(s.Runtime), ""}, Cell{uses, ""})
			} else {
				row = append(row, Cell{"?", ""}, Cell{uses, ""})
			}
		case wire.KindCapability:
			row = append(row, Cell{fmt.Sprint(e.Files), ""}, Cell{humanBytes(e.Size), ""})
		case wire.KindEnv:
			nv, ns := 0, 0
			if e.Env != nil {
				nv, ns = len(e.Env.Values), len(e.Env.Secrets)
			}
			row = append(row, Cell{fmt.Sprint(nv), ""}, Cell{fmt.Sprint(ns), ""})
		}
		rows = append(rows, append(row, Cell{Clip(e.Description, 60), ""}))
	}
	u.Table(w, header, rows)
}

// Entry writes one entry in full, noun naming its kind ("sub-agent"). Env values are shown; secrets are refs,
// never values, so they are shown too.
func (u UI) Entry(w io.Writer, noun string, e *wire.Entry) {
	fmt.Fprintf(w, "%s %s · version %d · registered %s\n", noun, u.Paint(Bold, e.Ref()), e.Seq, e.CreatedAt.Local().Format(time.DateTime))
	fmt.Fprintf(w, "digest: %s\n", e.Digest)
	if e.Description != "" {
		fmt.Fprintf(w, "description: %s\n", e.Description)
	}
	switch {
	case e.Subagent != nil:
		s := e.Subagent
		fmt.Fprintf(w, "runtime: %s\n", s.Runtime)
		if len(s.Command) > 0 {
			fmt.Fprintf(w, "command: %s\n", strings.Join(s.Command, " "))
		}
		for _, kv := range [][2]string{{"model", s.Model}, {"route", s.Route}, {"image", s.Image}, {"network", s.Network}, {"workspace", s.Workspace}} {
			if kv[1] != "" {
				fmt.Fprintf(w, "%s: %s\n", kv[0], kv[1])
			}
		}
		if len(s.Egress) > 0 {
			fmt.Fprintf(w, "egress: %s\n", strings.Join(s.Egress, ", "))
		}
		if s.Prompt != "" {
			fmt.Fprintf(w, "prompt: %s\n", Clip(s.Prompt, 200))
		}
		if len(s.Capabilities) > 0 {
			fmt.Fprintf(w, "capabilities: %s\n", strings.Join(s.Capabilities, ", "))
		}
		if len(s.Env) > 0 {
			fmt.Fprintf(w, "env: %s\n", strings.Join(s.Env, ", "))
		}
		if s.TimeoutSeconds > 0 {
			fmt.Fprintf(w, "timeout: %s per round\n", HumanDuration(time.Duration(s.TimeoutSeconds)*time.Second))
		}
		if s.Limits != nil {
			fmt.Fprintf(w, "limits: max_rounds %d, max_wait_seconds %d\n", s.Limits.MaxRounds, s.Limits.MaxWaitSeconds)
		}
		if s.Retry != nil {
			fmt.Fprintf(w, "retry: %s\n", retryText(s.Retry))
		}
		fmt.Fprintf(w, "dispatch: %s\n", u.Paint(Bold, "agora dispatch --subagent "+e.Ref()))
	case e.Env != nil:
		for _, k := range slices.Sorted(maps.Keys(e.Env.Values)) {
			fmt.Fprintf(w, "value  %s=%s\n", k, e.Env.Values[k])
		}
		for _, k := range slices.Sorted(maps.Keys(e.Env.Secrets)) {
			fmt.Fprintf(w, "secret %s from %s\n", k, e.Env.Secrets[k])
		}
	default:
		fmt.Fprintf(w, "files: %d · %s\n", e.Files, humanBytes(e.Size))
	}
}

// Registered says what register did: a new version, or none.
func Registered(w io.Writer, noun string, reg wire.Registered) {
	e := reg.Entry
	if reg.Created {
		fmt.Fprintf(w, "registered %s %s (version %d)\n", noun, e.Ref(), e.Seq)
	} else {
		fmt.Fprintf(w, "%s %s is registered already (version %d); nothing changed\n", noun, e.Ref(), e.Seq)
	}
}

// OrEmpty makes a nil list an empty one, so JSON says [] and not null.
func OrEmpty(entries []*wire.Entry) []*wire.Entry {
	if entries == nil {
		return []*wire.Entry{}
	}
	return entries
}
