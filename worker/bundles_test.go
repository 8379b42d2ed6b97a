package worker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
)

// testStore is a real filesystem store in t.TempDir().
func testStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := storage.Open(context.Background(), "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatalf("open storage: %v", err)
	}
	return store
}

// putBundle stores data content-addressed and returns its ref, without a
// URI (so it is read from blobs/sha256/<sha256>).
func putBundle(t *testing.T, store storage.Store, name, data string) schemas.BundleRef {
	t.Helper()
	_, ref, err := storage.PutBlob(context.Background(), store, strings.NewReader(data))
	if err != nil {
		t.Fatalf("put bundle %s: %v", name, err)
	}
	return schemas.BundleRef{Name: name, SHA256: ref.SHA256}
}

func TestBuiltinSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"token": "s3cret\n", "crlf": "s3cret\r\n", "plain": "s3cret", "multi": "line1\nline2\n\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := BuiltinSecrets{Environ: []string{"TOKEN=s3cret", "WITH_EQUALS=a=b", "EMPTY=", "PATH=/bin"}}
	good := map[string]string{
		"env:TOKEN":                             "s3cret",
		"env:WITH_EQUALS":                       "a=b",
		"env:EMPTY":                             "",
		"file:" + filepath.Join(dir, "token"):   "s3cret",
		"file:" + filepath.Join(dir, "crlf"):    "s3cret",
		"file:" + filepath.Join(dir, "plain"):   "s3cret",
		"file:" + filepath.Join(dir, "multi"):   "line1\nline2",
		"file://" + filepath.Join(dir, "token"): "s3cret",
		"file:" + filepath.Join(dir, "..", filepath.Base(dir), "token"): "s3cret",
	}
	for ref, want := range good {
		got, err := b.Resolve(context.Background(), ref)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q, nil", ref, got, err, want)
		}
	}
	bad := map[string]string{
		"TOKEN":                              "has no scheme",
		"vault:kv/token":                     `unsupported secret ref scheme "vault"`,
		"ENV:TOKEN":                          `unsupported secret ref scheme "ENV"`,
		"env:NOT_SET":                        "environment variable NOT_SET is not set",
		"env:":                               "is not set",
		"file:" + filepath.Join(dir, "nope"): "no such file",
		"file:" + dir:                        "is a directory",
	}
	for ref, want := range bad {
		got, err := b.Resolve(context.Background(), ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) = %q, %v; want an error containing %q", ref, got, err, want)
		}
	}
}

func TestFetchEnv(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secretFile, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resolver := BuiltinSecrets{Environ: []string{"WORKER_TOKEN=from-the-env"}}

	type bundle struct{ name, data string }
	tests := []struct {
		name        string
		bundles     []bundle
		mutate      func(t *testing.T, store storage.Store, refs []schemas.BundleRef) []schemas.BundleRef
		wantEnv     []string
		wantSecrets []string
	}{
		{name: "no bundles"},
		{name: "values, sorted by name", bundles: []bundle{{"b", `{"values":{"B":"2","A":"1","EMPTY":""}}`}},
			wantEnv: []string{"A=1", "B=2", "EMPTY="}},
		{name: "env: and file: secrets after the values",
			bundles:     []bundle{{"s", `{"values":{"Z":"last letter"},"secrets":{"GH":"env:WORKER_TOKEN","API":"file:` + secretFile + `"}}`}},
			wantEnv:     []string{"Z=last letter", "API=from-a-file", "GH=from-the-env"},
			wantSecrets: []string{"from-a-file", "from-the-env"}},
		{name: "bundles in order, later ones last", bundles: []bundle{{"one", `{"values":{"X":"1"}}`}, {"two", `{"values":{"X":"2","Y":"y"}}`}},
			wantEnv: []string{"X=1", "X=2", "Y=y"}},
		{name: "empty object", bundles: []bundle{{"empty", `{}`}}},
		{name: "read from its uri", bundles: []bundle{{"u", `{"values":{"U":"1"}}`}},
			mutate: func(t *testing.T, store storage.Store, refs []schemas.BundleRef) []schemas.BundleRef {
				refs[0].URI = store.URI(storage.BlobKey(refs[0].SHA256))
				return refs
			},
			wantEnv: []string{"U=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := testStore(t)
			var refs []schemas.BundleRef
			for _, b := range tt.bundles {
				refs = append(refs, putBundle(t, store, b.name, b.data))
			}
			if tt.mutate != nil {
				refs = tt.mutate(t, store, refs)
			}
			env, secrets, err := fetchEnv(context.Background(), store, refs, resolver)
			if err != nil {
				t.Fatalf("fetchEnv: %v", err)
			}
			if !slices.Equal(env, tt.wantEnv) {
				t.Errorf("fetchEnv env = %q, want %q", env, tt.wantEnv)
			}
			var values []string
			for _, s := range secrets {
				values = append(values, s.Value)
			}
			if !slices.Equal(values, tt.wantSecrets) {
				t.Errorf("fetchEnv secrets = %q, want %q", secrets, tt.wantSecrets)
			}
		})
	}
}

func TestFetchEnvFailures(t *testing.T) {
	t.Parallel()
	const secretValue = "never-in-an-error"
	resolver := BuiltinSecrets{Environ: []string{"WORKER_TOKEN=" + secretValue}}
	missingFile := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name   string
		data   string
		mutate func(t *testing.T, store storage.Store, ref *schemas.BundleRef)
		// store is nil for the "no storage" row.
		noStore bool
		reason  schemas.FailureReason
		want    []string
	}{
		{name: "not JSON", data: `{"values":`,
			reason: schemas.ReasonWorkerFailed, want: []string{"env bundle greet", `want {"values"`}},
		{name: "not an object", data: `["A=1"]`,
			reason: schemas.ReasonWorkerFailed, want: []string{"env bundle greet"}},
		{name: "a value that is not a string", data: `{"values":{"N":1}}`,
			reason: schemas.ReasonWorkerFailed, want: []string{"env bundle greet"}},
		{name: "unknown field", data: `{"values":{"A":"1"},"vars":{"B":"2"}}`,
			reason: schemas.ReasonWorkerFailed, want: []string{"env bundle greet", `unknown field "vars"`}},
		{name: "trailing data after the object", data: `{"values":{"A":"1"}} {"values":{"B":"2"}}`,
			reason: schemas.ReasonWorkerFailed, want: []string{"env bundle greet", "after the JSON value"}},
		{name: "trailing garbage after the object", data: `{"values":{"A":"1"}}xyz`,
			reason: schemas.ReasonWorkerFailed, want: []string{"env bundle greet", "after the JSON value"}},
		{name: "bad value name", data: `{"values":{"1BAD":"x"}}`,
			reason: schemas.ReasonWorkerFailed, want: []string{"env bundle greet", `"1BAD" is not a valid environment variable name`}},
		{name: "value name with =", data: `{"values":{"A=B":"x"}}`,
			reason: schemas.ReasonWorkerFailed, want: []string{`"A=B" is not a valid`}},
		{name: "bad secret name", data: `{"secrets":{"MY-TOKEN":"env:WORKER_TOKEN"}}`,
			reason: schemas.ReasonWorkerFailed, want: []string{`"MY-TOKEN" is not a valid environment variable name`}},
		{name: "unknown secret scheme", data: `{"secrets":{"TOKEN":"vault:kv/token"}}`,
			reason: schemas.ReasonFetchFailed, want: []string{"env bundle greet", "secret TOKEN", `ref "vault:kv/token"`, "unsupported secret ref scheme"}},
		{name: "secret from a missing variable", data: `{"secrets":{"TOKEN":"env:NOT_SET_ANYWHERE"}}`,
			reason: schemas.ReasonFetchFailed, want: []string{"secret TOKEN", `ref "env:NOT_SET_ANYWHERE"`, "NOT_SET_ANYWHERE is not set"}},
		{name: "secret from an unreadable file", data: `{"secrets":{"TOKEN":"file:` + missingFile + `"}}`,
			reason: schemas.ReasonFetchFailed, want: []string{"secret TOKEN", missingFile, "no such file"}},
		{name: "a good secret before a bad one", data: `{"secrets":{"A":"env:WORKER_TOKEN","B":"env:NOPE"}}`,
			reason: schemas.ReasonFetchFailed, want: []string{"secret B", "NOPE is not set"}},
		{name: "hash mismatch", data: `{"values":{"A":"1"}}`,
			mutate: func(t *testing.T, store storage.Store, ref *schemas.BundleRef) {
				// Replace the object behind the ref.
				if err := store.Put(context.Background(), storage.BlobKey(ref.SHA256), strings.NewReader(`{"values":{"A":"tampered"}}`)); err != nil {
					t.Fatal(err)
				}
			},
			reason: schemas.ReasonIntegrityFailed, want: []string{"env bundle greet", "sha256"}},
		{name: "sha256 not hex", data: `{}`,
			mutate: func(_ *testing.T, _ storage.Store, ref *schemas.BundleRef) { ref.SHA256 = "not-a-hash" },
			reason: schemas.ReasonIntegrityFailed, want: []string{"env bundle greet", "not 64 hex characters"}},
		{name: "missing blob", data: `{}`,
			mutate: func(_ *testing.T, _ storage.Store, ref *schemas.BundleRef) { ref.SHA256 = strings.Repeat("a", 64) },
			reason: schemas.ReasonFetchFailed, want: []string{"fetch env bundle greet"}},
		{name: "uri outside the store", data: `{}`,
			mutate: func(_ *testing.T, _ storage.Store, ref *schemas.BundleRef) { ref.URI = "file:///etc/passwd" },
			reason: schemas.ReasonFetchFailed, want: []string{"fetch env bundle greet", "not an object in"}},
		{name: "bundle larger than the cap", data: `{"values":{"BIG":"` + strings.Repeat("x", maxEnvBundleBytes) + `"}}`,
			reason: schemas.ReasonIntegrityFailed, want: []string{"env bundle greet", "want at most"}},
		{name: "no storage", data: `{}`, noStore: true,
			reason: schemas.ReasonFetchFailed, want: []string{"fetch env bundle greet", "no AGORA_STORAGE_URI"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := testStore(t)
			ref := putBundle(t, store, "greet", tt.data)
			if tt.mutate != nil {
				tt.mutate(t, store, &ref)
			}
			if tt.noStore {
				store = nil
			}
			// A good bundle first: the failure of the second fails the whole.
			refs := []schemas.BundleRef{ref}
			if store != nil {
				refs = append([]schemas.BundleRef{putBundle(t, store, "ok", `{"values":{"OK":"1"}}`)}, refs...)
			}
			env, secrets, err := fetchEnv(context.Background(), store, refs, resolver)
			if env != nil || secrets != nil {
				t.Errorf("fetchEnv returned env %q and secrets %q with its error", env, secrets)
			}
			wantOutcome(t, "fetchEnv", err, tt.reason, tt.want...)
			if err != nil && strings.Contains(err.Error(), secretValue) {
				t.Errorf("fetchEnv error %q holds a secret value", err)
			}
		})
	}
}

// TestFetchCapabilities: capabilities are fetched by hash, in order, and
// verified like env bundles.
func TestFetchCapabilities(t *testing.T) {
	t.Parallel()
	store := testStore(t)
	a, b := tarball(t, tarEntry{name: "a.txt", body: "a"}), gzipped(t, tarball(t, tarEntry{name: "b.txt", body: "b"}))
	refs := []schemas.BundleRef{putBundle(t, store, "a", string(a)), putBundle(t, store, "b", string(b))}
	caps, err := fetchCapabilities(context.Background(), store, refs)
	if err != nil {
		t.Fatalf("fetchCapabilities: %v", err)
	}
	if len(caps) != 2 || caps[0].ref.Name != "a" || !bytes.Equal(caps[0].data, a) || caps[1].ref.Name != "b" || !bytes.Equal(caps[1].data, b) {
		t.Errorf("fetchCapabilities = %d capabilities, want a then b with their bytes", len(caps))
	}

	refs[1].SHA256 = strings.Repeat("0", 64)
	_, err = fetchCapabilities(context.Background(), store, refs)
	wantOutcome(t, "fetchCapabilities", err, schemas.ReasonFetchFailed, "fetch capability b")
}
