package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/compute"
)

// elsewhere is the real engine as seen from a host where this runner's
// data dir lives at another path (agora in a container with its data dir
// mounted elsewhere): mount sources under from are resolved under to.
type elsewhere struct {
	compute.Engine
	from, to string
}

func (e elsewhere) Create(ctx context.Context, spec compute.ContainerSpec) (string, error) {
	spec.Mounts = append([]compute.Mount(nil), spec.Mounts...)
	for i, m := range spec.Mounts {
		if rel, err := filepath.Rel(e.from, m.Source); err == nil && !strings.HasPrefix(rel, "..") {
			spec.Mounts[i].Source = filepath.Join(e.to, rel)
		}
	}
	return e.Engine.Create(ctx, spec)
}

// TestCheckHostPaths: a runner whose engine sees its data dir at the same
// path starts (and leaves no check container or marker behind, removing
// one an earlier process left); one whose engine sees another directory
// there refuses to start, naming the fix, instead of failing every
// dispatch with "bind source path does not exist".
func TestCheckHostPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		elsewhere bool
		leftover  bool
		wantErr   string
	}{
		{name: "same path"},
		{name: "same path, a check container left by a crash", leftover: true},
		{name: "mounted at another path", elsewhere: true,
			wantErr: "mounted at the same path as on the host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.CheckHostPaths = true })
			if tc.elsewhere {
				h.cfg.Engine = elsewhere{Engine: h.docker, from: h.cfg.DataDir, to: t.TempDir()}
			}
			ctx := context.Background()
			t.Cleanup(func() {
				left, _ := h.docker.List(context.Background(), map[string]string{LabelMountCheck: h.cfg.ID})
				for _, c := range left {
					t.Errorf("mount-check container %s left behind", c.ID[:12])
					_ = h.docker.Remove(context.Background(), c.ID)
				}
			})
			if tc.leftover {
				if _, err := h.docker.Create(ctx, compute.ContainerSpec{Image: workerImage, User: ContainerUser,
					Labels: map[string]string{LabelMountCheck: h.cfg.ID}}); err != nil {
					t.Fatal(err)
				}
			}
			r, err := New(h.cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Start(ctx)
			if err == nil {
				t.Cleanup(func() { h.stop(r) })
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Start = %v, want it to start", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Start = %v, want an error containing %q", err, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), h.cfg.DataDir):
				t.Errorf("Start = %v, want it to name the data dir %s", err, h.cfg.DataDir)
			}
			left, err := h.docker.List(ctx, map[string]string{LabelMountCheck: h.cfg.ID})
			if err != nil || len(left) != 0 {
				t.Errorf("mount-check containers after Start = %d, %v; want none", len(left), err)
			}
			markers, _ := filepath.Glob(filepath.Join(h.cfg.DataDir, ".mount-check-*"))
			if len(markers) != 0 {
				t.Errorf("markers left in the data dir: %v", markers)
			}
			if _, err := os.Stat(h.cfg.DataDir); err != nil {
				t.Error(err)
			}
		})
	}
}
