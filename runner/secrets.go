package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/internal/secrets/awssm"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
)

// A dispatch's secrets.
//
// The worker resolves an env bundle's secret refs itself. Two kinds need the
// runner's help, and the runner gives only what the dispatch references:
//
//   - local:NAME refs name secrets in the runner host's local store
//     (Config.SecretsDir, `agora secret set`);
//   - aws-sm: refs are resolved here, on the runner's host, with the
//     runner's own AWS configuration (Config.AWSEnv and the SDK's default
//     chain), so that no AWS credential ever enters a container — the
//     sub-agent runs as the worker's user and could read the worker's
//     environment — and the container needs no network for them.
//
// Before the container starts, the runner writes those values — and no
// others — into a directory of its own (0500, files 0400, owned by the
// container's user when the runner may chown), mounted read-only at
// /run/agora/secrets, and removes it as soon as the container has ended,
// before the outcome is published (and again when it is settled). A local
// secret missing from the store is left out, and an aws-sm ref that cannot
// be resolved leaves a file saying why (secrets.PrefetchedName + ".error",
// never a value): the worker then fails the dispatch with fetch-failed,
// naming it, as its one terminal event.

// containerSecretsDir is where a dispatch's secrets are mounted.
const containerSecretsDir = "/run/agora/secrets"

// maxEnvBundleBytes is the worker's cap on one env bundle.
const maxEnvBundleBytes = 1 << 20

// dispatchSecrets is what a dispatch's env bundles need from the runner.
type dispatchSecrets struct {
	// Dir holds the dispatch's secrets on this host, mounted read-only at
	// /run/agora/secrets; "" when it references none.
	Dir string `json:"dir,omitempty"`
}

func (r *Runner) secretsRoot() string { return filepath.Join(r.cfg.DataDir, "dispatch-secrets") }

func (r *Runner) secretsDir(id string) string { return filepath.Join(r.secretsRoot(), id) }

// bundleRefs reads the spec's env bundles (hash-verified, capped as the
// worker caps them) and returns the local secret names and the aws-sm refs
// they hold, sorted and without repeats. A bundle that cannot be read or
// parsed is skipped: the worker reads it again and reports it.
func (r *Runner) bundleRefs(ctx context.Context, spec *schemas.DispatchSpec, log *slog.Logger) (local, aws []string) {
	seen := map[string]bool{}
	for _, ref := range spec.Env {
		key := storage.BlobKey(ref.SHA256)
		if ref.URI != "" {
			k, err := storage.ResolveURI(r.cfg.Store, ref.URI)
			if err != nil {
				log.Warn("env bundle not readable by the runner; the worker reports it", "bundle", ref.Name, "error", err)
				continue
			}
			key = k
		}
		data, err := storage.GetVerified(ctx, r.cfg.Store, key, ref.SHA256, maxEnvBundleBytes)
		if err != nil {
			log.Warn("env bundle not readable by the runner; the worker reports it", "bundle", ref.Name, "error", err)
			continue
		}
		var b struct {
			Secrets map[string]string `json:"secrets"`
		}
		if err := schemas.Decode("env bundle", data, &b); err != nil {
			log.Warn("env bundle does not parse; the worker reports it", "bundle", ref.Name, "error", err)
			continue
		}
		for _, sref := range b.Secrets {
			if seen[sref] {
				continue
			}
			seen[sref] = true
			switch scheme, rest, _ := secrets.SplitRef(sref); scheme {
			case secrets.SchemeLocal:
				local = append(local, rest)
			case secrets.SchemeAWSSM:
				aws = append(aws, sref)
			}
		}
	}
	sort.Strings(local)
	sort.Strings(aws)
	return local, aws
}

// secretFile is one file of a dispatch's secrets directory.
type secretFile struct {
	name  string
	value []byte
}

// prepareSecrets lays out what the dispatch's env bundles need from this
// runner. Only a failure to write on this host is an error; a secret that
// cannot be had is not (the worker reports it).
func (d *dispatch) prepareSecrets(ctx context.Context) (dispatchSecrets, error) {
	r, spec := d.r, &d.req.Spec
	if len(spec.Env) == 0 {
		return dispatchSecrets{}, nil
	}
	names, awsRefs := r.bundleRefs(ctx, spec, d.log)
	if len(awsRefs) == 0 && (r.cfg.SecretsDir == "" || len(names) == 0) {
		return dispatchSecrets{}, nil
	}
	dir := r.secretsDir(d.id)
	if _, err := os.Lstat(dir); err == nil {
		// A container of this dispatch may exist already (a create that
		// raced a restart) with this dir mounted: keep it as it is.
		d.log.Info("the dispatch's secrets are on this host already; reusing them")
		return dispatchSecrets{Dir: dir}, nil
	}
	var files []secretFile
	if r.cfg.SecretsDir != "" {
		store := secrets.Open(r.cfg.SecretsDir)
		for _, name := range names {
			value, err := store.Get(name)
			switch {
			case errors.Is(err, secrets.ErrNotFound):
				d.log.Warn("local secret not in the store; the worker fails the dispatch naming it", "secret", name, "store", store.Dir())
				continue
			case err != nil:
				d.log.Warn("local secret not readable; the worker fails the dispatch naming it", "secret", name, "error", err)
				continue
			}
			files = append(files, secretFile{name, value})
		}
	}
	if len(awsRefs) > 0 {
		// A resolver per dispatch: nothing is cached across dispatches, so a
		// rotated secret is seen by the next one.
		sm := awssm.New(awssm.Options{Environ: r.cfg.AWSEnv, Timeout: r.cfg.SecretsTimeout, Logger: d.log})
		for _, ref := range awsRefs {
			name := secrets.PrefetchedName(ref)
			value, err := sm.Resolve(ctx, ref)
			if err != nil {
				d.log.Warn("aws-sm secret not resolved on the runner's host; the worker fails the dispatch naming it", "ref", ref, "error", err)
				files = append(files, secretFile{name + secrets.PrefetchedErrorSuffix, []byte(err.Error())})
				continue
			}
			files = append(files, secretFile{name, []byte(value)})
		}
	}
	if err := materialiseSecrets(files, dir); err != nil {
		return dispatchSecrets{}, fmt.Errorf("lay out the dispatch's secrets: %w", err)
	}
	return dispatchSecrets{Dir: dir}, nil
}

// materialiseSecrets writes files into a fresh dir the container's user can
// read and nobody else on the host: the dir 0500 and its files 0400, owned
// by the container's user; when the runner may not chown (it is not root),
// owned by the runner and readable by all, in a parent only the runner may
// enter.
func materialiseSecrets(files []secretFile, dir string) error {
	if err := removeSecretsDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	chown := os.Lchown(dir, containerUID, containerUID) == nil
	fileMode, dirMode := os.FileMode(0o444), os.FileMode(0o555)
	if chown {
		fileMode, dirMode = 0o400, 0o500
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.value, 0o600); err != nil {
			return err
		}
		if chown {
			if err := os.Lchown(path, containerUID, containerUID); err != nil {
				return err
			}
		}
		if err := os.Chmod(path, fileMode); err != nil {
			return err
		}
	}
	return os.Chmod(dir, dirMode)
}

// removeSecretsDir removes a dispatch's secrets dir, which its own mode
// (0500) would keep a non-root runner from emptying.
func removeSecretsDir(dir string) error {
	if err := os.Chmod(dir, 0o700); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return os.RemoveAll(dir)
}

// removeSecrets removes a settled dispatch's secrets from this host.
func (r *Runner) removeSecrets(id string, log *slog.Logger) {
	if err := removeSecretsDir(r.secretsDir(id)); err != nil {
		log.Error("remove the dispatch's secrets", "path", r.secretsDir(id), "error", err)
	}
}

// sweepSecrets removes the secrets dirs of dispatches that have no
// container any more (a runner that died between copying and creating);
// keep holds the dispatch ids whose containers were found. A dispatch whose
// request comes back copies its secrets again.
func (r *Runner) sweepSecrets(keep map[string]bool) {
	entries, err := os.ReadDir(r.secretsRoot())
	if err != nil {
		return
	}
	for _, e := range entries {
		if keep[e.Name()] || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		r.log.Info("removing the secrets of a dispatch with no container", "dispatch_id", e.Name())
		r.removeSecrets(e.Name(), r.log)
	}
}
