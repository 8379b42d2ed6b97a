package main

// What a task hands back: agora result, agora artifacts, agora batch
// results, and the result dispatch --wait prints (docs/ci.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

// writeResult prints a result for a shell: a JSON string as its text
// (with a newline unless it ends with one), anything else as compact JSON
// on one line. Nothing for no result (JSON null or none).
func writeResult(w io.Writer, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var text string
	if raw[0] == '"' && json.Unmarshal(raw, &text) == nil {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, err := io.WriteString(w, text)
		return err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return fmt.Errorf("the result is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// ---- agora result

const resultSynopsis = "TASK [--json] [--server URL] [--token TOKEN]"

// resultVerb prints what a task hands back: a string as its text, anything
// else as JSON (--json: always JSON). A task that has not finished has no
// result: it says how the task stands and exits as dispatch --wait would.
func resultVerb(fs *flag.FlagSet) runFunc {
	a := newAPIVerb(fs)
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, pos, err := a.open(args, environ, wantOne("want one TASK, e.g. agora result t-42 ('agora status' lists the tasks)"))
		if err != nil {
			return err
		}
		id := pos[0]
		t, err := c.Get(ctx, id)
		if err != nil {
			return a.explain(err, id)
		}
		switch t.State {
		case wire.StateFinished:
		case wire.StateFailed:
			return exitOutcome{code: exitFailed, msg: fmt.Sprintf("task %s failed: %s; it has no result ('agora logs %s' shows its output)", t.ID, outcomeDetail(t), t.ID)}
		case wire.StateCancelled, wire.StateExpired:
			return exitOutcome{code: exitEnded, msg: fmt.Sprintf("task %s %s: %s; it has no result", t.ID, stateLabel(t.State), outcomeDetail(t))}
		default:
			return fmt.Errorf("task %s is %s: its result comes when it finishes ('agora dispatch --wait' waits for one; 'agora status %s' shows it)", t.ID, stateLabel(t.State), t.ID)
		}
		raw, err := c.TaskResult(ctx, t)
		if err != nil {
			return a.explain(err, id)
		}
		if a.json {
			if len(raw) == 0 {
				raw = json.RawMessage("null")
			}
			_, err := fmt.Fprintf(stdout, "%s\n", raw)
			return err
		}
		if len(raw) == 0 || string(raw) == "null" {
			fmt.Fprintf(stderr, "agora result: task %s finished without a result (its sub-agent wrote no .agora/result.json)\n", t.ID)
			return nil
		}
		return writeResult(stdout, raw)
	}
}

// ---- agora artifacts

const artifactsSynopsis = "TASK [NAME...] [-d DIR] [--json] [--server URL] [--token TOKEN]"

// artifactsVerb lists a task's artifacts, or with -d downloads them (all,
// or the NAMEs given) into DIR, each checked against its sha256 before it
// takes its name.
func artifactsVerb(fs *flag.FlagSet) runFunc {
	a := newAPIFlags(fs)
	var dir string
	fs.StringVarP(&dir, "dir", "d", "", "download the artifacts (all, or the NAMEs given) into `DIR`, each checked against its sha256; names keep their sub-directories")
	return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) error {
		if len(pos) == 0 {
			return usagef("want a TASK, e.g. agora artifacts t-42, or agora artifacts t-42 -d out/ to download them")
		}
		id, names := pos[0], pos[1:]
		if len(names) > 0 && dir == "" {
			return usagef("NAMEs are what to download: give -d DIR too, e.g. agora artifacts %s %s -d .", id, names[0])
		}
		for _, n := range names {
			if err := wire.CheckArtifactName(n); err != nil {
				return usagef("%v", err)
			}
		}
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		list, err := c.Artifacts(ctx, id)
		if err != nil {
			return a.explain(err, id)
		}
		if dir == "" {
			if a.json {
				return writeJSON(stdout, wire.ArtifactList{TaskID: id, Artifacts: list})
			}
			if len(list) == 0 {
				fmt.Fprintf(stderr, "agora artifacts: task %s has no artifacts\n", id)
				return nil
			}
			width := 0
			for _, f := range list {
				width = max(width, len(f.Name))
			}
			for _, f := range list {
				fmt.Fprintf(stdout, "%-*s  %10s  sha256:%s\n", width, f.Name, strconv.FormatInt(f.Size, 10), f.SHA256)
			}
			return nil
		}
		want, err := client.SelectArtifacts(list, names)
		if err != nil {
			return fmt.Errorf("task %s has %w", id, err)
		}
		if len(want) == 0 {
			fmt.Fprintf(stderr, "agora artifacts: task %s has no artifacts; nothing downloaded\n", id)
			return nil
		}
		var got []wire.Artifact
		for _, f := range want {
			path, err := c.SaveArtifact(ctx, id, f, dir)
			if err != nil {
				return err
			}
			got = append(got, f)
			if !a.json {
				fmt.Fprintf(stdout, "%s  %d bytes  sha256:%s ✓\n", path, f.Size, f.SHA256)
			}
		}
		if a.json {
			return writeJSON(stdout, wire.ArtifactList{TaskID: id, Artifacts: got})
		}
		return nil
	}
}

// ---- agora batch results

const batchResultsSynopsis = "ID [--server URL] [--token TOKEN]"

// batchResult is one line of agora batch results.
type batchResult struct {
	ID        string          `json:"id"`
	State     wire.State      `json:"state"`
	Outcome   *wire.Outcome   `json:"outcome,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Artifacts []wire.Artifact `json:"artifacts,omitempty"`
	// Error says why the result of a task that has one could not be read.
	Error string `json:"error,omitempty"`
}

// batchResultsVerb prints one JSON line per task of the batch, in the
// order of the batch file's lines: id, state, outcome, result (read
// through the API when stored by ref) and artifacts.
func batchResultsVerb(fs *flag.FlagSet) runFunc {
	open := batchOpener(fs, "results")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		b, err := open(ctx, args, environ)
		if err != nil {
			return err
		}
		c, tasks := b.client, b.tasks
		client.SortBatchTasks(tasks)
		enc := json.NewEncoder(stdout)
		for _, t := range tasks {
			line := batchResult{ID: t.ID, State: t.State, Outcome: t.Outcome, Artifacts: t.Artifacts}
			if line.Result, err = c.TaskResult(ctx, t); err != nil {
				line.Error = "read the result: " + err.Error()
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
		return nil
	}
}
