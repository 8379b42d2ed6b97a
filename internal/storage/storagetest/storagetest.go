// Package storagetest is the conformance suite every storage.Store
// implementation passes: the behaviour the worker and the orchestrator rely on,
// written once and run against the filesystem and each S3 server.
package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agoradev/agora/internal/storage"
)

// Run runs the suite. newStore returns a fresh, empty store for one subtest; it
// registers its own cleanup on t. Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Overwrite", testOverwrite},
		{"SeekableReaderFromOffset", testSeekableFromOffset},
		{"LargeStream", testLargeStream},
		{"AtomicPutMidStream", testAtomicMidStream},
		{"AtomicConcurrentReaders", testAtomicConcurrentReaders},
		{"NotFound", testNotFound},
		{"Stat", testStat},
		{"DeleteIdempotent", testDelete},
		{"ListSortedByPrefix", testList},
		{"ListPaginates", testListMany},
		{"BadKeysRejected", testBadKeys},
		{"URIResolveRoundTrip", testURIRoundTrip},
		{"ResolveURIRejectsOutside", testResolveOutside},
		{"PutBlobIdempotent", testPutBlob},
		{"GetVerified", testGetVerified},
		{"GetVerifiedOversizeReadsLittle", testGetVerifiedOversize},
		{"CancelledContext", testCancelledContext},
		{"CancelMidPut", testCancelMidPut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func put(t *testing.T, s storage.Store, key string, data []byte) {
	t.Helper()
	// A plain io.Reader (not seekable) is the common case: a pipe, a response body.
	if err := s.Put(t.Context(), key, struct{ io.Reader }{bytes.NewReader(data)}); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func get(t *testing.T, s storage.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return data
}

func wantBytes(t *testing.T, call string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s = %d bytes %q…, want %d bytes %q…", call, len(got), head(got), len(want), head(want))
	}
}

func head(b []byte) []byte { return b[:min(len(b), 32)] }

func list(t *testing.T, s storage.Store, prefix string) []string {
	t.Helper()
	keys, err := s.List(t.Context(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

// pattern returns n bytes that differ at every offset modulo 251, so a shifted
// or truncated copy never compares equal.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251) ^ seed
	}
	return b
}

func testRoundTrip(t *testing.T, s storage.Store) {
	cases := map[string][]byte{
		"dispatches/d-1/spec.json":     []byte(`{"dispatch_id":"d-1"}`),
		"empty":                        {},
		"binary/all-bytes":             pattern(256, 0),
		"dir with space/ü/100% & =+.x": []byte("odd but valid key"),
	}
	for key, data := range cases {
		put(t, s, key, data)
	}
	for key, data := range cases {
		wantBytes(t, "Get("+strconv.Quote(key)+")", get(t, s, key), data)
	}
}

func testOverwrite(t *testing.T, s storage.Store) {
	put(t, s, "k", []byte("a longer first version"))
	put(t, s, "k", []byte("v2"))
	wantBytes(t, `Get("k") after overwrite`, get(t, s, "k"), []byte("v2"))
}

func testSeekableFromOffset(t *testing.T, s storage.Store) {
	// Put stores what remains of a seekable reader, like io.Copy would.
	r := bytes.NewReader([]byte("skip:keep"))
	if _, err := r.Seek(5, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "k", r); err != nil {
		t.Fatalf("Put: %v", err)
	}
	wantBytes(t, `Get("k")`, get(t, s, "k"), []byte("keep"))
}

func testLargeStream(t *testing.T, s storage.Store) {
	data := pattern(5<<20+3, 7)
	put(t, s, "large", data)
	wantBytes(t, `Get("large")`, get(t, s, "large"), data)
}

func testAtomicMidStream(t *testing.T, s storage.Store) {
	ctx := t.Context()
	oldData, newData := pattern(1<<20, 1), pattern(1<<20, 2)
	put(t, s, "obj", oldData)

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Put(ctx, "obj", pr) }()
	// Write returns once Put has consumed these bytes: half of the new object
	// is now in flight, and readers must still see the old one, whole.
	if _, err := pw.Write(newData[:len(newData)/2]); err != nil {
		t.Fatalf("write first half: %v", err)
	}
	wantBytes(t, "Get during Put", get(t, s, "obj"), oldData)
	if keys := list(t, s, ""); !slices.Equal(keys, []string{"obj"}) {
		t.Errorf("List during Put = %q, want [obj]", keys)
	}
	if _, err := pw.Write(newData[len(newData)/2:]); err != nil {
		t.Fatalf("write second half: %v", err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Put: %v", err)
	}
	wantBytes(t, "Get after Put", get(t, s, "obj"), newData)
}

func testAtomicConcurrentReaders(t *testing.T, s storage.Store) {
	const size, writes, readers = 256 << 10, 24, 4
	versions := make([][]byte, 4)
	for i := range versions {
		versions[i] = pattern(size, byte(i*17))
	}
	put(t, s, "obj", versions[0])

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range readers {
		wg.Go(func() {
			for {
				data, err := readKey(t.Context(), s, "obj")
				reads.Add(1)
				if err != nil {
					t.Errorf("Get during concurrent Puts: %v", err)
					return
				}
				if !slices.ContainsFunc(versions, func(v []byte) bool { return bytes.Equal(v, data) }) {
					t.Errorf("Get during concurrent Puts = %d bytes %q…, not any whole version", len(data), head(data))
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	for i := 1; i <= writes; i++ {
		put(t, s, "obj", versions[i%len(versions)])
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads during %d puts", reads.Load(), writes)
	wantBytes(t, "Get after Puts", get(t, s, "obj"), versions[writes%len(versions)])
}

func readKey(ctx context.Context, s storage.Store, key string) ([]byte, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func testNotFound(t *testing.T, s storage.Store) {
	ctx := t.Context()
	put(t, s, "a/b", []byte("x"))
	for _, key := range []string{
		"missing",
		"a",     // only a prefix of an object
		"a/b/c", // below an object
		"a/missing",
	} {
		if _, err := s.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrNotFound", key, err)
		} else if !strings.Contains(err.Error(), key) {
			t.Errorf("Get(%q) error %q does not name the key", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Stat(%q) error = %v, want ErrNotFound", key, err)
		}
	}
}

func testStat(t *testing.T, s storage.Store) {
	put(t, s, "x/y.json", []byte("12345"))
	put(t, s, "x/empty", nil)
	for key, want := range map[string]int64{"x/y.json": 5, "x/empty": 0} {
		info, err := s.Stat(t.Context(), key)
		if err != nil {
			t.Fatalf("Stat(%q): %v", key, err)
		}
		if info != (storage.ObjectInfo{Key: key, Size: want}) {
			t.Errorf("Stat(%q) = %+v, want {Key:%s Size:%d}", key, info, key, want)
		}
	}
}

func testDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	put(t, s, "d/one", []byte("1"))
	put(t, s, "d/two", []byte("2"))
	for i := range 2 { // the second time the key is already gone
		if err := s.Delete(ctx, "d/one"); err != nil {
			t.Fatalf("Delete(d/one) #%d: %v", i+1, err)
		}
	}
	if err := s.Delete(ctx, "never/existed"); err != nil {
		t.Errorf("Delete(never/existed): %v, want nil", err)
	}
	// "d" is a prefix, not an object: deleting it must not touch what is below.
	if err := s.Delete(ctx, "d"); err != nil {
		t.Errorf("Delete(d): %v, want nil", err)
	}
	if _, err := s.Get(ctx, "d/one"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get(d/one) after Delete: %v, want ErrNotFound", err)
	}
	if got := list(t, s, ""); !slices.Equal(got, []string{"d/two"}) {
		t.Errorf("List after Delete = %q, want [d/two]", got)
	}
}

func testList(t *testing.T, s storage.Store) {
	// No key is also a "directory" of another key ("x/a" and "x/a/c"): S3 allows
	// it, a filesystem cannot, so agora's key layouts avoid it.
	for _, k := range []string{"x/b", "y/1", "x/a/c", "x-y", "x/ab", "xy/z", "x/a/b/d"} {
		put(t, s, k, []byte(k))
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"x-y", "x/a/b/d", "x/a/c", "x/ab", "x/b", "xy/z", "y/1"}},
		{"x/", []string{"x/a/b/d", "x/a/c", "x/ab", "x/b"}},
		{"x", []string{"x-y", "x/a/b/d", "x/a/c", "x/ab", "x/b", "xy/z"}},
		{"x/a", []string{"x/a/b/d", "x/a/c", "x/ab"}},
		{"x/a/", []string{"x/a/b/d", "x/a/c"}},
		{"x/a/b", []string{"x/a/b/d"}},
		{"y/1", []string{"y/1"}},
		{"nothing/", nil},
		{"x/b/", nil}, // below an object
	} {
		got := list(t, s, tc.prefix)
		if len(got) != len(tc.want) || (len(got) > 0 && !slices.Equal(got, tc.want)) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func testListMany(t *testing.T, s storage.Store) {
	// More keys than an S3 harness's lowered page size: List must follow pages.
	var want []string
	for i := range 23 {
		k := "many/" + strconv.Itoa(i)
		put(t, s, k, []byte(k))
		want = append(want, k)
	}
	put(t, s, "other", nil)
	slices.Sort(want)
	if got := list(t, s, "many/"); !slices.Equal(got, want) {
		t.Errorf("List(many/) = %q, want %q", got, want)
	}
}

func testBadKeys(t *testing.T, s storage.Store) {
	ctx := t.Context()
	bad := []string{"", "/abs", "..", ".", "a/../b", "a/./b", "../up", "a\\b", "a\x00b", "a//b", "a/", "bad\xffutf8"}
	for _, key := range bad {
		checks := map[string]error{
			"Put":    s.Put(ctx, key, strings.NewReader("x")),
			"Delete": s.Delete(ctx, key),
		}
		_, checks["Get"] = s.Get(ctx, key)
		_, checks["Stat"] = s.Stat(ctx, key)
		_, checks["GetVerified"] = storage.GetVerified(ctx, s, key, strings.Repeat("0", 64), 10)
		for op, err := range checks {
			if !errors.Is(err, storage.ErrInvalidKey) {
				t.Errorf("%s(%q) error = %v, want ErrInvalidKey", op, key, err)
			} else if !strings.Contains(err.Error(), strconv.Quote(key)) {
				t.Errorf("%s(%q) error %q does not name the key", op, key, err)
			}
		}
		if err := storage.ValidateKey(key); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	for _, prefix := range []string{"/abs", "../", "a//", "a/../"} {
		if _, err := s.List(ctx, prefix); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("List(%q) error = %v, want ErrInvalidKey", prefix, err)
		}
	}
	// Nothing was stored by the rejected calls.
	if keys := list(t, s, ""); len(keys) != 0 {
		t.Errorf("List after rejected Puts = %q, want none", keys)
	}
}

func testURIRoundTrip(t *testing.T, s storage.Store) {
	for _, key := range []string{
		"dispatches/x/spec.json",
		"blobs/sha256/" + strings.Repeat("ab", 32),
		"dir with space/ü/100% & =+.x",
		"q?/h#/semi;colon",
	} {
		uri := s.URI(key)
		if !strings.Contains(uri, "://") {
			t.Errorf("URI(%q) = %q, want scheme://…", key, uri)
		}
		if _, err := url.Parse(uri); err != nil {
			t.Errorf("URI(%q) = %q does not parse: %v", key, uri, err)
		}
		got, err := storage.ResolveURI(s, uri)
		if err != nil || got != key {
			t.Errorf("ResolveURI(%q) = %q, %v, want %q", uri, got, err, key)
		}
	}
}

func testResolveOutside(t *testing.T, s storage.Store) {
	inside := s.URI("a/b")
	u, err := url.Parse(inside)
	if err != nil {
		t.Fatal(err)
	}
	otherHost := *u
	otherHost.Host += "x"
	otherScheme := *u
	otherScheme.Scheme = "gopher"
	for _, uri := range []string{
		"",
		"%zz",
		"relative/a/b",
		otherHost.String(),
		otherScheme.String(),
		inside + "?versionId=1",
		inside + "#frag",
		inside + "/../../../../../../etc/passwd",
		s.URI("a/b") + "/", // names a prefix, not an object
	} {
		if key, err := storage.ResolveURI(s, uri); err == nil {
			t.Errorf("ResolveURI(%q) = %q, want an error (outside the store)", uri, key)
		} else if !strings.Contains(err.Error(), strconv.Quote(uri)) {
			t.Errorf("ResolveURI(%q) error %q does not name the uri", uri, err)
		}
	}
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func testPutBlob(t *testing.T, s storage.Store) {
	ctx := t.Context()
	data := pattern(100_000, 9)
	sum := sha(data)
	wantRef := storage.BlobRef{URI: s.URI(storage.BlobKey(sum)), SHA256: sum, Size: int64(len(data))}
	for i := range 2 {
		key, ref, err := storage.PutBlob(ctx, s, struct{ io.Reader }{bytes.NewReader(data)})
		if err != nil {
			t.Fatalf("PutBlob #%d: %v", i+1, err)
		}
		if key != "blobs/sha256/"+sum || ref != wantRef {
			t.Fatalf("PutBlob #%d = %q, %+v, want %q, %+v", i+1, key, ref, "blobs/sha256/"+sum, wantRef)
		}
	}
	if got := list(t, s, "blobs/"); !slices.Equal(got, []string{"blobs/sha256/" + sum}) {
		t.Errorf("List(blobs/) = %q, want the one blob", got)
	}
	wantBytes(t, "Get(blob)", get(t, s, storage.BlobKey(sum)), data)

	// The empty blob is a blob too.
	key, ref, err := storage.PutBlob(ctx, s, strings.NewReader(""))
	if err != nil || ref.Size != 0 || key != storage.BlobKey(sha(nil)) {
		t.Errorf("PutBlob(empty) = %q, %+v, %v, want key %q size 0", key, ref, err, storage.BlobKey(sha(nil)))
	}
}

func testGetVerified(t *testing.T, s storage.Store) {
	ctx := t.Context()
	data := []byte("bundle bytes")
	key, ref, err := storage.PutBlob(ctx, s, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	t.Run("ok", func(t *testing.T) {
		got, err := storage.GetVerified(ctx, s, key, ref.SHA256, ref.Size)
		if err != nil {
			t.Fatalf("GetVerified: %v", err)
		}
		wantBytes(t, "GetVerified", got, data)
		// The hash is compared case-insensitively: it is hex either way.
		if _, err := storage.GetVerified(ctx, s, key, strings.ToUpper(ref.SHA256), ref.Size); err != nil {
			t.Errorf("GetVerified(upper-case hash): %v", err)
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		wrong := sha([]byte("something else"))
		_, err := storage.GetVerified(ctx, s, key, wrong, 1<<20)
		if !errors.Is(err, storage.ErrIntegrity) {
			t.Fatalf("GetVerified(wrong hash) error = %v, want ErrIntegrity", err)
		}
		for _, part := range []string{key, wrong, ref.SHA256} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("GetVerified(wrong hash) error %q does not mention %q", err, part)
			}
		}
	})
	t.Run("too big by one", func(t *testing.T) {
		_, err := storage.GetVerified(ctx, s, key, ref.SHA256, ref.Size-1)
		if !errors.Is(err, storage.ErrIntegrity) {
			t.Fatalf("GetVerified(maxSize=size-1) error = %v, want ErrIntegrity", err)
		}
		if !strings.Contains(err.Error(), strconv.FormatInt(ref.Size-1, 10)) || !strings.Contains(err.Error(), key) {
			t.Errorf("GetVerified(maxSize=size-1) error %q does not name the key and the limit", err)
		}
	})
	t.Run("bad hash", func(t *testing.T) {
		if _, err := storage.GetVerified(ctx, s, key, "not-hex", 100); !errors.Is(err, storage.ErrIntegrity) {
			t.Errorf("GetVerified(not-hex) error = %v, want ErrIntegrity", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := storage.GetVerified(ctx, s, storage.BlobKey(sha(nil)), sha(nil), 100); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("GetVerified(missing) error = %v, want ErrNotFound", err)
		}
	})
}

// countingStore counts the bytes read from the objects it returns.
type countingStore struct {
	storage.Store
	read atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := c.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, &c.read}, nil
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func testGetVerifiedOversize(t *testing.T, s storage.Store) {
	const size, maxSize = 10 << 20, 1 << 10
	data := pattern(size, 3)
	put(t, s, "huge", data)
	cs := &countingStore{Store: s}
	_, err := storage.GetVerified(t.Context(), cs, "huge", sha(data), maxSize)
	if !errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("GetVerified(10 MiB, maxSize 1 KiB) error = %v, want ErrIntegrity", err)
	}
	if n := cs.read.Load(); n > maxSize+1 {
		t.Errorf("GetVerified read %d bytes of a %d-byte object, want at most maxSize+1 = %d", n, size, maxSize+1)
	}
}

func testCancelledContext(t *testing.T, s storage.Store) {
	put(t, s, "k", []byte("v"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	checks := map[string]error{
		"Put":    s.Put(ctx, "k2", strings.NewReader("v")),
		"Delete": s.Delete(ctx, "k"),
	}
	_, checks["Get"] = s.Get(ctx, "k")
	_, checks["Stat"] = s.Stat(ctx, "k")
	_, checks["List"] = s.List(ctx, "")
	_, _, checks["PutBlob"] = storage.PutBlob(ctx, s, strings.NewReader("v"))
	_, checks["GetVerified"] = storage.GetVerified(ctx, s, "k", sha([]byte("v")), 10)
	for op, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error = %v, want context.Canceled", op, err)
		}
	}
	// Nothing changed.
	if got := list(t, s, ""); !slices.Equal(got, []string{"k"}) {
		t.Errorf("List after cancelled calls = %q, want [k]", got)
	}
}

// endlessReader returns data forever and cancels its context after the first
// chunk; a Put that ignores cancellation would drain it, so it gives up (and
// fails the Put with errNotHonoured) after 64 MiB instead of hanging the test.
type endlessReader struct {
	cancel context.CancelFunc
	n      int
}

var errNotHonoured = errors.New("context cancellation not honoured: reader drained")

func (r *endlessReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		r.cancel()
	}
	if r.n > 64<<20 {
		return 0, errNotHonoured
	}
	for i := range p {
		p[i] = 'z'
	}
	r.n += len(p)
	return len(p), nil
}

func testCancelMidPut(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := s.Put(ctx, "partial/obj", &endlessReader{cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put cancelled mid-stream: error = %v, want context.Canceled", err)
	}
	if _, err := s.Stat(t.Context(), "partial/obj"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Stat after cancelled Put: error = %v, want ErrNotFound", err)
	}
	if keys := list(t, s, ""); len(keys) != 0 {
		t.Errorf("List after cancelled Put = %q, want none (no partial or temp object)", keys)
	}
}

// FileStore opens file:// storage in a t.TempDir().
func FileStore(t testing.TB) storage.Store {
	t.Helper()
	store, err := storage.Open(t.Context(), "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatalf("open file storage: %v", err)
	}
	return store
}
