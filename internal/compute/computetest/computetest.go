// Package computetest is what tests of compute.Engine users need on the real
// Docker engine: an engine that skips the test when Docker is unreachable
// (and fails it when CI=true), a unique label whose containers are removed —
// and checked gone — in t.Cleanup, a small FROM scratch test image with the
// host's static busybox, polling with a deadline, and the conformance suite
// every compute.Engine passes (RunConformance).
//
// It is imported only by tests; what it may import, docs/architecture.md.
package computetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/testlog"
)

// LabelTest is the label key that names the test a container belongs to.
const LabelTest = "agora.test"

// User is the non-root user test containers run as (the worker image's).
const User = "65532:65532"

// BusyboxPath is where Debian's busybox-static installs busybox.
const BusyboxPath = "/bin/busybox"

// Docker returns an engine on the local Docker daemon (DOCKER_HOST or the
// default socket), closed in t.Cleanup. It skips the test when the daemon
// does not answer a ping, unless CI=true: then the test fails, so a CI run
// never passes by skipping.
func Docker(t testing.TB) *docker.Engine {
	t.Helper()
	e, err := docker.New(docker.Config{Logger: Logger(t)})
	if err != nil {
		unavailable(t, "docker client: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close docker client: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Ping(ctx); err != nil {
		unavailable(t, "docker is not reachable: %v", err)
	}
	return e
}

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: failing instead of skipping)", args...)
	}
	t.Skipf(format, args...)
}

// Label returns a label unique to this test run, {LabelTest: <name>-<random>}.
// In t.Cleanup every container carrying it is removed, and the test fails if
// one is left. Put it on every container the test creates; the returned map is
// the caller's to extend with more labels.
func Label(t testing.TB, e compute.Engine) map[string]string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	value := name + "-" + RandomSuffix()
	t.Cleanup(func() {
		labels := map[string]string{LabelTest: value} // not the caller's map, which it may extend
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		left, err := e.List(ctx, labels)
		if err != nil {
			t.Errorf("list test containers: %v", err)
			return
		}
		for _, c := range left {
			if err := e.Remove(ctx, c.ID); err != nil {
				t.Errorf("remove test container %s: %v", c.Name, err)
			}
		}
		if left, err = e.List(ctx, labels); err != nil {
			t.Errorf("list test containers after removal: %v", err)
		} else if len(left) != 0 {
			t.Errorf("%d containers labelled %v remain after cleanup", len(left), labels)
		}
	})
	return map[string]string{LabelTest: value}
}

// RandomSuffix is 8 random hex digits for names and tags.
func RandomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// Busybox returns the host's static busybox binary, skipping the test when it
// is missing (failing under CI=true: .ci/run installs busybox-static).
func Busybox(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(BusyboxPath)
	if err != nil {
		unavailable(t, "static busybox (apt-get install busybox-static): %v", err)
	}
	if err := CheckStatic(bytes.NewReader(b)); err != nil {
		unavailable(t, "%s: %v", BusyboxPath, err)
	}
	return b
}

// CheckStatic returns an error unless r is a statically linked ELF executable
// (no program interpreter), which is what a FROM scratch image can run.
func CheckStatic(r io.ReaderAt) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked: it needs an interpreter")
		}
	}
	return nil
}

// BusyboxImage builds a FROM scratch image holding the host's busybox as
// /bin/busybox with every applet linked (/bin/sh, /bin/sleep, …), a
// /etc/passwd with the agora user (65532), and /tmp. The tag is unique to the
// test; the image is removed in t.Cleanup.
func BusyboxImage(t testing.TB, e interface {
	compute.ImageBuilder
	compute.ImageRemover
}) string {
	t.Helper()
	bb := Busybox(t)
	ctxTar, err := busyboxContext(bb)
	if err != nil {
		t.Fatalf("busybox image context: %v", err)
	}
	sum := sha256.Sum256(ctxTar)
	tag := fmt.Sprintf("agora-test-busybox:%s-%s", hex.EncodeToString(sum[:4]), RandomSuffix())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.BuildImage(ctx, bytes.NewReader(ctxTar), tag, map[string]string{LabelTest: t.Name()}); err != nil {
		t.Fatalf("BuildImage(%s): %v", tag, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.RemoveImage(ctx, tag); err != nil {
			t.Errorf("remove test image %s: %v", tag, err)
		}
	})
	return tag
}

// busyboxContext is the build context of BusyboxImage: a Dockerfile that
// ADDs rootfs.tar, whose headers carry the owners and modes.
func busyboxContext(bb []byte) ([]byte, error) {
	list, err := applets()
	if err != nil {
		return nil, err
	}
	var rootfs bytes.Buffer
	tw := tar.NewWriter(&rootfs)
	for _, d := range []string{"bin/", "etc/", "sbin/", "usr/", "usr/bin/", "usr/sbin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	dirs := []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777},
		{Typeflag: tar.TypeDir, Name: "workspace/", Mode: 0o755, Uid: 65532, Gid: 65532},
	}
	for _, h := range dirs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"bin/busybox", 0o755, bb},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nagora:x:65532:65532:agora:/tmp:/bin/sh\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nagora:x:65532:\n")},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	for _, a := range list {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}

	var out bytes.Buffer
	tw = tar.NewWriter(&out)
	dockerfile := []byte("FROM scratch\nADD rootfs.tar /\nUSER 65532:65532\nWORKDIR /tmp\n")
	for _, f := range []struct {
		name string
		data []byte
	}{{"Dockerfile", dockerfile}, {"rootfs.tar", rootfs.Bytes()}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var applets = sync.OnceValues(func() ([]string, error) {
	out, err := exec.Command(BusyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", BusyboxPath, err)
	}
	var list []string
	for _, a := range strings.Fields(string(out)) {
		if strings.Contains(a, "/") && a != "bin/busybox" && !strings.Contains(a, "..") {
			list = append(list, a)
		}
	}
	return list, nil
})

// Logger returns a logger that writes to t.Log at info level and drops lines
// logged after the test has finished.
func Logger(t testing.TB) *slog.Logger { return testlog.Logger(t) }
