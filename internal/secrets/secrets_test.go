package secrets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want string // "" for valid, else a part of the error
	}{
		{"github", ""},
		{"GITHUB_TOKEN", ""},
		{"db.prod-password_2", ""},
		{"0", ""},
		{strings.Repeat("a", 128), ""},
		{"", "it is empty"},
		{strings.Repeat("a", 129), "129 bytes long"},
		{".hidden", "want a letter or digit"},
		{"-flag", "want a letter or digit"},
		{"_x", "want a letter or digit"},
		{"..", "want a letter or digit"},
		{"a/b", "path separator"},
		{`a\b`, "path separator"},
		{"with space", "want a letter or digit"},
		{"ünicode", "want a letter or digit"},
		{"nul\x00", "want a letter or digit"},
	}
	for _, tt := range tests {
		err := ValidName(tt.name)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidName(%q) = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ValidName(%q) = %v, want ErrInvalidName containing %q", tt.name, err, tt.want)
		}
	}
}

func TestSplitRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, scheme, rest string
		ok                bool
	}{
		{"local:github", "local", "github", true},
		{"aws-sm:arn:aws:secretsmanager:eu-west-1:1:secret:x#k", "aws-sm", "arn:aws:secretsmanager:eu-west-1:1:secret:x#k", true},
		{"env:", "env", "", true},
		{"github", "", "github", false},
		{":x", "", ":x", false},
	}
	for _, tt := range tests {
		scheme, rest, ok := SplitRef(tt.ref)
		if scheme != tt.scheme || rest != tt.rest || ok != tt.ok {
			t.Errorf("SplitRef(%q) = %q, %q, %v; want %q, %q, %v", tt.ref, scheme, rest, ok, tt.scheme, tt.rest, tt.ok)
		}
	}
}

func TestStoreSetGetListDelete(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "secrets")
	s := Open(dir)

	// An absent store is empty, not an error.
	if infos, err := s.List(); err != nil || len(infos) != 0 {
		t.Fatalf("List of a store never written = %v, %v; want empty, nil", infos, err)
	}
	if _, err := s.Get("github"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get from a store never written = %v, want ErrNotFound", err)
	}

	values := map[string][]byte{
		"github":  []byte("ghp_exact\n"), // the trailing newline is part of the value
		"pem":     []byte("-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n"),
		"binary":  {0xff, 0x00, 0x01},
		"max":     bytes.Repeat([]byte("x"), MaxValueBytes),
		"one.b-1": []byte("1"),
	}
	for name, v := range values {
		if err := s.Set(name, v); err != nil {
			t.Fatalf("Set(%q): %v", name, err)
		}
	}
	for name, want := range values {
		got, err := s.Get(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Get(%q) = %q, %v; want the exact bytes %q", name, got, err, want)
		}
	}

	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	fi, err = os.Stat(filepath.Join(dir, "github"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	// Replacing keeps one file with the new value.
	if err := s.Set("github", []byte("rotated")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get("github"); string(got) != "rotated" {
		t.Errorf("Get after a second Set = %q, want %q", got, "rotated")
	}

	// Things in the directory that are not secrets are not listed.
	if err := os.WriteFile(filepath.Join(dir, ".tmp-left-over"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "subdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Minute)
	infos, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
		if in.Modified.Before(before) || in.Modified.Location() != time.UTC {
			t.Errorf("List %s modified = %v, want a recent UTC time", in.Name, in.Modified)
		}
		if want := int64(len(values[in.Name])); in.Name != "github" && in.Size != want {
			t.Errorf("List %s size = %d, want %d", in.Name, in.Size, want)
		}
	}
	if got, want := strings.Join(names, ","), "binary,github,max,one.b-1,pem"; got != want {
		t.Errorf("List names = %s, want %s", got, want)
	}

	// A symlink or directory is never read as a secret.
	if _, err := s.Get("link"); err == nil || !strings.Contains(err.Error(), "symlink, not a regular file") {
		t.Errorf("Get(link) = %v, want an error saying it is a symlink", err)
	}
	if _, err := s.Get("subdir"); err == nil || !strings.Contains(err.Error(), "directory, not a regular file") {
		t.Errorf("Get(subdir) = %v, want an error saying it is a directory", err)
	}
	if err := s.Delete("subdir"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Delete(subdir) = %v, want an error", err)
	}

	if err := s.Delete("github"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("github"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "github") {
		t.Errorf("Get after Delete = %v, want ErrNotFound naming github", err)
	}
	if err := s.Delete("github"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
}

func TestStoreRefuses(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir())
	tests := []struct {
		name   string
		value  []byte
		target error
		want   string
	}{
		{"ok", nil, ErrEmpty, "set secret ok: empty secret value"},
		{"ok", []byte{}, ErrEmpty, "empty"},
		{"big", bytes.Repeat([]byte("x"), MaxValueBytes+1), ErrTooLarge, "65537 bytes, at most 65536"},
		{"../escape", []byte("x"), ErrInvalidName, `"../escape"`},
		{"", []byte("x"), ErrInvalidName, "empty"},
	}
	for _, tt := range tests {
		err := s.Set(tt.name, tt.value)
		if !errors.Is(err, tt.target) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Set(%q, %d bytes) = %v, want %v containing %q", tt.name, len(tt.value), err, tt.target, tt.want)
		}
	}
	for _, name := range []string{"../escape", "a/b", ".hidden"} {
		if _, err := s.Get(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Get(%q) = %v, want ErrInvalidName", name, err)
		}
		if err := s.Delete(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	if infos, _ := s.List(); len(infos) != 0 {
		t.Errorf("refused Sets left %v", infos)
	}
	entries, _ := os.ReadDir(s.Dir())
	if len(entries) != 0 {
		t.Errorf("refused Sets left files: %v", entries)
	}
}

func TestStoreTightensDirMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Open(dir).Set("x", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("store dir mode after Set = %v, want 0700", fi.Mode().Perm())
	}
}

// TestStoreConcurrentSet: readers see one whole value or another, never a
// mix, while writers replace it.
func TestStoreConcurrentSet(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir())
	a, b := bytes.Repeat([]byte("a"), 32<<10), bytes.Repeat([]byte("b"), 32<<10)
	if err := s.Set("k", a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := a
			if i%2 == 1 {
				v = b
			}
			for range 50 {
				if err := s.Set("k", v); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 200 {
		got, err := s.Get("k")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("Get during Set returned %d bytes that are neither value", len(got))
		}
	}
	wg.Wait()
	if infos, _ := s.List(); len(infos) != 1 {
		t.Errorf("after concurrent Sets List = %v, want one secret", infos)
	}
}

// TestValidNameMatchesPattern: validName is the documented pattern, by hand.
func TestValidNameMatchesPattern(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	names := []string{"", ".", "..", "-a", "_a", ".a", "a", "A.b-c_d", "a/b", `a\b`, "a b", "é", "aé", "a\x00",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129), "a" + strings.Repeat("-", 127)}
	for c := 0; c < 256; c++ {
		names = append(names, string(rune(c)), "a"+string([]byte{byte(c)}), string([]byte{byte(c)})+"a")
	}
	for _, name := range names {
		if got, want := validName(name), re.MatchString(name); got != want {
			t.Errorf("validName(%q) = %t, want %t", name, got, want)
		}
	}
}

// TestPrefetchedEnv pins the variable names: the runner writes them into an
// ECS task definition and the worker looks them up, so both sides (and any
// other implementation) must compute the same one. The values were computed
// outside Go (Python's hashlib).
func TestPrefetchedEnv(t *testing.T) {
	t.Parallel()
	tests := []struct{ ref, want string }{
		{"aws-sm:prod/db#password", "AGORA_SECRET_67BE444DED5C910B89C7"},
		{"aws-sm:arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf", "AGORA_SECRET_77095353EE18B4AFEED7"},
	}
	for _, tt := range tests {
		if got := PrefetchedEnv(tt.ref); got != tt.want {
			t.Errorf("PrefetchedEnv(%q) = %s, want %s", tt.ref, got, tt.want)
		}
	}
	if PrefetchedEnv("aws-sm:prod/db") == PrefetchedEnv("aws-sm:prod/db#password") {
		t.Error("a ref with #KEY and one without share a variable")
	}
}
