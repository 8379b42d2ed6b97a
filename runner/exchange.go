package runner

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/internal/secrets/awssm"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
)

// A dispatch's exchange: its files without host mounts.
//
// An engine that cannot mount this host's files (ECS on Fargate,
// Config.NoHostMounts) gets none of the six mounts compile.go gives a
// container. What they carried travels through storage instead, under one
// prefix per dispatch, exchange/<token>: the token is an HMAC of the
// dispatch's event key, 256 bits nobody else can guess, and it reaches the
// task only in its own environment (AGORA_EXCHANGE_KEY). The task role may
// read and write exchange/* and blobs/* but may not list them
// (docs/ecs.md, "IAM"), so a sub-agent — which shares the worker's user and
// so its credentials — can reach its own dispatch's exchange and no other.
//
//	spec.json     the spec, as the mounted spec file held (runner writes)
//	private.json  the event key and --worker-env values (runner writes; the
//	              worker reads and deletes it before the sub-agent starts)
//	cancel        the cancel marker (runner writes before StopTask)
//	workspace.json the workspace snapshot record of a round that asked
//	              (worker writes; the runner copies it to
//	              dispatches/<id>/workspace.json when it settles)
//	answer.json   a finished round's .agora/answer.json (worker writes; the
//	              runner copies it to dispatches/<id>/answer.json)
//
// The runner deletes the whole exchange when the dispatch is settled. The
// worker reads its blobs (bundles, a large partial_state, the workspace
// archive) from storage directly and writes a large partial_state and the
// workspace archive there: there is no staged store.

// exchangeFiles are every name an exchange may hold.
var exchangeFiles = []string{schemas.ExchangeSpec, schemas.ExchangePrivate, schemas.ExchangeCancel, schemas.ExchangeWorkspace, schemas.ExchangeAnswer}

// maxExchangeRecord caps what the runner reads back from an exchange: the
// worker — or the sub-agent, with the same credentials — wrote it.
const maxExchangeRecord = 1 << 20

// exchangePrefix is the dispatch's exchange, derived from its event key
// so a restarted runner finds it again from the key it keeps.
func exchangePrefix(eventKey []byte) string {
	mac := hmac.New(sha256.New, eventKey)
	mac.Write([]byte("agora exchange v1"))
	return "exchange/" + hex.EncodeToString(mac.Sum(nil))
}

// remoteFiles is what a dispatch without host mounts gets instead of them.
type remoteFiles struct {
	// Exchange is the dispatch's storage prefix (exchange/<token>).
	Exchange string `json:"exchange"`
	// Restore is the workspace archive the round before left, if any.
	Restore *schemas.ObjectRef `json:"restore,omitempty"`
	// Secrets are the aws-sm refs the platform resolves at start.
	Secrets []compute.SecretRef `json:"secrets,omitempty"`
}

// prepareExchange writes the dispatch's spec and private values into its
// exchange and resolves what the container's definition needs: the
// previous round's workspace archive and the secrets by reference. It
// returns a failure reason with the error when the dispatch cannot run
// this way.
func (d *dispatch) prepareExchange(ctx context.Context) (remoteFiles, schemas.FailureReason, error) {
	r, req := d.r, d.req
	if _, err := d.ensureEventKey(); err != nil {
		return remoteFiles{}, schemas.ReasonWorkerLost, err
	}
	out := remoteFiles{Exchange: exchangePrefix(d.eventKey)}
	refs, err := d.secretRefs(ctx)
	if err != nil {
		return remoteFiles{}, schemas.ReasonFetchFailed, err
	}
	out.Secrets = refs
	if from := restoreFrom(req); from != "" {
		rec, err := d.snapshotRecord(ctx, from)
		if err != nil {
			return remoteFiles{}, schemas.ReasonFetchFailed, fmt.Errorf("restore the workspace of %s: %w", from, err)
		}
		out.Restore = rec.Archive
	}
	spec, err := json.Marshal(req.Spec)
	if err != nil {
		return remoteFiles{}, schemas.ReasonWorkerLost, err
	}
	private, err := json.Marshal(schemas.PrivateValues{EventKey: hex.EncodeToString(d.eventKey), WorkerEnv: r.cfg.WorkerEnv})
	if err != nil {
		return remoteFiles{}, schemas.ReasonWorkerLost, err
	}
	for name, data := range map[string][]byte{schemas.ExchangeSpec: spec, schemas.ExchangePrivate: private} {
		if err := r.cfg.Store.Put(ctx, out.Exchange+"/"+name, bytes.NewReader(data)); err != nil {
			return remoteFiles{}, schemas.ReasonWorkerLost, fmt.Errorf("write the dispatch's %s to storage: %w", name, err)
		}
	}
	return out, "", nil
}

// secretRefs turns the aws-sm refs of the dispatch's env bundles into
// secrets the platform resolves when the task starts (ECS `secrets`,
// valueFrom), so no value passes through the runner or an API call. A
// local: ref has no place there: local secrets live on a runner's host.
func (d *dispatch) secretRefs(ctx context.Context) ([]compute.SecretRef, error) {
	if len(d.req.Spec.Env) == 0 {
		return nil, nil
	}
	local, awsRefs := d.r.bundleRefs(ctx, &d.req.Spec, d.log)
	if len(local) > 0 {
		return nil, fmt.Errorf("local secret %s: local secrets live on a runner's host, and this runner's containers get no host files (ECS on Fargate); store it in AWS Secrets Manager and reference it as aws-sm:NAME", local[0])
	}
	var out []compute.SecretRef
	// ECS takes a Secrets Manager secret only by its full ARN (a bare name
	// is an SSM parameter's): a name is looked up once per dispatch, with
	// the runner's own AWS configuration, as its values are on Docker.
	sm := awssm.New(awssm.Options{Environ: d.r.cfg.AWSEnv, Timeout: d.r.cfg.SecretsTimeout, Logger: d.log})
	for _, ref := range awsRefs {
		from, err := valueFrom(ctx, sm.ARN, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, compute.SecretRef{Name: secrets.PrefetchedEnv(ref), ValueFrom: from})
	}
	return out, nil
}

// valueFrom is ECS's reference for an aws-sm:SECRET_ID[#KEY] ref: the
// secret's full ARN, or ARN:KEY:: for one JSON field. A SECRET_ID that is
// not a full ARN is turned into one by arnOf (DescribeSecret).
func valueFrom(ctx context.Context, arnOf func(context.Context, string) (string, error), ref string) (string, error) {
	_, rest, _ := secrets.SplitRef(ref)
	id, key, hasKey := strings.Cut(rest, "#")
	switch {
	case id == "":
		return "", fmt.Errorf("secret ref %s names no secret (want aws-sm:SECRET_ID or aws-sm:SECRET_ID#JSON_KEY)", ref)
	case hasKey && key == "":
		return "", fmt.Errorf("secret ref %s has an empty JSON key after '#'", ref)
	}
	arn, err := arnOf(ctx, id)
	if err != nil {
		return "", fmt.Errorf("secret ref %s: ECS needs the secret's full ARN: %w (or write aws-sm:arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-XXXXXX)", ref, err)
	}
	if !hasKey {
		return arn, nil
	}
	return arn + ":" + key + "::", nil
}

// snapshotRecord waits a bounded time for the round before to have its
// workspace recorded and returns the record; a record that says why there
// is no snapshot is an error.
func (d *dispatch) snapshotRecord(ctx context.Context, from string) (*workspace.Record, error) {
	deadline := time.Now().Add(d.r.cfg.SnapshotWait)
	for {
		rec, err := workspace.ReadRecord(ctx, d.r.cfg.Store, snapshotKey(from))
		switch {
		case err == nil && rec.Error != "":
			return nil, errors.New(rec.Error)
		case err == nil && rec.Archive != nil:
			return rec, nil
		case err == nil:
			return nil, errors.New("empty snapshot record")
		case !errors.Is(err, workspace.ErrNoRecord):
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no snapshot recorded within %s", d.r.cfg.SnapshotWait)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-d.cancelled:
			return nil, errors.New("cancelled while waiting for the snapshot")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// markCancelInExchange writes the cancel marker the worker looks for on
// SIGTERM (AGORA_CANCEL_KEY).
func (d *dispatch) markCancelInExchange(ctx context.Context) {
	if d.eventKey == nil {
		d.loadEventKey()
	}
	if d.eventKey == nil {
		d.log.Error("no event key for the dispatch's exchange; the worker may take the stop for a foreign SIGTERM")
		return
	}
	key := exchangePrefix(d.eventKey) + "/" + schemas.ExchangeCancel
	stamp := time.Now().UTC().Format(time.RFC3339Nano) + "\n"
	if err := d.r.cfg.Store.Put(ctx, key, strings.NewReader(stamp)); err != nil {
		d.log.Error("write the cancel marker; the worker may take the stop for a foreign SIGTERM", "error", err)
	}
}

// settleExchange copies what the worker left in the exchange to where the
// rest of agora reads it: a round that asked has its workspace record, a
// finished one its answer file.
func (d *dispatch) settleExchange(ctx context.Context, kind schemas.EventKind) {
	if d.eventKey == nil {
		return
	}
	r, prefix := d.r, exchangePrefix(d.eventKey)
	switch {
	case kind == schemas.KindNeedsInput && d.req != nil && !d.req.Fresh():
		rec, err := workspace.ReadRecord(ctx, r.cfg.Store, prefix+"/"+schemas.ExchangeWorkspace)
		switch {
		case errors.Is(err, workspace.ErrNoRecord):
			rec = &workspace.Record{Error: "the worker recorded no workspace snapshot before it asked"}
		case err != nil:
			rec = &workspace.Record{Error: "read the worker's workspace snapshot record: " + err.Error()}
		case rec.Archive == nil && rec.Error == "":
			rec.Error = "the worker's workspace snapshot record names no archive"
		}
		if err := workspace.WriteRecord(ctx, r.cfg.Store, snapshotKey(d.id), *rec); err != nil {
			d.log.Error("record workspace snapshot", "error", err)
		}
	case kind == schemas.KindFinished:
		data, err := getCapped(ctx, r.cfg.Store, prefix+"/"+schemas.ExchangeAnswer, maxExchangeRecord)
		if errors.Is(err, storage.ErrNotFound) {
			return
		}
		if err != nil {
			d.log.Warn("read the answer file the worker stored; not kept", "error", err)
			return
		}
		if err := r.cfg.Store.Put(ctx, answerKey(d.id), bytes.NewReader(data)); err != nil {
			d.log.Error("store the answer file", "error", err)
		}
	}
}

// removeExchange deletes the dispatch's exchange; nothing is left for a
// later reader once it is settled.
func (r *Runner) removeExchange(ctx context.Context, eventKey []byte, log *slog.Logger) {
	if eventKey == nil || !r.cfg.NoHostMounts {
		return
	}
	prefix := exchangePrefix(eventKey)
	for _, name := range exchangeFiles {
		if err := r.cfg.Store.Delete(ctx, prefix+"/"+name); err != nil {
			log.Warn("delete from the dispatch's exchange", "name", name, "error", err)
		}
	}
}

// getCapped reads key whole, refusing more than limit bytes.
func getCapped(ctx context.Context, store storage.Store, key string, limit int64) ([]byte, error) {
	rc, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", key, limit)
	}
	return data, nil
}
