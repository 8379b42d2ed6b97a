package worker

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/schemas"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.RemovingBinaries(m))
}

// tarEntry is one entry of a test archive. A zero typ is a regular file; a
// size above len(body) makes a header that claims more than it carries.
type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
	size             int64
}

// tarball builds a tar archive of entries.
func tarball(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, en := range entries {
		hdr := &tar.Header{Name: en.name, Typeflag: en.typ, Mode: en.mode, Linkname: en.link}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = max(en.size, int64(len(en.body)))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %q: %v", en.name, err)
		}
		if hdr.Size > int64(len(en.body)) {
			// A header that claims more than the archive holds: the test
			// wants the claim, not the bytes, and the archive ends here.
			return buf.Bytes()
		}
		if _, err := tw.Write([]byte(en.body)); err != nil {
			t.Fatalf("tar body %q: %v", en.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wantOutcome checks that err is an *outcomeError with reason and a message
// holding every one of wants.
func wantOutcome(t *testing.T, call string, err error, reason schemas.FailureReason, wants ...string) {
	t.Helper()
	var oe *outcomeError
	if !errors.As(err, &oe) {
		t.Fatalf("%s = %v (%T), want an *outcomeError with reason %s", call, err, err, reason)
	}
	if oe.reason != reason {
		t.Errorf("%s reason = %s, want %s (error: %v)", call, oe.reason, reason, err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s error = %q, want it to contain %q", call, err, w)
		}
	}
}
