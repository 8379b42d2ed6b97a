package worker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
)

// Caps on what the worker fetches, so a bad ref cannot fill memory or disk.
const (
	maxCapabilityBytes   = 256 << 20
	maxEnvBundleBytes    = 1 << 20
	maxPartialStateBytes = 64 << 20
	maxSpecBytes         = 16 << 20
)

// fetchBlob reads a bundle or object by ref from the store and verifies its
// hash. Hash mismatches are integrity failures; everything else that stops
// the fetch is a fetch failure.
func fetchBlob(ctx context.Context, store storage.Store, what, uri, sha string, max int64) ([]byte, error) {
	if store == nil {
		return nil, &outcomeError{reason: schemas.ReasonFetchFailed, err: fmt.Errorf("fetch %s: no "+schemas.EnvStorageURI+" to fetch it from", what)}
	}
	key := storage.BlobKey(sha)
	if uri != "" {
		k, err := storage.ResolveURI(store, uri)
		if err != nil {
			return nil, &outcomeError{reason: schemas.ReasonFetchFailed, err: fmt.Errorf("fetch %s: %w", what, err)}
		}
		key = k
	}
	data, err := storage.GetVerified(ctx, store, key, sha, max)
	switch {
	case errors.Is(err, storage.ErrIntegrity):
		return nil, &outcomeError{reason: schemas.ReasonIntegrityFailed, err: fmt.Errorf("%s: %w", what, err)}
	case err != nil:
		return nil, &outcomeError{reason: schemas.ReasonFetchFailed, err: fmt.Errorf("fetch %s: %w", what, err)}
	}
	return data, nil
}

// capability is a fetched, verified file-tree bundle.
type capability struct {
	ref  schemas.BundleRef
	data []byte
}

func fetchCapabilities(ctx context.Context, store storage.Store, refs []schemas.BundleRef) ([]capability, error) {
	out := make([]capability, 0, len(refs))
	for _, ref := range refs {
		data, err := fetchBlob(ctx, store, "capability "+ref.Name, ref.URI, ref.SHA256, maxCapabilityBytes)
		if err != nil {
			return nil, err
		}
		out = append(out, capability{ref: ref, data: data})
	}
	return out, nil
}

// envBundle is the JSON content of an env bundle.
type envBundle struct {
	Values  map[string]string `json:"values"`
	Secrets map[string]string `json:"secrets"`
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fetchEnv fetches and verifies every env bundle, resolves its secret refs
// and returns NAME=value pairs in bundle order (later bundles win). secrets
// lists the resolved secrets so their values can be kept out of output.
func fetchEnv(ctx context.Context, store storage.Store, refs []schemas.BundleRef, resolver SecretResolver) (env []string, secrets []resolvedSecret, err error) {
	for _, ref := range refs {
		what := "env bundle " + ref.Name
		data, err := fetchBlob(ctx, store, what, ref.URI, ref.SHA256, maxEnvBundleBytes)
		if err != nil {
			return nil, nil, err
		}
		var b envBundle
		if err := schemas.DecodeKnown(what, data, &b); err != nil {
			return nil, nil, &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("%w (want {\"values\": {NAME: value}, \"secrets\": {NAME: ref}})", err)}
		}
		for _, name := range sortedKeys(b.Values) {
			if !envName.MatchString(name) {
				return nil, nil, &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("%s: %q is not a valid environment variable name", what, name)}
			}
			env = append(env, name+"="+b.Values[name])
		}
		for _, name := range sortedKeys(b.Secrets) {
			if !envName.MatchString(name) {
				return nil, nil, &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("%s: %q is not a valid environment variable name", what, name)}
			}
			value, err := resolver.Resolve(ctx, b.Secrets[name])
			if err != nil {
				// The ref is named; the value never is.
				return nil, nil, &outcomeError{reason: schemas.ReasonFetchFailed, err: fmt.Errorf("%s: secret %s (ref %q): %w", what, name, b.Secrets[name], err)}
			}
			if strings.IndexByte(value, 0) >= 0 {
				return nil, nil, &outcomeError{reason: schemas.ReasonFetchFailed, err: fmt.Errorf("%s: secret %s (ref %q): the value holds a NUL byte, which an environment variable cannot", what, name, b.Secrets[name])}
			}
			env = append(env, name+"="+value)
			secrets = append(secrets, resolvedSecret{Name: name, Value: value})
		}
	}
	return env, secrets, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
