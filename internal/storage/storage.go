package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"
)

// ErrNotFound is returned (wrapped) when a key does not exist. Callers use errors.Is.
var ErrNotFound = errors.New("object not found")

// ErrIntegrity is returned (wrapped) when content did not match its expected
// sha256 or size.
var ErrIntegrity = errors.New("integrity check failed")

// ErrInvalidKey is returned (wrapped) when a key or list prefix is not a clean
// slash-separated relative path. The worker treats it like a bad bundle path.
var ErrInvalidKey = errors.New("invalid key")

// Checker is a Store that can tell, before it is used, whether it is there
// at all (S3: the bucket exists).
type Checker interface {
	Check(ctx context.Context) error
}

// Store is the storage seam: the few verbs agora needs from a bucket or a directory.
//
// Keys are ValidateKey paths. A key must not also be the "directory" of other
// keys ("a" and "a/b"): S3 allows it, a filesystem cannot, so the fs backend
// refuses the second Put.
type Store interface {
	// Put stores r at key. It is atomic: readers see the previous object or the
	// new one, never a partial one.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens the object at key; the caller closes it. A missing key gives ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat describes the object at key. A missing key gives ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes the object at key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the keys that start with prefix, sorted. The prefix is a
	// plain string prefix, as in S3: "a/b" matches "a/b/c" and "a/bc".
	List(ctx context.Context, prefix string) ([]string, error)
	// URI names the object at key, e.g. file:///data/dispatches/x/spec.json or
	// s3://bucket/prefix/dispatches/x/spec.json. ResolveURI inverts it.
	URI(key string) string
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key  string
	Size int64
}

// Options configure Open. The zero value is valid.
type Options struct {
	// Logger receives debug and cleanup messages; nil discards them.
	Logger *slog.Logger
	// S3 configures s3:// URIs; query parameters on the URI override it.
	S3 S3Options
	// Scratch marks a file:// store whose content need not survive a crash
	// of the host, such as the runner's per-dispatch staged store: Put
	// skips the fsync before its rename (still atomic, no longer durable).
	// A 1 MB partial_state staged for a resumed round waited 5–30 ms on it
	// on a busy disk. It does not apply to S3.
	Scratch bool
	// Shared makes a file:// store's directories and files readable by
	// every user (0755/0644), for a store another user reads, such as the
	// staged store a container's user reads. By default they are private
	// to the user that writes them (0700/0600): a data directory holds
	// tasks' inputs, outputs and workspaces. It does not apply to S3.
	Shared bool
	// SpoolDir is where the store's users spool bytes before they are
	// stored (PutBlob's copy while it hashes, an S3 upload of a stream, a
	// workspace snapshot being packed; CreateTemp): agora serve and agora
	// runner give their data dir's tmp/, so those bytes stay private with
	// the data and a container with no writable /tmp still works. It is
	// created (0700) on first use. Empty means os.TempDir().
	SpoolDir string
}

// S3Options configure the S3 backend.
type S3Options struct {
	// Endpoint is a custom S3 endpoint such as http://127.0.0.1:9000. Empty means
	// the SDK's own resolution (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS).
	Endpoint string
	// Region defaults to the SDK's resolution, then to us-east-1.
	Region string
	// PathStyle selects path-style addressing (http://host/bucket/key). nil means
	// true when a custom endpoint is in use, false otherwise.
	PathStyle *bool
	// AccessKeyID and SecretAccessKey are optional static credentials; without
	// them the SDK's default credential chain applies.
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken goes with temporary static credentials.
	SessionToken string
	// HTTPClient replaces the SDK's HTTP client, e.g. so that tests can close
	// its idle connections. It is used as given: AWS_CA_BUNDLE does not apply to it.
	HTTPClient *http.Client
}

// ValidateKey reports whether key is a clean slash-separated relative path:
// not empty, not absolute, no empty, "." or ".." segments, no backslash, no NUL,
// valid UTF-8. Every backend calls it, so a key means the same thing everywhere
// and can never escape a directory or a prefix. The error names the key and
// wraps ErrInvalidKey.
func ValidateKey(key string) error {
	if reason := keyProblem(key); reason != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, reason)
	}
	return nil
}

func keyProblem(key string) string {
	switch {
	case key == "":
		return "empty"
	case !utf8.ValidString(key):
		return "not valid UTF-8"
	case strings.ContainsRune(key, 0):
		return "contains NUL"
	case strings.ContainsRune(key, '\\'):
		return "contains a backslash (keys use /)"
	case strings.HasPrefix(key, "/"):
		return "absolute (keys are relative)"
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return "empty path segment"
		case ".", "..":
			return fmt.Sprintf("%q segment", seg)
		}
	}
	return ""
}

// validatePrefix accepts "" (everything) or a key, optionally ending in "/".
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if reason := keyProblem(strings.TrimSuffix(prefix, "/")); reason != "" {
		return fmt.Errorf("%w: prefix %q: %s", ErrInvalidKey, prefix, reason)
	}
	return nil
}

// ctxReader stops a long copy as soon as ctx is done, so a cancelled Put
// does not drain its reader first.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
