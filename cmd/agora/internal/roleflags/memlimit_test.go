package roleflags

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMemoryLimit: --memory-limit (or $AGORA_MEMORY_LIMIT) gives serve,
// the orchestrator and the runner a soft limit on their Go memory: a size, off, or auto —
// 90% of the cgroup's limit, none without one, and the runtime's own when
// $GOMEMLIMIT is set.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir()}
	limited := func() (int64, bool) { return 1000 << 20, true }
	unlimited := func() (int64, bool) { return 0, false }
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		cgroup  func() (int64, bool)
		want    int64
		wantErr string
	}{
		{"auto in a cgroup of 1000 MiB", nil, nil, limited, 900 << 20, ""},
		{"auto without a cgroup limit", nil, nil, unlimited, 0, ""},
		{"auto with GOMEMLIMIT set", nil, []string{"GOMEMLIMIT=2GiB"}, limited, 0, ""},
		{"a size", []string{"--memory-limit", "900MiB"}, nil, limited, 900 << 20, ""},
		{"a size in G", []string{"--memory-limit", "2G"}, nil, unlimited, 2 << 30, ""},
		{"bytes", []string{"--memory-limit", "1048576"}, nil, unlimited, 1 << 20, ""},
		{"from the environment", nil, []string{"AGORA_MEMORY_LIMIT=512MB"}, limited, 512 << 20, ""},
		{"the flag over the environment", []string{"--memory-limit", "off"}, []string{"AGORA_MEMORY_LIMIT=512MB"}, limited, 0, ""},
		{"off", []string{"--memory-limit", "off"}, nil, limited, 0, ""},
		{"not a size", []string{"--memory-limit", "lots"}, nil, limited, 0, `--memory-limit "lots": want auto, off, or a size`},
		{"negative", []string{"--memory-limit", "-1G"}, nil, limited, 0, "want auto, off, or a size"},
	} {
		for _, v := range []Verb{Serve, Runner, Orchestrator} {
			fs := flagSet(v)
			f := Register(fs, v)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			environ := append(slices.Clone(env), tc.environ...)
			if err := f.fromEnv(environ); err != nil {
				t.Fatal(err)
			}
			got, err := f.memoryLimit(environ, tc.cgroup)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("%v, %s: %d, %v; want an error saying %q", v, tc.name, got, err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || got != tc.want):
				t.Errorf("%v, %s: %d, %v; want %d", v, tc.name, got, err, tc.want)
			}
		}
	}
	if cfg, err := parse(Serve, []string{"--memory-limit", "1G"}, env); err != nil || cfg.MemoryLimit != 1<<30 {
		t.Errorf("serve --memory-limit 1G = %d, %v; want %d", cfg.MemoryLimit, err, 1<<30)
	}
	if d, err := parse(Demo, nil, env); err != nil || d.MemoryLimit != 0 {
		t.Errorf("demo: memory limit %d, %v; want none (it takes no --memory-limit)", d.MemoryLimit, err)
	}
}

// TestCgroupMemoryLimit reads the limit of this process's cgroup as the
// kernel shows it: v2, v1, the lowest of the group and its parents, a
// hybrid host whose v2 hierarchy has no memory controller, and none.
func TestCgroupMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   int64
		wantOK bool
	}{
		{"v2, the group's own", map[string]string{"proc/self/cgroup": "0::/app\n", "sys/fs/cgroup/app/memory.max": "1073741824\n"}, 1 << 30, true},
		{"v2, a parent's lower", map[string]string{"proc/self/cgroup": "0::/a/b\n", "sys/fs/cgroup/a/b/memory.max": "max\n", "sys/fs/cgroup/a/memory.max": "536870912\n"}, 512 << 20, true},
		{"v2, in a container's namespace", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "268435456\n"}, 256 << 20, true},
		{"v2, no limit", map[string]string{"proc/self/cgroup": "0::/app\n", "sys/fs/cgroup/app/memory.max": "max\n"}, 0, false},
		{"v1", map[string]string{"proc/self/cgroup": "4:memory:/docker/x\n1:cpu:/\n", "sys/fs/cgroup/memory/docker/x/memory.limit_in_bytes": "2147483648\n"}, 2 << 30, true},
		{"v1, no limit", map[string]string{"proc/self/cgroup": "4:memory:/x\n", "sys/fs/cgroup/memory/x/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"hybrid: v2 without the memory controller", map[string]string{"proc/self/cgroup": "4:memory:/x\n0::/\n", "sys/fs/cgroup/memory/x/memory.limit_in_bytes": "1073741824\n"}, 1 << 30, true},
		{"no /proc", nil, 0, false},
	} {
		root := t.TempDir()
		for name, data := range tc.files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, ok := cgroupMemoryLimit(root)(); got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: cgroupMemoryLimit = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}
