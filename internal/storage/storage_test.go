package storage_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
)

func TestMain(m *testing.M) {
	// S3 tests close their HTTP clients' idle connections and stop their
	// servers in t.Cleanup, so no option is needed here.
	goleak.VerifyTestMain(m)
}

// testLogger routes a store's logs to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func fileURI(dir string) string { return (&url.URL{Scheme: "file", Path: dir}).String() }

func openFS(t *testing.T, dir string) storage.Store {
	t.Helper()
	s, err := storage.Open(t.Context(), fileURI(dir), storage.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Open(%s): %v", fileURI(dir), err)
	}
	return s
}

func TestFS(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Store { return openFS(t, t.TempDir()) })
}

// TestFSScratch: a scratch store (no fsync) keeps the Store contract.
func TestFSScratch(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Store {
		dir := t.TempDir()
		s, err := storage.Open(t.Context(), fileURI(dir), storage.Options{Logger: testLogger(t), Scratch: true})
		if err != nil {
			t.Fatalf("Open(%s, scratch): %v", fileURI(dir), err)
		}
		return s
	})
}

func TestFSLayout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "created", "by open")
	s := openFS(t, dir)

	if err := s.Put(ctx, "dispatches/x/spec.json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	}
	// Objects are plain files where their keys say, so people can look at them.
	if b, err := os.ReadFile(filepath.Join(dir, "dispatches", "x", "spec.json")); err != nil || string(b) != "{}" {
		t.Errorf("file for dispatches/x/spec.json = %q, %v, want {}", b, err)
	}
	if got, want := s.URI("dispatches/x/spec.json"), "file://"+filepath.ToSlash(dir)+"/dispatches/x/spec.json"; strings.ReplaceAll(got, "%20", " ") != want {
		t.Errorf("URI = %q, want %q", got, want)
	}
	// A file in the directory that is not a key is not listed.
	if err := os.WriteFile(filepath.Join(dir, "dispatches", ".agora-tmp-leftover"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.List(ctx, ""); err != nil || len(keys) != 1 {
		t.Errorf("List = %q, %v, want only dispatches/x/spec.json", keys, err)
	}

	t.Run("temp prefix reserved", func(t *testing.T) {
		err := s.Put(ctx, "a/.agora-tmp-x", strings.NewReader(""))
		if !errors.Is(err, storage.ErrInvalidKey) || !strings.Contains(err.Error(), `"a/.agora-tmp-x"`) {
			t.Errorf("Put(a/.agora-tmp-x) error = %v, want ErrInvalidKey naming the key", err)
		}
	})
	t.Run("symlink cannot escape", func(t *testing.T) {
		outside := t.TempDir()
		if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if rc, err := s.Get(ctx, "link/secret"); err == nil {
			rc.Close()
			t.Errorf("Get(link/secret) through a symlink out of the store succeeded, want an error")
		}
		if err := s.Put(ctx, "link/planted", strings.NewReader("x")); err == nil {
			t.Errorf("Put(link/planted) through a symlink out of the store succeeded, want an error")
		}
		if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("file planted outside the store: stat error = %v", err)
		}
	})
	t.Run("resolve refuses a sibling directory", func(t *testing.T) {
		sibling := fileURI(filepath.Join(filepath.Dir(dir), "other", "k"))
		if key, err := storage.ResolveURI(s, sibling); err == nil {
			t.Errorf("ResolveURI(%q) = %q, want an error", sibling, key)
		}
		parent := fileURI(filepath.Join(filepath.Dir(dir), "k"))
		if key, err := storage.ResolveURI(s, parent); err == nil {
			t.Errorf("ResolveURI(%q) = %q, want an error", parent, key)
		}
	})
}

func TestFSOpenOnFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := storage.Open(t.Context(), fileURI(file), storage.Options{})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Open(%s) error = %v, want an error naming the path", fileURI(file), err)
	}
}

func TestOpenBadURIs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ uri, want string }{
		{"ftp://x", `storage uri "ftp://x": unsupported scheme "ftp" (want file or s3)`},
		{"", `storage uri "": missing scheme`},
		{"/data", `storage uri "/data": missing scheme`},
		{"::", `storage uri "::": parse`},
		{"file:relative/dir", `storage uri "file:relative/dir": relative path "relative/dir"`},
		{"file://host/dir", `storage uri "file://host/dir": host "host" not supported`},
		{"file://", `storage uri "file://": missing directory`},
		{"file:///data?x=1", `query not supported`},
		{"file:///data#frag", `fragment not supported`},
		{"s3://", `storage uri "s3://": missing bucket`},
		{"s3:bucket", `missing bucket`},
		{"s3://Bad_Bucket/p", `bucket "Bad_Bucket": want lower-case letters`},
		{"s3://ab", `bucket "ab": want 3 to 63 characters`},
		{"s3://-bucket", `must start and end with a letter or digit`},
		{"s3://bucket:9000/p", `the host is a bucket name, not an endpoint`},
		{"s3://key:secret@bucket", `user info not supported`},
		{"s3://bucket/a/../b", `prefix "a/../b": ".." segment`},
		{"s3://bucket/a//b", `prefix "a//b": empty path segment`},
		{"s3://bucket?endpoint=127.0.0.1:9000", `endpoint "127.0.0.1:9000": want http(s)://host[:port]`},
		{"s3://bucket?path_style=maybe", `path_style "maybe": want true or false`},
		{"s3://bucket?region=", `empty region`},
		{"s3://bucket?region=a&region=b", `query parameter "region" given 2 times`},
		{"s3://bucket?endpiont=http://x&zone=1", `unknown query parameter(s) endpiont, zone`},
		{"s3://bucket#frag", `fragment not supported`},
	} {
		_, err := storage.Open(t.Context(), tc.uri, storage.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) error = %v, want it to contain %q", tc.uri, err, tc.want)
		}
	}
}

func TestOpenFileURIs(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, tc := range []struct{ uri, wantDir string }{
		{fileURI(base) + "/a", filepath.Join(base, "a")},
		{fileURI(base) + "/b/", filepath.Join(base, "b")},
		{"file://localhost" + filepath.ToSlash(base) + "/c", filepath.Join(base, "c")},
		{fileURI(base) + "/with%20space", filepath.Join(base, "with space")},
		{fileURI(base) + "/x/../d", filepath.Join(base, "d")},
	} {
		s, err := storage.Open(t.Context(), tc.uri, storage.Options{})
		if err != nil {
			t.Errorf("Open(%q): %v", tc.uri, err)
			continue
		}
		if fi, err := os.Stat(tc.wantDir); err != nil || !fi.IsDir() {
			t.Errorf("Open(%q) did not create %s: %v", tc.uri, tc.wantDir, err)
		}
		if got, want := s.URI("k"), fileURI(filepath.Join(tc.wantDir, "k")); got != want {
			t.Errorf("Open(%q).URI(k) = %q, want %q", tc.uri, got, want)
		}
	}
}

func TestOpenS3URIs(t *testing.T) {
	// Not parallel: it pins the AWS environment so that defaults are predictable.
	for _, name := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	yes, no := true, false

	for _, tc := range []struct {
		name string
		uri  string
		opts storage.S3Options
		want storage.S3Settings
		key  string // URI("k") wants this
	}{
		{
			name: "bucket only, AWS defaults",
			uri:  "s3://my-bucket",
			want: storage.S3Settings{Bucket: "my-bucket", Region: "us-east-1"},
			key:  "s3://my-bucket/k",
		},
		{
			name: "prefix, trailing slash dropped",
			uri:  "s3://my-bucket/agora/prod/",
			want: storage.S3Settings{Bucket: "my-bucket", Prefix: "agora/prod/", Region: "us-east-1"},
			key:  "s3://my-bucket/agora/prod/k",
		},
		{
			name: "query endpoint implies path style",
			uri:  "s3://b.with.dots/p?endpoint=http://127.0.0.1:9000&region=eu-west-3",
			want: storage.S3Settings{Bucket: "b.with.dots", Prefix: "p/", Endpoint: "http://127.0.0.1:9000", Region: "eu-west-3", PathStyle: true},
			key:  "s3://b.with.dots/p/k",
		},
		{
			name: "query overrides options",
			uri:  "s3://bkt?endpoint=http://minio:9000&path_style=false&region=us-west-2",
			opts: storage.S3Options{Endpoint: "http://other:1", Region: "ap-south-1", PathStyle: &yes},
			want: storage.S3Settings{Bucket: "bkt", Endpoint: "http://minio:9000", Region: "us-west-2"},
			key:  "s3://bkt/k",
		},
		{
			name: "options apply without query",
			uri:  "s3://bkt",
			opts: storage.S3Options{Endpoint: "https://s3.example.com", Region: "ap-south-1"},
			want: storage.S3Settings{Bucket: "bkt", Endpoint: "https://s3.example.com", Region: "ap-south-1", PathStyle: true},
			key:  "s3://bkt/k",
		},
		{
			name: "explicit virtual-host style with endpoint",
			uri:  "s3://bkt",
			opts: storage.S3Options{Endpoint: "https://s3.example.com", PathStyle: &no},
			want: storage.S3Settings{Bucket: "bkt", Endpoint: "https://s3.example.com", Region: "us-east-1"},
			key:  "s3://bkt/k",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := storage.Open(t.Context(), tc.uri, storage.Options{S3: tc.opts})
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.uri, err)
			}
			if got := storage.S3SettingsOf(s); got != tc.want {
				t.Errorf("Open(%q) settings = %+v, want %+v", tc.uri, got, tc.want)
			}
			if got := s.URI("k"); got != tc.key {
				t.Errorf("Open(%q).URI(k) = %q, want %q", tc.uri, got, tc.key)
			}
		})
	}

	t.Run("endpoint from the environment implies path style", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:7070")
		t.Setenv("AWS_REGION", "eu-north-1")
		s, err := storage.Open(t.Context(), "s3://bkt", storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := storage.S3Settings{Bucket: "bkt", Endpoint: "http://127.0.0.1:7070", Region: "eu-north-1", PathStyle: true}
		if got := storage.S3SettingsOf(s); got != want {
			t.Errorf("settings = %+v, want %+v", got, want)
		}
	})
}

func TestValidateKey(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"a", "a/b/c.json", ".hidden/x", "a/..b", "...", "dir with space/ü", "blobs/sha256/00"} {
		if err := storage.ValidateKey(key); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", key, err)
		}
	}
	for key, why := range map[string]string{
		"":         "empty",
		"/a":       "absolute",
		"a/..":     `".." segment`,
		"./a":      `"." segment`,
		"a\\b":     "backslash",
		"a\x00":    "NUL",
		"a//b":     "empty path segment",
		"a/":       "empty path segment",
		"\xff\xfe": "UTF-8",
	} {
		err := storage.ValidateKey(key)
		if !errors.Is(err, storage.ErrInvalidKey) || !strings.Contains(err.Error(), why) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey saying %q", key, err, why)
		}
	}
}

func TestBlobKey(t *testing.T) {
	t.Parallel()
	if got := storage.BlobKey("ab12"); got != "blobs/sha256/ab12" {
		t.Errorf("BlobKey(ab12) = %q", got)
	}
}

// A cancelled context stops PutBlob before it reads everything.
func TestPutBlobHonoursContextWhileSpooling(t *testing.T) {
	t.Parallel()
	s := openFS(t, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := storage.PutBlob(ctx, s, bytes.NewReader(make([]byte, 1<<20)))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("PutBlob(cancelled) error = %v, want context.Canceled", err)
	}
}

// TestFSModes: a store's directories and files are private to the user
// that writes them (a data dir holds tasks' inputs and outputs), unless it
// is shared (the staged store a container's user reads).
func TestFSModes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		shared            bool
		wantDir, wantFile os.FileMode
	}{{false, 0o700, 0o600}, {true, 0o755, 0o644}} {
		dir := filepath.Join(t.TempDir(), "store")
		s, err := storage.Open(t.Context(), fileURI(dir), storage.Options{Logger: testLogger(t), Shared: tt.shared})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(t.Context(), "dispatches/x/spec.json", strings.NewReader("{}")); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			path string
			want os.FileMode
		}{{dir, tt.wantDir}, {filepath.Join(dir, "dispatches"), tt.wantDir}, {filepath.Join(dir, "dispatches", "x"), tt.wantDir},
			{filepath.Join(dir, "dispatches", "x", "spec.json"), tt.wantFile}} {
			info, err := os.Stat(c.path)
			if err != nil {
				t.Fatal(err)
			}
			// The umask may take bits away, never add them.
			if got := info.Mode().Perm(); got&^c.want != 0 || tt.shared == false && got != c.want {
				t.Errorf("shared %v: %s is %#o, want %#o", tt.shared, c.path, got, c.want)
			}
		}
	}
}
