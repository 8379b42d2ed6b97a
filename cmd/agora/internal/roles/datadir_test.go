package roles

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateDataDir: the data dir is made (or repaired to) 0700 with a
// warning, so no other local user reads the tasks' files under it; one
// owned by another user, or no directory at all, is a one-line error that
// says what to do.
func TestPrivateDataDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	tests := []struct {
		name     string
		prepare  func(dir string) error
		wantErr  string
		wantWarn bool
	}{
		{"created private", func(string) error { return nil }, "", false},
		{"world-readable repaired", func(dir string) error {
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			return os.Chmod(dir, 0o755)
		}, "", true},
		{"already private", func(dir string) error { return os.Mkdir(dir, 0o700) }, "", false},
		{"a file", func(dir string) error { return os.WriteFile(dir, nil, 0o600) }, "is a regular file, not a directory: pass another --data-dir", false},
	}
	if os.Geteuid() == 0 {
		tests = append(tests, struct {
			name     string
			prepare  func(dir string) error
			wantErr  string
			wantWarn bool
		}{"owned by another user", func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chown(dir, 12345, 12345)
		}, "is owned by uid 12345, not by this user (uid 0): chown -R 0", false})
	}
	for i, tt := range tests {
		dir := filepath.Join(base, "data-"+string(rune('a'+i)))
		if err := tt.prepare(dir); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		err := privateDataDir(dir, slog.New(slog.NewTextHandler(&logs, nil)))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: privateDataDir = %v, want an error containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: privateDataDir = %v", tt.name, err)
			continue
		}
		info, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o700 {
			t.Errorf("%s: data dir is %#o, want 0700", tt.name, info.Mode().Perm())
		}
		if warned := strings.Contains(logs.String(), "made it private"); warned != tt.wantWarn {
			t.Errorf("%s: warned %v, want %v; log: %s", tt.name, warned, tt.wantWarn, logs.String())
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: the write check left %v behind", tt.name, entries)
		}
	}
}
