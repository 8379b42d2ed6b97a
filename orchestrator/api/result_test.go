package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/schemas"
)

// finish plays round 1 of task id to dispatch.finished with result (inline
// or, when ref, stored and referenced) and the artifacts files, stored in
// the server's storage by sha256 as a worker and its runner leave them.
func (s *scopeServer) finish(t *testing.T, token, id, result string, ref bool, files map[string]string) {
	t.Helper()
	ctx := t.Context()
	zero, ms := 0, int64(10)
	ev := schemas.Event{Kind: schemas.KindFinished, DispatchID: id + "-r1", Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms}
	if ref {
		_, r, err := storage.PutBlob(ctx, s.store, strings.NewReader(result))
		if err != nil {
			t.Fatal(err)
		}
		ev.ResultRef = &schemas.ObjectRef{URI: "file:///somewhere/else", SHA256: r.SHA256, Size: r.Size}
	} else if result != "" {
		ev.Result = []byte(result)
	}
	for name, content := range files {
		_, r, err := storage.PutBlob(ctx, s.store, strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		ev.Artifacts = append(ev.Artifacts, schemas.Artifact{Name: name, Size: r.Size, SHA256: r.SHA256, URI: r.URI})
	}
	if _, err := s.bus.PublishEvent(ctx, ev); err != nil {
		t.Fatalf("publish finished of %s: %v", id, err)
	}
	testutil.Eventually(t, 30*time.Second, "task "+id+" finished", func() bool {
		_, task := s.call(t, token, "GET", "/v1/tasks/"+id, "")
		return task["state"] == "finished"
	})
}

// get sends GET path as the holder of token and returns the response with
// its body read.
func (s *scopeServer) get(t *testing.T, token, path string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest("GET", s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestResultRoutesScoped: the result and artifact routes are scoped like
// every other task route — the owner and an admin reach them, another
// token gets not_found — and serve what the finished round left.
func TestResultRoutesScoped(t *testing.T) {
	t.Parallel()
	s := newScopeServer(t, api.Config{Tokens: []string{"alice:al1ce", "bob:b0b", "root:r00t:admin"}})
	const alice, bob, root = "al1ce", "b0b", "r00t"
	for _, id := range []string{"ra", "rb"} {
		if code, body := s.call(t, alice, "POST", "/v1/tasks", submitOf(id)); code != 201 {
			t.Fatalf("alice submits %s = %d %v", id, code, body)
		}
	}
	files := map[string]string{"report.txt": "all good\n", "dir/data.bin": "\x00\x01\x02"}
	s.finish(t, alice, "ra", `{"verdict":"ok","n":3}`, false, files)
	big := `"` + strings.Repeat("y", 40<<10) + `"`
	s.finish(t, alice, "rb", big, true, nil)

	for _, tok := range []string{alice, root} {
		resp, body, err := s.get(t, tok, "/v1/tasks/ra/result")
		if err != nil || resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"verdict":"ok","n":3}` {
			t.Errorf("GET ra/result as %s = %v %s, %v; want 200 and the result", tok, resp.Status, body, err)
		}
		code, list := s.call(t, tok, "GET", "/v1/tasks/ra/artifacts", "")
		if code != 200 || len(items(list, "artifacts")) != 2 {
			t.Errorf("GET ra/artifacts as %s = %d %v; want both artifacts", tok, code, list)
		}
		resp, body, err = s.get(t, tok, "/v1/tasks/ra/artifacts/dir/data.bin")
		if err != nil || resp.StatusCode != 200 || string(body) != files["dir/data.bin"] {
			t.Fatalf("GET ra/artifacts/dir/data.bin as %s = %v %q, %v", tok, resp.Status, body, err)
		}
		if got, want := resp.Header.Get("ETag"), `"`+hexSHA(files["dir/data.bin"])+`"`; got != want {
			t.Errorf("ETag = %s, want %s", got, want)
		}
		if resp.ContentLength != 3 || !strings.HasPrefix(resp.Header.Get("Repr-Digest"), "sha-256=:") {
			t.Errorf("Content-Length %d, Repr-Digest %q; want 3 and a sha-256 digest", resp.ContentLength, resp.Header.Get("Repr-Digest"))
		}
	}
	// A result stored by ref is read from this server's storage by its
	// sha256 (never from the URI the event named) and verified.
	if resp, body, err := s.get(t, alice, "/v1/tasks/rb/result"); err != nil || resp.StatusCode != 200 || strings.TrimSpace(string(body)) != big {
		t.Errorf("GET rb/result = %v (%d bytes), %v; want the stored result", resp.Status, len(body), err)
	}

	// Bob reaches none of it.
	for _, path := range []string{"/v1/tasks/ra/result", "/v1/tasks/ra/artifacts", "/v1/tasks/ra/artifacts/report.txt", "/v1/tasks/rb/result"} {
		if code, body := s.call(t, bob, "GET", path, ""); code != 404 || body["code"] != "not_found" {
			t.Errorf("bob GET %s = %d %v; want 404 not_found", path, code, body)
		}
	}
	for path, want := range map[string]struct {
		code int
		msg  string
	}{
		"/v1/tasks/ra/artifacts/nope.txt":   {404, `task ra has no artifact "nope.txt" (it has`},
		"/v1/tasks/ra/artifacts/a%5Cb":      {400, `artifact name "a\\b"`},
		"/v1/tasks/ra/artifacts/a/%2e%2e/b": {400, ""},
	} {
		code, body := s.call(t, alice, "GET", path, "")
		if msg, _ := body["error"].(string); code != want.code || !strings.Contains(msg, want.msg) {
			t.Errorf("GET %s = %d %v; want %d with %q", path, code, body, want.code, want.msg)
		}
	}

	// A replaced blob is not served whole.
	key := storage.BlobKey(hexSHA(files["report.txt"]))
	if err := s.store.Put(t.Context(), key, bytes.NewReader([]byte("ALL GOOD\n"))); err != nil {
		t.Fatal(err)
	}
	if resp, body, err := s.get(t, alice, "/v1/tasks/ra/artifacts/report.txt"); err == nil {
		t.Errorf("GET a replaced artifact = %v %q with no error; want the response cut short", resp.Status, body)
	}
}

// TestResultBeforeTheEnd: a task still running has no result yet.
func TestResultBeforeTheEnd(t *testing.T) {
	t.Parallel()
	s := newScopeServer(t, api.Config{Tokens: []string{"alice:al1ce"}})
	if code, body := s.call(t, "al1ce", "POST", "/v1/tasks", submitOf("rq")); code != 201 {
		t.Fatalf("submit = %d %v", code, body)
	}
	code, body := s.call(t, "al1ce", "GET", "/v1/tasks/rq/result", "")
	if msg, _ := body["error"].(string); code != 409 || !strings.Contains(msg, "task rq is queued: its result comes when it finishes") {
		t.Errorf("GET rq/result = %d %v; want 409 saying it is queued", code, body)
	}
	if code, body := s.call(t, "al1ce", "GET", "/v1/tasks/rq/artifacts", ""); code != 200 || len(items(body, "artifacts")) != 0 {
		t.Errorf("GET rq/artifacts = %d %v; want 200 and none", code, body)
	}
}
