package worker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
)

// DefaultMaxWorkspaceBytes is the workspace maximum when the runner names
// none: the runner's own default (agora runner --max-workspace-mb 1024).
const DefaultMaxWorkspaceBytes = 1 << 30

// CancelCheckTimeout bounds one look for the cancel marker object.
const CancelCheckTimeout = 5 * time.Second

// maxPrivateBytes caps P/private.json: a key and the operator's few
// worker variables.
const maxPrivateBytes = 1 << 20

// privateTimeout bounds reading and deleting P/private.json, which a
// cancel does not interrupt.
const privateTimeout = 30 * time.Second

// maxAnswerBytes caps the .agora/answer.json kept for a finished dispatch,
// as the runner caps it.
const maxAnswerBytes = 64 << 10

// Exchange is how a runner that can mount nothing into the container (ECS
// Fargate) hands the worker, through object storage (AGORA_STORAGE_URI) and
// the environment, what it would otherwise mount: the spec, the event key
// and worker environment, the cancel marker, the previous round's
// workspace. The worker writes back there what the runner would otherwise
// take from the host: the workspace snapshot and answer.json. The zero
// value is the Docker runner's (or no runner's) worker: nothing exchanged.
type Exchange struct {
	// Key is AGORA_EXCHANGE_KEY: a storage key prefix P, unguessable and
	// known only to the runner and this task. The worker reads P/spec.json
	// (when SpecFile is unset) and P/private.json (then deletes it), and
	// writes P/workspace.json and P/answer.json.
	Key string
	// CancelKey is AGORA_CANCEL_KEY: with it a SIGTERM is a cancel only
	// while that object exists (CancelCheck). Run does not use it; cmd's
	// signal handler does.
	CancelKey string
	// RestoreURI and RestoreSHA256 are AGORA_RESTORE_URI and
	// AGORA_RESTORE_SHA256: a workspace snapshot (workspace.Snapshot)
	// unpacked into the workspace before the setup script runs.
	RestoreURI    string
	RestoreSHA256 string
	// MaxWorkspaceBytes is AGORA_MAX_WORKSPACE_BYTES, the bound on a
	// restored or snapshotted workspace; default DefaultMaxWorkspaceBytes.
	MaxWorkspaceBytes int64
	// SnapshotWorkspace is AGORA_SNAPSHOT_WORKSPACE=true: a round that ends
	// with dispatch.needs_input snapshots the workspace and records it at
	// P/workspace.json before its terminal event. Needs Key.
	SnapshotWorkspace bool
}

func (x Exchange) specKey() string      { return x.Key + "/" + schemas.ExchangeSpec }
func (x Exchange) privateKey() string   { return x.Key + "/" + schemas.ExchangePrivate }
func (x Exchange) workspaceKey() string { return x.Key + "/" + schemas.ExchangeWorkspace }
func (x Exchange) answerKey() string    { return x.Key + "/" + schemas.ExchangeAnswer }

// ExchangeFromEnv reads the Exchange variables from environ. A malformed
// value is an error naming the variable; the rest are still read.
func ExchangeFromEnv(environ []string) (Exchange, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	x := Exchange{
		Key:           env[schemas.EnvExchangeKey],
		CancelKey:     env[schemas.EnvCancelKey],
		RestoreURI:    env[schemas.EnvRestoreURI],
		RestoreSHA256: env[schemas.EnvRestoreSHA256],
	}
	var errs []error
	if v := env[schemas.EnvMaxWorkspaceBytes]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf(schemas.EnvMaxWorkspaceBytes+"=%q: want a whole number of bytes above 0", v))
		}
		x.MaxWorkspaceBytes = max(n, 0)
	}
	switch v := strings.ToLower(env[schemas.EnvSnapshotWorkspace]); v {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		x.SnapshotWorkspace = true
	default:
		errs = append(errs, fmt.Errorf(schemas.EnvSnapshotWorkspace+"=%q: want true or false", v))
	}
	return x, errors.Join(errs...)
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// validate names every problem with x; storage says whether
// AGORA_STORAGE_URI is set.
func (x Exchange) validate(storage bool) []error {
	var errs []error
	needStorage := func(name string) {
		if !storage {
			errs = append(errs, fmt.Errorf("%s needs "+schemas.EnvStorageURI, name))
		}
	}
	if x.Key != "" {
		needStorage(schemas.EnvExchangeKey)
		if err := validKey(x.specKey()); err != nil {
			errs = append(errs, fmt.Errorf(schemas.EnvExchangeKey+": %w", err))
		}
	}
	if x.CancelKey != "" {
		needStorage(schemas.EnvCancelKey)
		if err := validKey(x.CancelKey); err != nil {
			errs = append(errs, fmt.Errorf(schemas.EnvCancelKey+": %w", err))
		}
	}
	if x.SnapshotWorkspace && x.Key == "" {
		errs = append(errs, errors.New(schemas.EnvSnapshotWorkspace+"=true needs "+schemas.EnvExchangeKey+", where the snapshot is recorded"))
	}
	switch {
	case x.RestoreURI != "":
		needStorage(schemas.EnvRestoreURI)
		if !sha256Hex.MatchString(x.RestoreSHA256) {
			errs = append(errs, fmt.Errorf(schemas.EnvRestoreSHA256+"=%q: want 64 lower-case hex digits ("+schemas.EnvRestoreURI+" is set)", x.RestoreSHA256))
		}
	case x.RestoreSHA256 != "":
		errs = append(errs, errors.New(schemas.EnvRestoreSHA256+" is set without "+schemas.EnvRestoreURI))
	}
	if x.MaxWorkspaceBytes < 0 {
		errs = append(errs, fmt.Errorf(schemas.EnvMaxWorkspaceBytes+" %d: want a number above 0", x.MaxWorkspaceBytes))
	}
	return errs
}

func validKey(key string) error { return storage.ValidateKey(key) }

// readPrivate reads P/private.json and deletes it, whether or not it
// parses: once it is gone only this process holds the event key and the
// worker's variables. It returns the key (nil for none) and the entries.
func readPrivate(ctx context.Context, store storage.Store, x Exchange) (key []byte, env []string, err error) {
	// Named by the variable, not the prefix: the detail reaches the
	// task's events, and the prefix is only for the runner and this task.
	const name = "$" + schemas.EnvExchangeKey + "/" + schemas.ExchangePrivate
	rc, err := store.Get(ctx, x.privateKey())
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %s", name, hidePrefix(err, x.Key))
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxPrivateBytes+1))
	rc.Close()
	if rmErr := store.Delete(ctx, x.privateKey()); rmErr != nil {
		return nil, nil, fmt.Errorf("delete %s (the sub-agent could read it): %s", name, hidePrefix(rmErr, x.Key))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %s", name, hidePrefix(err, x.Key))
	}
	if len(data) > maxPrivateBytes {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes", name, maxPrivateBytes)
	}
	var pv schemas.PrivateValues
	if err := schemas.Decode(name, data, &pv); err != nil {
		return nil, nil, err
	}
	if pv.EventKey != "" {
		key, err = hex.DecodeString(pv.EventKey)
		if err != nil || len(key) != schemas.EventKeyBytes {
			return nil, nil, fmt.Errorf("%s: event_key: want %d hex-encoded bytes", name, schemas.EventKeyBytes)
		}
	}
	for _, kv := range pv.WorkerEnv {
		if n, _, ok := strings.Cut(kv, "="); !ok || n == "" {
			return nil, nil, fmt.Errorf("%s: a worker_env entry is not NAME=value", name)
		}
	}
	return key, pv.WorkerEnv, nil
}

// hidePrefix is err's message with the exchange prefix written as the
// variable's name.
func hidePrefix(err error, prefix string) string {
	return strings.ReplaceAll(err.Error(), prefix, "$"+schemas.EnvExchangeKey)
}

// mergeEnv adds entries to environ, except names environ already has: as
// with AGORA_WORKER_ENV_FILE, the container's own wiring wins.
func mergeEnv(environ, entries []string) []string {
	set := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	out := append([]string(nil), environ...)
	for _, kv := range entries {
		name, _, _ := strings.Cut(kv, "=")
		if !set[name] {
			out = append(out, kv)
			set[name] = true
		}
	}
	return out
}

// CancelCheck returns the check a signal handler makes with
// AGORA_CANCEL_KEY: whether the runner's cancel marker object key exists in
// the storage at storageURI (the storage is opened on the first call). The
// runner writes it before it stops the task for a cancel; the sub-agent
// cannot, having no storage credentials. Each look is bounded by
// CancelCheckTimeout. A look that fails reports no cancel, with the error:
// ignoring the signal is safe because the runner remembers its own cancels
// and reports one for a task that ended without a terminal event.
func CancelCheck(storageURI, key string) func(context.Context) (bool, error) {
	var (
		mu    sync.Mutex
		store storage.Store
	)
	return func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, CancelCheckTimeout)
		defer cancel()
		mu.Lock()
		defer mu.Unlock()
		if store == nil {
			s, err := storage.Open(ctx, storageURI, storage.Options{})
			if err != nil {
				return false, fmt.Errorf("open storage for the cancel marker: %w", err)
			}
			store = s
		}
		_, err := store.Stat(ctx, key)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, storage.ErrNotFound):
			return false, nil
		}
		return false, fmt.Errorf("look for the cancel marker %s: %w", store.URI(key), err)
	}
}

// restoreWorkspace unpacks the snapshot the runner named into the
// workspace. Failing to is fetch-failed, naming the archive.
func (w *run) restoreWorkspace(ctx context.Context) error {
	x := w.cfg.Exchange
	ref := &schemas.ObjectRef{URI: x.RestoreURI, SHA256: x.RestoreSHA256}
	if err := workspace.Restore(ctx, w.store, ref, w.cfg.Workspace, x.MaxWorkspaceBytes); err != nil {
		return &outcomeError{reason: schemas.ReasonFetchFailed, err: fmt.Errorf("restore the workspace snapshot %s: %w", x.RestoreURI, err)}
	}
	return nil
}

// snapshotWorkspace archives the workspace of a round that asked a question
// and records it at P/workspace.json, or records why it could not: the
// round's outcome stands either way, and the next round's restore reports
// the failure (as the runner does with a snapshot it makes on its host).
func (w *run) snapshotWorkspace(ctx context.Context) {
	x := w.cfg.Exchange
	var rec workspace.Record
	ref, err := workspace.Snapshot(ctx, w.store, w.cfg.Workspace, x.MaxWorkspaceBytes)
	if err != nil {
		w.log.Error("snapshot workspace", "error", err)
		rec.Error = w.redact.String(err.Error())
	} else {
		rec.Archive = ref
	}
	// Recorded even when a cancel cut the snapshot short: the next round
	// must find a record, not wait for one.
	if err := workspace.WriteRecord(context.WithoutCancel(ctx), w.store, x.workspaceKey(), rec); err != nil {
		w.log.Error("record workspace snapshot", "error", err)
	}
}

// keepAnswer stores a finished round's .agora/answer.json (how an answering
// sub-agent hands over its answer) at P/answer.json: a regular file, not a
// symlink, of at most maxAnswerBytes; anything else is left.
func (w *run) keepAnswer(ctx context.Context) {
	data, ok := readAnswer(w.cfg.Workspace)
	if !ok {
		return
	}
	if err := w.store.Put(ctx, w.cfg.Exchange.answerKey(), strings.NewReader(string(data))); err != nil {
		w.log.Warn("store answer.json", "error", err)
	}
}

// readAnswer reads <ws>/.agora/answer.json when it is a regular file (a
// symlink is not followed: it could point at anything the worker may read)
// of at most maxAnswerBytes.
func readAnswer(ws string) ([]byte, bool) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, false
	}
	defer root.Close()
	f, err := root.OpenFile(".agora/answer.json", os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxAnswerBytes {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAnswerBytes+1))
	if err != nil || len(data) > maxAnswerBytes {
		return nil, false
	}
	return data, true
}
