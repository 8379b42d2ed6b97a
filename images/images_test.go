package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.RemovingBinaries(m))
}

// fakeBuilder is a compute.ImageBuilder in memory: it records the build
// contexts and "builds" by remembering tag → labels.
type fakeBuilder struct {
	images   map[string]compute.ImageInfo
	contexts [][]byte
	buildErr error
}

func newFake() *fakeBuilder { return &fakeBuilder{images: map[string]compute.ImageInfo{}} }

func (f *fakeBuilder) BuildImage(_ context.Context, r io.Reader, tag string, labels map[string]string) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.contexts = append(f.contexts, b)
	if f.buildErr != nil {
		return f.buildErr
	}
	f.images[tag] = compute.ImageInfo{ID: "sha256:" + tag, Labels: labels}
	return nil
}

func (f *fakeBuilder) ImageExists(_ context.Context, ref string) (compute.ImageInfo, bool, error) {
	info, ok := f.images[ref]
	return info, ok, nil
}

// fakeStaticWorker writes a minimal static ELF executable header: enough for
// Build's checks, never run.
func fakeStaticWorker(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agora-worker")
	if err := os.WriteFile(p, minimalELF(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// minimalELF is a 64-bit little-endian x86-64 ELF executable header with no
// program headers: static by construction.
func minimalELF() []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1 // 64-bit, little endian, version 1
	h[16] = 2                  // ET_EXEC
	h[18] = 0x3e               // EM_X86_64
	h[20] = 1                  // version
	h[52] = 64                 // header size
	h[54] = 56                 // program header entry size
	h[58] = 64                 // section header entry size
	return h
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

func readTar(t *testing.T, b []byte) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = entry{h, data}
	}
}

func TestBuildScratchContext(t *testing.T) {
	t.Parallel()
	worker := fakeStaticWorker(t)
	certs := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	res, err := images.Build(context.Background(), f, images.Options{WorkerBinary: worker, NoBusybox: true, CACerts: certs})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if res.Skipped || res.Busybox || len(res.InputsHash) != 64 || res.Image != "agora-worker:"+res.InputsHash[:12] {
		t.Errorf("Build = %+v; want a fresh build tagged agora-worker:<12 hex of the hash>, no busybox", res)
	}
	if got := f.images[res.Image].Labels[images.LabelInputs]; got != res.InputsHash {
		t.Errorf("label %s = %q, want %q", images.LabelInputs, got, res.InputsHash)
	}
	if len(f.contexts) != 1 {
		t.Fatalf("%d builds, want 1", len(f.contexts))
	}
	ctxFiles := readTar(t, f.contexts[0])
	if got := string(ctxFiles["Dockerfile"].data); got != images.Dockerfile("") {
		t.Errorf("Dockerfile in the context =\n%s\nwant\n%s", got, images.Dockerfile(""))
	}
	rootfs := readTar(t, ctxFiles["rootfs.tar"].data)
	for _, w := range []struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
	}{
		{"usr/local/bin/agora-worker", tar.TypeReg, 0o755, 0, 0},
		{"workspace", tar.TypeDir, 0o755, 65532, 65532},
		{"tmp", tar.TypeDir, 0o1777, 0, 0},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
		{"etc/group", tar.TypeReg, 0o644, 0, 0},
		{"etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644, 0, 0},
	} {
		e, ok := rootfs[w.name]
		if !ok {
			t.Errorf("rootfs lacks %s", w.name)
			continue
		}
		if e.hdr.Typeflag != w.typ || e.hdr.Mode != w.mode || e.hdr.Uid != w.uid || e.hdr.Gid != w.gid {
			t.Errorf("rootfs %s = type %c mode %o owner %d:%d; want type %c mode %o owner %d:%d",
				w.name, e.hdr.Typeflag, e.hdr.Mode, e.hdr.Uid, e.hdr.Gid, w.typ, w.mode, w.uid, w.gid)
		}
	}
	if !strings.Contains(string(rootfs["etc/passwd"].data), "agora:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the agora user:\n%s", rootfs["etc/passwd"].data)
	}
	if !strings.Contains(string(rootfs["etc/group"].data), "agora:x:65532:") {
		t.Errorf("/etc/group lacks the agora group:\n%s", rootfs["etc/group"].data)
	}
	if _, ok := rootfs["bin/sh"]; ok {
		t.Error("rootfs has /bin/sh with NoBusybox")
	}

	// Same inputs: skipped, nothing sent.
	again, err := images.Build(context.Background(), f, images.Options{WorkerBinary: worker, NoBusybox: true, CACerts: certs})
	if err != nil || !again.Skipped || again.Image != res.Image || again.InputsHash != res.InputsHash {
		t.Errorf("second Build = %+v, %v; want Skipped with the same image", again, err)
	}
	if len(f.contexts) != 1 {
		t.Errorf("second Build sent a build context")
	}

	// A changed input changes the version in the tag.
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\nchanged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := images.Build(context.Background(), f, images.Options{WorkerBinary: worker, NoBusybox: true, CACerts: certs})
	if err != nil || changed.Skipped || changed.Image == res.Image {
		t.Errorf("Build with other CA certificates = %+v, %v; want a new build under a new tag", changed, err)
	}

	// An explicit tag whose image has other inputs is rebuilt.
	f.images["agora-worker:mine"] = compute.ImageInfo{ID: "sha256:old", Labels: map[string]string{images.LabelInputs: "old"}}
	mine, err := images.Build(context.Background(), f, images.Options{WorkerBinary: worker, NoBusybox: true, CACerts: certs, Tag: "agora-worker:mine"})
	if err != nil || mine.Skipped || mine.Image != "agora-worker:mine" {
		t.Errorf("Build over a stale tag = %+v, %v; want a rebuild", mine, err)
	}
}

func TestBuildBusyboxContext(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(images.DefaultBusybox); err != nil {
		t.Skipf("no %s: %v", images.DefaultBusybox, err)
	}
	f := newFake()
	res, err := images.Build(context.Background(), f, images.Options{WorkerBinary: fakeStaticWorker(t), Busybox: images.DefaultBusybox})
	if err != nil {
		t.Fatalf("Build with busybox: %v", err)
	}
	if !res.Busybox {
		t.Errorf("Build = %+v, want Busybox", res)
	}
	rootfs := readTar(t, readTar(t, f.contexts[0])["rootfs.tar"].data)
	if e := rootfs["bin/busybox"]; e.hdr == nil || e.hdr.Mode != 0o755 || len(e.data) == 0 {
		t.Fatalf("rootfs bin/busybox = %+v", e.hdr)
	}
	for _, applet := range []string{"bin/sh", "bin/cat", "usr/bin/env", "bin/sleep"} {
		e, ok := rootfs[applet]
		if !ok || e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != "/bin/busybox" {
			t.Errorf("rootfs %s = %+v, want a symlink to /bin/busybox", applet, e.hdr)
		}
	}
	if _, ok := rootfs["usr/local/bin/agora-worker"]; !ok {
		t.Error("rootfs lacks the worker")
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	worker := fakeStaticWorker(t)
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dynamic := "/bin/ls" // Debian's coreutils are dynamically linked
	for _, tc := range []struct {
		name string
		opts images.Options
		want string
	}{
		{"no worker", images.Options{}, "no worker binary"},
		{"missing worker", images.Options{WorkerBinary: filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"worker not ELF", images.Options{WorkerBinary: notELF}, "not an ELF"},
		{"dynamic worker", images.Options{WorkerBinary: dynamic}, "CGO_ENABLED=0"},
		{"missing base", images.Options{WorkerBinary: worker, Base: "agora-nope:1"}, "nothing is pulled"},
		{"explicit busybox missing", images.Options{WorkerBinary: worker, Busybox: filepath.Join(t.TempDir(), "busybox")}, "no such file"},
		{"explicit busybox dynamic", images.Options{WorkerBinary: worker, Busybox: dynamic}, "dynamically linked"},
		{"explicit CA certificates missing", images.Options{WorkerBinary: worker, NoBusybox: true, CACerts: "/nonexistent/ca.crt"}, "CA certificates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.WorkerBinary == dynamic || tc.opts.Busybox == dynamic {
				if _, err := os.Stat(dynamic); err != nil {
					t.Skipf("no dynamic executable at %s", dynamic)
				}
			}
			f := newFake()
			_, err := images.Build(context.Background(), f, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
			}
			if len(f.contexts) != 0 {
				t.Errorf("Build(%+v) sent a build context despite the error", tc.opts)
			}
		})
	}

	f := newFake()
	f.buildErr = errors.New("daemon says no")
	if _, err := images.Build(context.Background(), f, images.Options{WorkerBinary: worker, NoBusybox: true}); err == nil || !strings.Contains(err.Error(), "daemon says no") {
		t.Errorf("Build with a failing builder = %v, want its error", err)
	}
}

func TestBuildOnBaseContext(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.images["my/claude:1"] = compute.ImageInfo{ID: "sha256:base1"}
	worker := fakeStaticWorker(t)
	res, err := images.Build(context.Background(), f, images.Options{WorkerBinary: worker, Base: "my/claude:1"})
	if err != nil {
		t.Fatalf("Build on a base: %v", err)
	}
	files := readTar(t, f.contexts[0])
	if got, want := string(files["Dockerfile"].data), images.Dockerfile("my/claude:1"); got != want {
		t.Errorf("Dockerfile = %q, want %q", got, want)
	}
	if e := files["agora-worker"]; e.hdr == nil || e.hdr.Mode != 0o755 {
		t.Errorf("context agora-worker = %+v, want mode 0755", e.hdr)
	}
	if _, ok := files["rootfs.tar"]; ok {
		t.Error("a build on a base carries rootfs.tar")
	}
	if res.Busybox {
		t.Error("a build on a base reports busybox")
	}

	// The base's id is an input: the same tag on a new base rebuilds.
	f.images["my/claude:1"] = compute.ImageInfo{ID: "sha256:base2"}
	again, err := images.Build(context.Background(), f, images.Options{WorkerBinary: worker, Base: "my/claude:1"})
	if err != nil || again.Skipped || again.InputsHash == res.InputsHash {
		t.Errorf("Build on a changed base = %+v, %v; want a new build", again, err)
	}
}

func TestDeterministicContext(t *testing.T) {
	t.Parallel()
	worker := staticOrFake(t)
	var hashes []string
	for range 2 {
		res, err := images.Build(context.Background(), newFake(), images.Options{WorkerBinary: worker})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, res.InputsHash)
	}
	if hashes[0] != hashes[1] {
		t.Errorf("two builds of the same inputs hash to %v", hashes)
	}
}

func staticOrFake(t *testing.T) string {
	t.Helper()
	if exe, err := os.Executable(); err == nil {
		if _, err := images.Build(context.Background(), newFake(), images.Options{WorkerBinary: exe, NoBusybox: true}); err == nil {
			return exe
		}
	}
	return fakeStaticWorker(t)
}

// TestWorkerDockerfileInStep keeps worker.Dockerfile's final stage in step
// with the image Build makes.
func TestWorkerDockerfileInStep(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("worker.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	registry := finalStage(string(b))
	generated := finalStage(images.Dockerfile(""))
	if registry["FROM"] != "scratch" {
		t.Errorf("worker.Dockerfile's final stage is FROM %q, want scratch", registry["FROM"])
	}
	for _, k := range []string{"USER", "WORKDIR", "ENTRYPOINT", "ENV"} {
		if registry[k] == "" || registry[k] != generated[k] {
			t.Errorf("worker.Dockerfile %s = %q, Build's = %q; keep them in step", k, registry[k], generated[k])
		}
	}
	if !strings.Contains(string(b), images.WorkerPath) {
		t.Errorf("worker.Dockerfile does not put the worker at %s", images.WorkerPath)
	}
	if !strings.Contains(string(b), "CGO_ENABLED=0") {
		t.Error("worker.Dockerfile does not build a static worker (CGO_ENABLED=0)")
	}
}

// finalStage returns the last value of each instruction in the last stage
// of a Dockerfile, continuation lines joined.
func finalStage(dockerfile string) map[string]string {
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	var stage map[string]string
	for line := range strings.SplitSeq(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, args, _ := strings.Cut(line, " ")
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			stage = map[string]string{}
			args, _, _ = strings.Cut(args, " ") // drop "AS name"
		}
		if stage != nil {
			stage[instr] = strings.TrimSpace(args)
		}
	}
	return stage
}
