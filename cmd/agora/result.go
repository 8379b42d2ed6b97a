package main

// What a task hands back: agora result, agora artifacts, agora batch
// results, and the result dispatch --wait prints (docs/ci.md).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

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
			return exitcode.Outcome{Code: exitFailed, Msg: fmt.Sprintf("task %s failed: %s; it has no result ('agora logs %s' shows its output)", t.ID, view.OutcomeDetail(t), t.ID)}
		case wire.StateCancelled, wire.StateExpired:
			return exitcode.Outcome{Code: exitEnded, Msg: fmt.Sprintf("task %s %s: %s; it has no result", t.ID, view.StateLabel(t.State), view.OutcomeDetail(t))}
		default:
			return fmt.Errorf("task %s is %s: its result comes when it finishes ('agora dispatch --wait' waits for one; 'agora status %s' shows it)", t.ID, view.StateLabel(t.State), t.ID)
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
		return view.Result(stdout, raw)
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
			return a.show(stdout, wire.ArtifactList{TaskID: id, Artifacts: list}, func() { view.Artifacts(stdout, stderr, id, list) })
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
			line := view.BatchResult{ID: t.ID, State: t.State, Outcome: t.Outcome, Artifacts: t.Artifacts}
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
