package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/schemas"
)

// TestS3StagedStore runs two rounds with S3 storage and a container without
// a network: round 1 reads a capability from S3 and leaves a partial_state
// too large to travel inline; round 2 resumes from it. The worker never
// sees S3 or its credentials — only the staged store — and the ref in the
// event points at the copy the runner uploaded.
func TestS3StagedStore(t *testing.T) {
	t.Parallel()
	s3 := storagetest.StartS3(t)
	store := s3.Open(t, "staged", "k")
	h := newHarness(t, func(c *Config) { c.StorageURI, c.Store = s3.URI("staged"), store })
	h.store = store
	h.start()
	ctx := context.Background()

	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	script := "#!/bin/sh\nhead -c 100000 /dev/zero | tr '\\0' x > /tmp/big\nprintf '{\"big\":\"%s\"}' \"$(cat /tmp/big)\" > /tmp/state.json\nagora-worker ask 'More?' --option yes --state /tmp/state.json\n"
	_ = tw.WriteHeader(&tar.Header{Name: "tools/ask.sh", Mode: 0o755, Size: int64(len(script)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(script))
	_ = tw.Close()
	_, capRef, err := storage.PutBlob(ctx, store, &tarBuf)
	if err != nil {
		t.Fatal(err)
	}

	// Every process of the container shares the sub-agent's user, so what is
	// in any of their environments is within its reach.
	first := request(`envs=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n')
echo "$envs" | grep -q '^AWS_' && { echo "AWS credentials are in the container" >&2; exit 9; }
echo "$envs" | grep -q '^AGORA_STORAGE_URI=file://' || { echo "the worker's storage is not the staged store" >&2; exit 8; }
sh tools/ask.sh`)
	first.Spec.Capabilities = []schemas.BundleRef{{Name: "ask", SHA256: capRef.SHA256, URI: capRef.URI}}
	h.enqueue(first)
	ev := h.terminal(first.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindNeedsInput {
		t.Fatalf("round 1 = %s %+v; output:\n%s", ev.Kind, ev.Failure, h.output(first.Spec.DispatchID))
	}
	ref := ev.NeedsInput.PartialStateRef
	if ref == nil || !strings.HasPrefix(ref.URI, "s3://agora/staged/blobs/sha256/") || ref.Size < 100000 {
		t.Fatalf("partial_state_ref = %+v; want the uploaded copy in S3", ref)
	}
	if _, err := storage.GetVerified(ctx, store, storage.BlobKey(ref.SHA256), ref.SHA256, 1<<20); err != nil {
		t.Errorf("the partial_state is not in S3: %v", err)
	}

	second := h.resumeFrom(first, ref)
	h.settled(second.Spec.DispatchID)
	if left, _ := os.ReadDir(filepath.Join(h.cfg.DataDir, "stores")); len(left) != 0 {
		t.Errorf("staged stores left behind: %v", left)
	}
}

// TestStageMakesBlobDirsWhenUsed: the staged store's directory is made for
// every dispatch, its blobs directories only for a dispatch with a blob to
// stage (the worker's own store makes them when it writes one).
func TestStageMakesBlobDirsWhenUsed(t *testing.T) {
	ctx := context.Background()
	store, err := storage.Open(ctx, "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, ref, err := storage.PutBlob(ctx, store, strings.NewReader("a capability"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{cfg: Config{Store: store, DataDir: t.TempDir()}}
	for _, tc := range []struct {
		name  string
		caps  []schemas.BundleRef
		blobs bool
	}{
		{"no blob", nil, false},
		{"a capability", []schemas.BundleRef{{Name: "c", SHA256: ref.SHA256, URI: ref.URI}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			spec := schemas.DispatchSpec{DispatchID: "d-" + strings.ReplaceAll(tc.name, " ", "-"), Capabilities: tc.caps}
			if _, err := r.stage(ctx, dir, spec); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("the staged store's directory: %v", err)
			}
			_, err := os.Stat(filepath.Join(dir, "blobs"))
			if made := err == nil; made != tc.blobs {
				t.Errorf("blobs directory made: %t, want %t", made, tc.blobs)
			}
			if tc.blobs {
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(storage.BlobKey(ref.SHA256)))); err != nil {
					t.Errorf("the staged capability: %v", err)
				}
			}
		})
	}
}

// A staged blob whose content does not match its name is not uploaded.
func TestUnstageSkipsMismatches(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{cfg: Config{Store: store}}
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	good := []byte(`{"ok":true}`)
	_, ref, _ := storage.PutBlob(context.Background(), store, bytes.NewReader(good))
	_ = os.WriteFile(filepath.Join(blobs, ref.SHA256), good, 0o644)
	_ = os.WriteFile(filepath.Join(blobs, strings.Repeat("a", 64)), []byte("not that"), 0o644)
	_ = os.WriteFile(filepath.Join(blobs, "stray.tmp"), []byte("x"), 0o644)
	uris, err := r.unstage(context.Background(), dir, nil)
	if err == nil || !strings.Contains(err.Error(), "not passed on") {
		t.Errorf("unstage error = %v; want the mismatch named", err)
	}
	if len(uris) != 1 || uris[ref.SHA256] != ref.URI {
		t.Errorf("uris = %v; want only %s", uris, ref.SHA256)
	}
	ev := schemas.Event{NeedsInput: &schemas.NeedsInput{PartialStateRef: &schemas.ObjectRef{URI: "file:///staged/x", SHA256: ref.SHA256}}}
	pointAtStorage(&ev, uris)
	if ev.NeedsInput.PartialStateRef.URI != ref.URI {
		t.Errorf("ref after pointAtStorage = %s, want %s", ev.NeedsInput.PartialStateRef.URI, ref.URI)
	}
	fin := schemas.Event{ResultRef: &schemas.ObjectRef{URI: "file:///staged/r", SHA256: ref.SHA256},
		Artifacts: []schemas.Artifact{{Name: "a", SHA256: ref.SHA256, URI: "file:///staged/a"}, {Name: "b", SHA256: strings.Repeat("b", 64), URI: "file:///staged/b"}}}
	pointAtStorage(&fin, uris)
	if fin.ResultRef.URI != ref.URI || fin.Artifacts[0].URI != ref.URI || fin.Artifacts[1].URI != "file:///staged/b" {
		t.Errorf("finished event after pointAtStorage = %+v, want the uploaded blob's URI for the result and artifact a only", fin)
	}
}

// TestFileStorageNotShared: with file:// storage no container mounts the
// storage's blobs directory. A sub-agent can neither read another task's
// blobs (a workspace snapshot, a partial_state) nor write there; the
// worker still leaves a large partial_state through its staged store, and
// the ref in the event points at the runner's copy in the storage, which
// the next round resumes from.
func TestFileStorageNotShared(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	ctx := context.Background()
	_, private, err := storage.PutBlob(ctx, h.store, strings.NewReader("another task's private file"))
	if err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(strings.TrimPrefix(h.cfg.StorageURI, "file://"), "blobs", "sha256")
	forged := strings.Repeat("0", 64)

	first := request(`blobs=` + blobs + `
cat $blobs/` + private.SHA256 + ` 2>/dev/null && echo LEAKED
ls $blobs 2>/dev/null | grep -q . && echo LISTED
echo evil 2>/dev/null > $blobs/` + forged + ` && echo WROTE
head -c 100000 /dev/zero | tr '\0' x > /tmp/big
printf '{"big":"%s"}' "$(cat /tmp/big)" > /tmp/state.json
agora-worker ask 'More?' --option yes --state /tmp/state.json`)
	h.enqueue(first)
	ev := h.terminal(first.Spec.DispatchID, 2*time.Minute)
	out := h.output(first.Spec.DispatchID)
	if ev.Kind != schemas.KindNeedsInput {
		t.Fatalf("round 1 = %s %+v; output:\n%s", ev.Kind, ev.Failure, out)
	}
	for _, bad := range []string{"LEAKED", "LISTED", "WROTE"} {
		if strings.Contains(out, bad) {
			t.Errorf("the sub-agent reached the storage's blobs: %s; output:\n%s", bad, out)
		}
	}
	if _, err := os.Stat(filepath.Join(blobs, forged)); err == nil {
		t.Errorf("a blob the sub-agent wrote is in the storage")
	}
	ref := ev.NeedsInput.PartialStateRef
	if ref == nil || ref.URI != "file://"+filepath.Join(blobs, ref.SHA256) || ref.Size < 100000 {
		t.Fatalf("partial_state_ref = %+v; want the runner's copy in %s", ref, blobs)
	}
	if _, err := storage.GetVerified(ctx, h.store, storage.BlobKey(ref.SHA256), ref.SHA256, 1<<20); err != nil {
		t.Errorf("the partial_state is not in the storage: %v", err)
	}

	h.resumeFrom(first, ref)
}

// TestUnstageRefusesLinks: a sub-agent replaces what the worker writes into
// its staged store with symbolic links to a host file only root may read —
// a blob, or the whole blobs directory. The runner reads the staged store
// without following links: the host file never lands in the storage.
func TestUnstageRefusesLinks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	hostDir := t.TempDir()
	secret := []byte("root-only host file " + t.Name())
	sum := sha256.Sum256(secret)
	sha := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(hostDir, sha), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, link := range map[string]string{
		"blob":      `ln -s ` + filepath.Join(hostDir, sha) + ` "$blobs/` + sha + `"`,
		"directory": `rm -rf "$blobs" && ln -s ` + hostDir + ` "$blobs"`,
	} {
		req := request("")
		blobs := filepath.Join(h.runner.stageDir(req.Spec.DispatchID), "blobs", "sha256")
		// The blobs directories are made when first used: the sub-agent may
		// make them itself.
		req.Spec.Subagent.Command = []string{"/bin/sh", "-c", `blobs=` + blobs + "\n" + `mkdir -p "$blobs" && ` + link + ` && echo linked`}
		h.enqueue(req)
		ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
		out := h.output(req.Spec.DispatchID)
		if ev.Kind != schemas.KindFinished || !strings.Contains(out, "linked") {
			t.Fatalf("%s: %s %+v; output:\n%s", name, ev.Kind, ev.Failure, out)
		}
		h.settled(req.Spec.DispatchID)
		if _, err := h.store.Stat(context.Background(), storage.BlobKey(sha)); err == nil {
			t.Fatalf("%s: the host file the sub-agent linked to is in the storage", name)
		}
	}
}

// resumeFrom runs round 2 of first's task resuming from the partial_state
// at ref, and checks that the sub-agent finds it there.
func (h *harness) resumeFrom(first schemas.DispatchRequest, ref *schemas.ObjectRef) schemas.DispatchRequest {
	h.t.Helper()
	second := request(`grep -q 'xxxxxxxxxxxxxxxxxxxx' "$AGORA_RESUME_FILE" && echo "round 2 has the state"`)
	second.Spec.TaskID, second.Spec.Round = first.Spec.TaskID, 2
	second.Spec.Resume = &schemas.Resume{Question: "More?", Answer: "yes", PartialStateRef: ref}
	h.enqueue(second)
	if ev := h.terminal(second.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindFinished {
		h.t.Fatalf("round 2 = %s %+v; output:\n%s", ev.Kind, ev.Failure, h.output(second.Spec.DispatchID))
	}
	if out := h.output(second.Spec.DispatchID); !strings.Contains(out, "round 2 has the state") {
		h.t.Errorf("round 2 output = %q", out)
	}
	return second
}

// BenchmarkStage is the staged store's part of each dispatch's host files,
// for a dispatch that reads no blob (most): docs/capacity.md compares it
// before and after the blobs directories were made only when used.
//
//	go test -run '^$' -bench Stage -benchtime 2000x ./runner
func BenchmarkStage(b *testing.B) {
	ctx := context.Background()
	store, err := storage.Open(ctx, "file://"+b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := &Runner{cfg: Config{Store: store, DataDir: b.TempDir()}}
	base := b.TempDir()
	spec := schemas.DispatchSpec{DispatchID: "d-bench"}
	for i := 0; b.Loop(); i++ {
		if _, err := r.stage(ctx, filepath.Join(base, strconv.Itoa(i)), spec); err != nil {
			b.Fatal(err)
		}
	}
}
