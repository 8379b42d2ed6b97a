package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
)

// hostTransport hands a dispatch its files on this host, bind-mounted into
// its container (compile.go): the spec read-only at /agora, the workspace,
// the staged store (stage.go), the key mount (eventkey.go, natscreds.go),
// the cancel marker's directory (cancel.go) and its secrets (secrets.go).
type hostTransport struct{ r *Runner }

var _ transport = hostTransport{}

// prepareFailed is the detail of a failure to lay out files on this host.
const prepareFailed = "prepare the dispatch on the runner host: "

func (t hostTransport) prepare(ctx context.Context, d *dispatch) (compute.ContainerSpec, error) {
	r, req := t.r, d.req
	if err := d.writeHostFiles(ctx); err != nil {
		return compute.ContainerSpec{}, errors.New(prepareFailed + err.Error())
	}
	if from := restoreFrom(req); from != "" {
		if err := d.restore(ctx, from); err != nil {
			return compute.ContainerSpec{}, cannotStart(schemas.ReasonFetchFailed, fmt.Sprintf("restore the workspace of %s: %v", from, err))
		}
	}
	if d.isCancelled() {
		return compute.ContainerSpec{}, errors.New("cancelled before start")
	}
	secrets, err := d.prepareSecrets(ctx)
	if err != nil {
		return compute.ContainerSpec{}, errors.New(prepareFailed + err.Error())
	}
	if err := d.prepareEventKey(); err != nil {
		return compute.ContainerSpec{}, errors.New(prepareFailed + err.Error())
	}
	natsCreds, err := d.prepareNATSCreds(req)
	if err != nil {
		return compute.ContainerSpec{}, errors.New(prepareFailed + err.Error())
	}
	if err := d.prepareCancelDir(); err != nil {
		return compute.ContainerSpec{}, errors.New(prepareFailed + err.Error())
	}
	if req.NetworkMode() == schemas.NetworkEgress {
		if err := d.prepareEgress(ctx); err != nil {
			return compute.ContainerSpec{}, errors.New("prepare the dispatch's egress proxy: " + err.Error())
		}
	}
	return compileContainer(req, r.cfg, hostPaths{SpecDir: r.specDir(d.id), Workspace: r.workspace(d.id),
		StageDir: r.stageDir(d.id), Secrets: secrets, KeyDir: r.keyDir(d.id), NATSCreds: natsCreds, CancelDir: r.cancelDir(d.id)}), nil
}

func (t hostTransport) workerPublishes(req *schemas.DispatchRequest) bool {
	return req != nil && workerPublishes(t.r.cfg, req)
}

func (t hostTransport) watch(ctx context.Context, d *dispatch, containerID string) {
	d.watchWorkspace(ctx, containerID)
}

func (t hostTransport) markCancel(_ context.Context, d *dispatch) { d.markCancelFile() }

// collect removes the dispatch's secrets from this host first (the
// container has ended), snapshots the workspace of a resumable round that
// asked, keeps a finished round's answer file, and uploads the blobs the
// worker wrote into its staged store.
func (t hostTransport) collect(ctx context.Context, d *dispatch, kind schemas.EventKind, missing []schemas.Event) {
	r := t.r
	r.removeSecrets(d.id, d.log)
	switch {
	case kind == schemas.KindNeedsInput && d.req != nil && !d.req.Fresh():
		rec := workspace.Record{}
		ref, err := workspace.Snapshot(ctx, r.cfg.Store, r.workspace(d.id), r.cfg.MaxWorkspaceBytes)
		if err != nil {
			d.log.Error("snapshot workspace", "error", err)
			rec.Error = err.Error()
		} else {
			rec.Archive = ref
		}
		if err := workspace.WriteRecord(ctx, r.cfg.Store, snapshotKey(d.id), rec); err != nil {
			d.log.Error("record workspace snapshot", "error", err)
		}
	case kind == schemas.KindFinished:
		d.keepAnswerFile(ctx)
	}
	uris, err := r.unstage(ctx, r.stageDir(d.id), d.spec())
	if err != nil {
		d.log.Error("upload what the worker stored", "error", err)
	}
	for i := range missing {
		pointAtStorage(&missing[i], uris)
	}
}

func (t hostTransport) remove(_ context.Context, id string, _ []byte, log *slog.Logger) {
	r := t.r
	removePaths(log, r.specDir(id), r.workspace(id), r.stageDir(id), r.keyDir(id), r.cancelDir(id))
	r.removeSecrets(id, log)
}

// writeHostFiles lays out the spec (mounted read-only), the request (kept
// for adoption after a restart), the workspace directory and the staged
// store the worker reads its blobs from.
func (d *dispatch) writeHostFiles(ctx context.Context) error {
	r := d.r
	workerSpec := d.req.Spec
	if dir := r.stageDir(d.id); dir != "" {
		staged, err := r.stage(ctx, dir, workerSpec)
		if err != nil {
			return err
		}
		workerSpec = staged
	}
	spec, err := json.Marshal(workerSpec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.specDir(d.id), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.specDir(d.id), "spec.json"), spec, 0o644); err != nil {
		return err
	}
	if err := d.writeRequestFile(); err != nil {
		return err
	}
	return prepareDir(r.workspace(d.id))
}

// restore fills the workspace from the snapshot the round before left,
// waiting a bounded time for its runner to record it.
func (d *dispatch) restore(ctx context.Context, from string) error {
	rec, err := d.snapshotRecord(ctx, from)
	if err != nil {
		return err
	}
	return workspace.Restore(ctx, d.r.cfg.Store, rec.Archive, d.r.workspace(d.id), d.r.cfg.MaxWorkspaceBytes)
}

// keepAnswerFile stores a finished dispatch's .agora/answer.json (how an
// answering sub-agent hands over its answer) before the workspace goes.
func (d *dispatch) keepAnswerFile(ctx context.Context) {
	root, err := os.OpenRoot(d.r.workspace(d.id))
	if err != nil {
		return
	}
	defer root.Close()
	fi, err := root.Lstat(".agora/answer.json")
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<10 {
		return
	}
	data, err := root.ReadFile(".agora/answer.json")
	if err != nil {
		return
	}
	if err := d.r.cfg.Store.Put(ctx, answerKey(d.id), bytesReader(data)); err != nil {
		d.log.Warn("store answer.json", "error", err)
	}
}
