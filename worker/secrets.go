package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/schemas"
)

// DefaultSecretsDir is where local:NAME refs are read when
// AGORA_SECRETS_DIR is not set: the runner mounts a dispatch's local
// secrets there, read-only.
const DefaultSecretsDir = "/run/agora/secrets"

// SecretResolver turns a secret ref from an env bundle into its value.
type SecretResolver interface {
	Resolve(ctx context.Context, ref string) (string, error)
}

// resolvedSecret is one secret an env bundle gave the runtime: the
// variable's name and its value, which is kept out of every output.
type resolvedSecret struct {
	Name  string
	Value string
}

// BuiltinSecrets resolves the refs every worker understands:
//
//	env:NAME                  the worker's own environment variable NAME (how a
//	                          container platform or CI injects a secret into the worker)
//	file:/path                the content of a mounted secret file, trailing newline removed
//	local:NAME                NAME in LocalDir (AGORA_SECRETS_DIR), exact bytes: the
//	                          local secret store, copied in by the runner
//	aws-sm:SECRET_ID[#KEY]    AWS Secrets Manager; #KEY picks one field of a JSON
//	                          SecretString. The value a runner resolved on its host
//	                          (secrets.PrefetchedName in LocalDir) when there is one,
//	                          else the one the platform injected (the variable
//	                          secrets.PrefetchedEnv), else through AWS
type BuiltinSecrets struct {
	Environ []string
	// LocalDir holds local:NAME secrets, one file each; "" means
	// DefaultSecretsDir.
	LocalDir string
	// AWS resolves aws-sm: refs; nil refuses them.
	AWS SecretResolver
}

var _ SecretResolver = BuiltinSecrets{}

const knownSchemes = "env, file, local or aws-sm"

// Resolve implements SecretResolver.
func (b BuiltinSecrets) Resolve(ctx context.Context, ref string) (string, error) {
	scheme, rest, ok := secrets.SplitRef(ref)
	if !ok {
		return "", fmt.Errorf("secret ref %q has no scheme (want env:NAME, file:/path, local:NAME or aws-sm:SECRET_ID[#KEY])", ref)
	}
	switch scheme {
	case secrets.SchemeEnv:
		if v, found := b.lookupEnv(rest); found {
			return v, nil
		}
		return "", fmt.Errorf("environment variable %s is not set", rest)
	case secrets.SchemeFile:
		path := strings.TrimPrefix(rest, "//")
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(data), "\r\n"), nil
	case secrets.SchemeLocal:
		return b.local(rest)
	case secrets.SchemeAWSSM:
		// A runner resolves these on its host and leaves the value in the
		// secrets directory; a worker on its own (a CI job) asks AWS.
		if v, found, err := b.prefetched(ref); found {
			return v, err
		}
		// Where nothing can be mounted (ECS Fargate) the platform injects
		// the value the runner asked for into the worker's environment.
		if v, found := b.lookupEnv(secrets.PrefetchedEnv(ref)); found {
			if len(v) > secrets.MaxValueBytes {
				return "", fmt.Errorf("the value in %s is larger than %d bytes", secrets.PrefetchedEnv(ref), secrets.MaxValueBytes)
			}
			return v, nil
		}
		if b.AWS == nil {
			return "", errors.New("aws-sm refs are not enabled in this worker")
		}
		return b.AWS.Resolve(ctx, ref)
	}
	return "", fmt.Errorf("unsupported secret ref scheme %q (want %s)", scheme, knownSchemes)
}

// lookupEnv finds name in the worker's environment.
func (b BuiltinSecrets) lookupEnv(name string) (string, bool) {
	for _, kv := range b.Environ {
		if n, value, _ := strings.Cut(kv, "="); n == name {
			return value, true
		}
	}
	return "", false
}

// prefetched reads the value the runner left for ref, or why it could not
// resolve it; found is false when it left neither.
func (b BuiltinSecrets) prefetched(ref string) (value string, found bool, err error) {
	dir := b.LocalDir
	if dir == "" {
		dir = DefaultSecretsDir
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", false, nil
	}
	defer root.Close()
	name := secrets.PrefetchedName(ref)
	if data, err := readCapped(root, name+secrets.PrefetchedErrorSuffix); err == nil {
		return "", true, fmt.Errorf("the runner could not resolve it on its host: %s", strings.TrimSpace(string(data)))
	}
	data, err := readCapped(root, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", true, fmt.Errorf("read the value the runner resolved: %w", err)
	}
	return string(data), true, nil
}

// readCapped reads a regular file of root, at most secrets.MaxValueBytes.
func readCapped(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, secrets.MaxValueBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > secrets.MaxValueBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, secrets.MaxValueBytes)
	}
	return data, nil
}

// local reads NAME from the local secrets directory, exactly as stored.
func (b BuiltinSecrets) local(name string) (string, error) {
	if err := secrets.ValidName(name); err != nil {
		return "", err
	}
	dir := b.LocalDir
	if dir == "" {
		dir = DefaultSecretsDir
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("local secret %s: no secrets directory %s ("+schemas.EnvSecretsDir+"): the runner mounts one only when it has a local secret store (agora serve, or agora runner --secrets-dir)", name, dir)
	}
	if err != nil {
		return "", fmt.Errorf("local secret %s: %w", name, err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("local secret %s is not set: no %s (set it on the runner's host with `agora secret set %s`)", name, filepath.Join(dir, name), name)
	}
	if err != nil {
		return "", fmt.Errorf("local secret %s: %w", name, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("local secret %s: %s is not a regular file", name, filepath.Join(dir, name))
	}
	data, err := io.ReadAll(io.LimitReader(f, secrets.MaxValueBytes+1))
	if err != nil {
		return "", fmt.Errorf("local secret %s: %w", name, err)
	}
	if len(data) > secrets.MaxValueBytes {
		return "", fmt.Errorf("local secret %s is larger than %d bytes", name, secrets.MaxValueBytes)
	}
	return string(data), nil
}
