package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/wire"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestResultAndArtifacts(t *testing.T) {
	t.Parallel()
	content := "report\nline two\n"
	art := wire.Artifact{Name: "dir/my report.txt", Size: int64(len(content)), SHA256: sum(content)}
	var gotName string
	svc := &apitest.Service{
		ResultFunc: func(_ context.Context, id string) (json.RawMessage, error) {
			if id != "t-1" {
				return nil, wire.ErrNotFound
			}
			return json.RawMessage(`{"verdict":"ok"}`), nil
		},
		GetFunc: func(_ context.Context, id string) (*wire.Task, error) {
			return &wire.Task{ID: id, State: wire.StateFinished, Artifacts: []wire.Artifact{art}}, nil
		},
		OpenArtifactFunc: func(_ context.Context, id, name string) (wire.Artifact, io.ReadCloser, error) {
			gotName = name
			return art, io.NopCloser(strings.NewReader(content)), nil
		},
	}
	c := newClient(t, svc, "s3cret")
	ctx := context.Background()
	res, err := c.Result(ctx, "t-1")
	if err != nil || string(res) != `{"verdict":"ok"}` {
		t.Errorf("Result = %s, %v", res, err)
	}
	if _, err := c.Result(ctx, "t-2"); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Result(unknown) = %v, want ErrNotFound", err)
	}
	list, err := c.Artifacts(ctx, "t-1")
	if err != nil || len(list) != 1 || list[0] != art {
		t.Errorf("Artifacts = %+v, %v; want [%+v]", list, err, art)
	}
	var buf bytes.Buffer
	got, err := c.DownloadArtifact(ctx, "t-1", art.Name, &buf)
	if err != nil || buf.String() != content || got != art || gotName != art.Name {
		t.Errorf("DownloadArtifact = %+v %q, %v (server saw name %q); want %+v %q", got, buf.String(), err, gotName, art, content)
	}
	if _, err := c.DownloadArtifact(ctx, "t-1", "../etc/passwd", io.Discard); !errors.Is(err, wire.ErrInvalidRequest) {
		t.Errorf("DownloadArtifact(../etc/passwd) = %v, want ErrInvalidRequest before any request", err)
	}
}

// TestDownloadArtifactTampered: bytes that are not the ones the server's
// sha256 names are ErrIntegrity, however the server came to send them.
func TestDownloadArtifactTampered(t *testing.T) {
	t.Parallel()
	good, evil := "the real artifact", "the fake artifact"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", wire.ArtifactETag(sum(good)))
		w.Header().Set("Content-Length", strconv.Itoa(len(evil)))
		_, _ = io.WriteString(w, evil)
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "", client.WithHTTPClient(srv.Client()))
	var buf bytes.Buffer
	_, err := c.DownloadArtifact(context.Background(), "t-1", "a.txt", &buf)
	if !errors.Is(err, client.ErrIntegrity) || !strings.Contains(err.Error(), sum(good)) {
		t.Errorf("DownloadArtifact(tampered) = %v, want ErrIntegrity naming the wanted sha256", err)
	}
}

// TestSaveArtifact: the file takes its name, under dir, only when its
// bytes are the ones the task lists; a name that leaves dir is refused
// before any request.
func TestSaveArtifact(t *testing.T) {
	t.Parallel()
	content := "report\n"
	served := content
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", wire.ArtifactETag(sum(served)))
		w.Header().Set("Content-Length", strconv.Itoa(len(served)))
		_, _ = io.WriteString(w, served)
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "", client.WithHTTPClient(srv.Client()))
	ctx := context.Background()
	dir := t.TempDir()
	art := wire.Artifact{Name: "sub/report.txt", Size: int64(len(content)), SHA256: sum(content)}
	path, err := c.SaveArtifact(ctx, "t-1", art, dir)
	if err != nil || path != filepath.Join(dir, "sub", "report.txt") {
		t.Fatalf("SaveArtifact = %q, %v; want %s", path, err, filepath.Join(dir, "sub", "report.txt"))
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != content {
		t.Errorf("saved %q, %v; want %q", got, err, content)
	}
	// The server sends other bytes than the task lists (consistently with
	// its own ETag): nothing takes the name.
	served = "other bytes\n"
	other := wire.Artifact{Name: "other.txt", Size: art.Size, SHA256: art.SHA256}
	if _, err := c.SaveArtifact(ctx, "t-1", other, dir); !errors.Is(err, client.ErrIntegrity) {
		t.Errorf("SaveArtifact(other bytes) = %v; want ErrIntegrity", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "sub" {
			t.Errorf("SaveArtifact left %s in dir after a failed check", e.Name())
		}
	}
	if _, err := c.SaveArtifact(ctx, "t-1", wire.Artifact{Name: "../escape.txt"}, dir); err == nil || !strings.Contains(err.Error(), "not downloaded") {
		t.Errorf("SaveArtifact(../escape.txt) = %v; want a refusal naming the name", err)
	}
}
