// Package secrets is the local secret store of a single-machine agora
// (`agora serve`, `agora secret`): a directory with one file per secret,
// holding its exact bytes. It also names the secret-ref syntax that env
// bundles use, so the runner (which copies a dispatch's local: secrets into
// its container) and the worker (which resolves them) agree on it.
//
// What it may import: docs/architecture.md.
package secrets

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/fsutil"
	"github.com/agoradev/agora/schemas"
)

// MaxValueBytes caps one secret: AWS Secrets Manager's own limit, and well
// below what one environment variable can hold (128 KiB on Linux).
const MaxValueBytes = 64 << 10

// Errors callers branch on; every returned error wraps one of them and names
// the secret.
var (
	ErrNotFound    = errors.New("no such secret")
	ErrInvalidName = errors.New("invalid secret name")
	ErrEmpty       = errors.New("empty secret value")
	ErrTooLarge    = errors.New("secret value too large")
)

// ValidName checks a secret name: a letter or digit, then up to 127
// letters, digits, '_', '.' or '-'. So a name is always one plain file
// name: never hidden, never a path, never "." or "..".
func ValidName(name string) error {
	if validName(name) {
		return nil
	}
	why := "want a letter or digit, then letters, digits, '_', '.' or '-'"
	switch {
	case name == "":
		why = "it is empty"
	case len(name) > 128:
		why = fmt.Sprintf("it is %d bytes long, at most 128 are allowed", len(name))
	case strings.ContainsAny(name, `/\`):
		why = "it holds a path separator; a name is one plain word"
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidName, name, why)
}

// validName is ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$, by hand: the regexp's
// bounded repetition cost half a millisecond of every worker's start in
// package initialisation.
func validName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !alnum && (i == 0 || (c != '_' && c != '.' && c != '-')) {
			return false
		}
	}
	return true
}

// Ref schemes a secret ref in an env bundle may use.
const (
	SchemeEnv   = "env"    // env:NAME, a variable of the worker's environment
	SchemeFile  = "file"   // file:/path, a file mounted into the worker's container
	SchemeLocal = "local"  // local:NAME, this store, materialised by the runner
	SchemeAWSSM = "aws-sm" // aws-sm:SECRET_ID[#JSON_KEY], AWS Secrets Manager
)

// SplitRef splits a secret ref into its scheme and the rest
// ("local:github" → "local", "github"). ok is false without a scheme.
func SplitRef(ref string) (scheme, rest string, ok bool) {
	scheme, rest, ok = strings.Cut(ref, ":")
	if !ok || scheme == "" {
		return "", ref, false
	}
	return scheme, rest, true
}

// PrefetchedName is the file name under which a runner leaves, in a
// dispatch's secrets directory, the value of a ref it resolved on its own
// host (an aws-sm: ref: the container then needs neither AWS credentials nor
// a network). PrefetchedName(ref)+PrefetchedErrorSuffix holds instead why it
// could not. Local secret names cannot start with '_', so the two kinds of
// file never collide.
func PrefetchedName(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return "_ref_" + hex.EncodeToString(sum[:16])
}

// PrefetchedEnv is the environment variable under which a container
// platform injects the resolved value of an aws-sm: ref (ECS task
// definition secrets, valueFrom the secret's ARN and JSON key): the worker
// then needs neither AWS credentials for Secrets Manager nor a mount. The
// name is schemas.EnvPrefetchedSecretPrefix ("AGORA_SECRET_") and the
// upper-case hex of the first 10 bytes of the SHA-256 of the whole ref
// (scheme and #KEY included), because a ref holds characters no variable
// name may, and the AGORA_ prefix keeps the value out of every runtime's
// environment.
func PrefetchedEnv(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return schemas.EnvPrefetchedSecretPrefix + strings.ToUpper(hex.EncodeToString(sum[:10]))
}

// PrefetchedErrorSuffix marks the file that says why a prefetch failed.
const PrefetchedErrorSuffix = ".error"

// Info describes one stored secret, never its value.
type Info struct {
	Name     string    `json:"name"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// Store is a directory of secrets: mode 0700, one file per secret, mode
// 0600, written atomically. The zero value is not usable; see Open.
type Store struct {
	dir string
}

// Open returns the store in dir. Nothing is created until the first Set,
// and a store whose directory does not exist is empty.
func Open(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Set stores value under name, replacing any earlier value: written to a
// temporary file in the store, synced, then renamed over the old one, so a
// reader sees the old value or the new one, never a part.
func (s *Store) Set(name string, value []byte) (err error) {
	if err := ValidName(name); err != nil {
		return err
	}
	switch {
	case len(value) == 0:
		return fmt.Errorf("set secret %s: %w", name, ErrEmpty)
	case len(value) > MaxValueBytes:
		return fmt.Errorf("set secret %s: %w: %d bytes, at most %d", name, ErrTooLarge, len(value), MaxValueBytes)
	}
	if err := s.ensureDir(); err != nil {
		return fmt.Errorf("set secret %s: %w", name, err)
	}
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return fmt.Errorf("set secret %s: %w", name, err)
	}
	// A leading dot is never a valid name, so List never shows a temp file.
	tmp := filepath.Join(s.dir, ".tmp-"+name+"-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("set secret %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(value); err != nil {
		return fmt.Errorf("set secret %s: write: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("set secret %s: sync: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("set secret %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		return fmt.Errorf("set secret %s: %w", name, err)
	}
	// Make the rename itself durable.
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// ensureDir creates the store's directory, and keeps it private.
func (s *Store) ensureDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(s.dir, 0o700)
}

// Get returns the exact bytes stored under name. A missing secret (or
// store) is ErrNotFound. Only a regular file directly in the store counts:
// a symlink or directory there is an error, not a secret.
func (s *Store) Get(name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w %s in %s", ErrNotFound, name, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w %s in %s", ErrNotFound, name, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("get secret %s: %s is a %s, not a regular file", name, filepath.Join(s.dir, name), fsutil.FileKind(fi.Mode()))
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxValueBytes+1))
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	if len(data) > MaxValueBytes {
		return nil, fmt.Errorf("get secret %s: %w: more than %d bytes", name, ErrTooLarge, MaxValueBytes)
	}
	return data, nil
}

// List describes every secret in the store, sorted by name; never a value.
// Files that are not secrets (temporary files, other names, non-regular
// files) are left out. A store that does not exist yet is empty.
func (s *Store) List() ([]Info, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	var out []Info
	for _, e := range entries {
		if ValidName(e.Name()) != nil || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		out = append(out, Info{Name: e.Name(), Size: fi.Size(), Modified: fi.ModTime().UTC()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete removes the secret name; a missing one is ErrNotFound.
func (s *Store) Delete(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	path := filepath.Join(s.dir, name)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w %s in %s", ErrNotFound, name, s.dir)
	}
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("delete secret %s: %s is a directory, not a secret", name, path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	return nil
}
