package sentinel

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agoradev/agora/schemas"
)

// workspaceWith makes a workspace whose sentinel holds data.
func workspaceWith(t *testing.T, data []byte) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".agora"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(ws), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestReadNone(t *testing.T) {
	t.Parallel()
	for name, ws := range map[string]string{"no .agora": t.TempDir(), "empty .agora": func() string {
		ws := t.TempDir()
		if err := os.Mkdir(filepath.Join(ws, ".agora"), 0o755); err != nil {
			t.Fatal(err)
		}
		return ws
	}()} {
		n, err := Read(ws)
		if n != nil || err != nil {
			t.Errorf("%s: Read = %v, %v; want nil, nil", name, n, err)
		}
	}
}

func TestReadValidFixtures(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("testdata/valid/*.json")
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n, err := Read(workspaceWith(t, data))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			var want schemas.NeedsInput
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			if n.Question != want.Question || len(n.Options) != len(want.Options) || string(n.PartialState) != string(want.PartialState) {
				t.Errorf("Read = %+v, want %+v", n, want)
			}
		})
	}
}

// TestReadInvalidFixtures: one fixture file per invalid sentinel; the .err
// sibling holds what the error must say.
func TestReadInvalidFixtures(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("testdata/invalid/*.json")
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".json"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(p, ".json") + ".err")
			if err != nil {
				t.Fatal(err)
			}
			n, err := Read(workspaceWith(t, data))
			assertMalformed(t, n, err, strings.TrimSpace(string(want)))
		})
	}
}

func assertMalformed(t *testing.T, n *schemas.NeedsInput, err error, want string) {
	t.Helper()
	var me *MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("Read = %+v, %v; want *MalformedError", n, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Read error = %q, want it to contain %q", err, want)
	}
}

func TestReadNotRegular(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		make func(t *testing.T, ws string)
		want string
	}{
		{"symlink to valid file", func(t *testing.T, ws string) {
			target := filepath.Join(t.TempDir(), "real.json")
			must(t, os.WriteFile(target, []byte(`{"question":"q"}`), 0o644))
			must(t, os.Symlink(target, Path(ws)))
		}, "not a regular file (symlink)"},
		{"dangling symlink", func(t *testing.T, ws string) {
			must(t, os.Symlink("/nonexistent", Path(ws)))
		}, "symlink"},
		{"directory", func(t *testing.T, ws string) {
			must(t, os.Mkdir(Path(ws), 0o755))
		}, "not a regular file (directory)"},
		{"fifo", func(t *testing.T, ws string) {
			must(t, syscall.Mkfifo(Path(ws), 0o644))
		}, "not a regular file (fifo)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			must(t, os.Mkdir(filepath.Join(ws, ".agora"), 0o755))
			tt.make(t, ws)
			n, err := Read(ws)
			assertMalformed(t, n, err, tt.want)
		})
	}
}

func TestReadAgoraDirSymlink(t *testing.T) {
	t.Parallel()
	ws, elsewhere := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(elsewhere, "needs_input.json"), []byte(`{"question":"q"}`), 0o644))
	must(t, os.Symlink(elsewhere, filepath.Join(ws, ".agora")))
	n, err := Read(ws)
	assertMalformed(t, n, err, "symlink, not a directory")
}

func TestReadSizeCap(t *testing.T) {
	t.Parallel()
	// Exactly at the cap: a valid sentinel padded with white space.
	at := []byte(`{"question":"q"}`)
	at = append(at, []byte(strings.Repeat(" ", schemas.SentinelMaxBytes-len(at)))...)
	if n, err := Read(workspaceWith(t, at)); err != nil || n == nil {
		t.Errorf("Read(sentinel of exactly 1 MiB) = %v, %v; want it accepted", n, err)
	}
	over := append(at, ' ')
	n, err := Read(workspaceWith(t, over))
	assertMalformed(t, n, err, "larger than the 1 MiB")

	// A huge sparse file is refused without reading it.
	ws := t.TempDir()
	must(t, os.Mkdir(filepath.Join(ws, ".agora"), 0o755))
	f, err := os.Create(Path(ws))
	must(t, err)
	must(t, f.Truncate(10<<30))
	must(t, f.Close())
	n, err = Read(ws)
	assertMalformed(t, n, err, "10737418240 bytes")
}

func TestRemoveStale(t *testing.T) {
	t.Parallel()
	for name, make := range map[string]func(ws string) error{
		"file":    func(ws string) error { return os.WriteFile(Path(ws), []byte(`{"question":"old"}`), 0o644) },
		"dir":     func(ws string) error { return os.MkdirAll(filepath.Join(Path(ws), "x"), 0o755) },
		"symlink": func(ws string) error { return os.Symlink("/etc/passwd", Path(ws)) },
		"absent":  func(ws string) error { return nil },
	} {
		ws := t.TempDir()
		must(t, os.Mkdir(filepath.Join(ws, ".agora"), 0o755))
		must(t, make(ws))
		if err := RemoveStale(ws); err != nil {
			t.Fatalf("%s: RemoveStale: %v", name, err)
		}
		if n, err := Read(ws); n != nil || err != nil {
			t.Errorf("%s: after RemoveStale, Read = %v, %v; want nothing", name, n, err)
		}
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Errorf("RemoveStale followed a symlink: %v", err)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	def := "A"
	in := &schemas.NeedsInput{Question: "A or B?", Options: []string{"A", "B"}, Context: "ctx", Default: &def, PartialState: json.RawMessage(`{"step":2}`)}
	if err := Write(Path(ws), in); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got, err := Read(ws)
	if err != nil {
		t.Fatalf("Read after Write: %v", err)
	}
	if got.Question != in.Question || got.Context != "ctx" || *got.Default != "A" || string(got.PartialState) != `{"step":2}` {
		t.Errorf("Read after Write = %+v", got)
	}
	entries, _ := os.ReadDir(filepath.Join(ws, ".agora"))
	if len(entries) != 1 {
		t.Errorf("Write left temp files behind: %v", entries)
	}
	if err := Write(Path(ws), &schemas.NeedsInput{Question: " "}); err == nil || !strings.Contains(err.Error(), "/question") {
		t.Errorf("Write(blank question) = %v, want a validation error naming /question", err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", schemas.SentinelMaxBytes) + `"`)
	if err := Write(Path(ws), &schemas.NeedsInput{Question: "q", PartialState: big}); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("Write(huge state) = %v, want the size cap named", err)
	}
}

// FuzzParse: the parser never panics, and whatever it rejects is reported
// as a malformed sentinel (worker-failed) rather than anything else.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		paths, _ := filepath.Glob(dir + "/*.json")
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ws := workspaceWith(t, data)
		n, err := Read(ws)
		if err != nil {
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("Read(%q) error %v is not a *MalformedError", data, err)
			}
			return
		}
		if n == nil || strings.TrimSpace(n.Question) == "" {
			t.Fatalf("Read(%q) accepted %+v without a question", data, n)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
