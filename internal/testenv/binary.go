package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binaries are the executables Binary built, in one directory per test
// process: a package is compiled once however many tests need it.
var binaries = struct {
	mu    sync.Mutex
	dir   string
	built map[string]*binary
}{built: map[string]*binary{}}

type binary struct {
	once sync.Once
	path string
	err  error
}

// Binary compiles the package with import path pkg (e.g.
// "github.com/agoradev/agora/cmd/agora-worker") at most once per test binary
// and returns the executable. Without cgo it is built as the image builds
// the worker: CGO_ENABLED=0, stripped. The caller's TestMain removes the
// binaries with RemovingBinaries.
func Binary(t testing.TB, pkg string, cgo bool) string {
	t.Helper()
	key := fmt.Sprintf("%s cgo=%t", pkg, cgo)
	binaries.mu.Lock()
	b, ok := binaries.built[key]
	if !ok {
		b = &binary{}
		binaries.built[key] = b
	}
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "agora-testbin-")
		if err != nil {
			binaries.mu.Unlock()
			t.Fatalf("binary dir: %v", err)
		}
		binaries.dir = dir
	}
	// One directory per binary, which keeps its plain name: tests put the
	// directory on PATH for scripts that call agora or agora-worker.
	out := filepath.Join(binaries.dir, fmt.Sprint(len(binaries.built)), command(pkg))
	binaries.mu.Unlock()
	b.once.Do(func() {
		b.path = out
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			b.err = err
			return
		}
		args := []string{"build", "-trimpath", "-o", b.path}
		if pkg == "github.com/agoradev/agora/cmd/agora" {
			// Its HTTP API checks every request and response against
			// openapi.json (cmd/agora/apicheck_openapi.go), reporting to
			// the file openapitest.Env names.
			args = append(args, "-tags=openapicheck")
		}
		env := os.Environ()
		if !cgo {
			args = append(args, "-ldflags=-s -w")
			env = append(env, "CGO_ENABLED=0")
		}
		// `go test` puts its own toolchain first on PATH.
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s (cgo %t): %v\n%s", pkg, cgo, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// RemovingBinaries wraps m so that running it removes what Binary built:
// os.Exit(testenv.RemovingBinaries(m).Run()), or inside goleak.VerifyTestMain.
func RemovingBinaries(m interface{ Run() int }) interface{ Run() int } {
	return removing{m}
}

type removing struct{ m interface{ Run() int } }

func (r removing) Run() int {
	code := r.m.Run()
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if binaries.dir != "" {
		if err := os.RemoveAll(binaries.dir); err != nil {
			fmt.Fprintln(os.Stderr, "remove test binaries:", err)
		}
	}
	return code
}

// command is the name go install gives pkg's executable: its last element,
// or the one before a major-version suffix (nats-server for
// github.com/nats-io/nats-server/v2).
func command(pkg string) string {
	dir, base := path.Split(pkg)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		return path.Base(dir)
	}
	return base
}
