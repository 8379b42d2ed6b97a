package compute_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/compute"
)

func valid() compute.ContainerSpec {
	return compute.ContainerSpec{
		Image:  "agora-worker:1",
		User:   "65532:65532",
		Mounts: []compute.Mount{{Source: "/var/lib/agora/ws/d-1", Target: "/workspace"}},
		Env:    []string{"AGORA_DISPATCH_ID=d-1", "EMPTY="},
		Labels: map[string]string{compute.LabelDispatchID: "d-1"},
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := valid().Validate(); err != nil {
		t.Fatalf("Validate(valid spec) = %v", err)
	}
	for _, user := range []string{"65532", "agora", "agora:agora", "1000:0", "0100"} {
		s := valid()
		s.User = user
		if err := s.Validate(); err != nil {
			t.Errorf("Validate with user %q = %v, want nil", user, err)
		}
	}
	for _, mode := range []string{"", "none", "bridge", "host"} {
		s := valid()
		s.NetworkMode = mode
		if err := s.Validate(); err != nil {
			t.Errorf("Validate with network mode %q = %v, want nil", mode, err)
		}
	}
	s := valid()
	s.Network, s.NetworkAliases, s.DNS = "agora-egress-d-1.x_y", []string{"agora-egress-proxy"}, []string{"198.51.100.53"}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate with a user-defined network = %v, want nil", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*compute.ContainerSpec)
		want   string
	}{
		{"no image", func(s *compute.ContainerSpec) { s.Image = " " }, "image is required"},
		{"no user", func(s *compute.ContainerSpec) { s.User = "" }, "never run as root"},
		{"root", func(s *compute.ContainerSpec) { s.User = "root" }, "runs as root"},
		{"uid 0", func(s *compute.ContainerSpec) { s.User = "0" }, "runs as root"},
		{"uid 00", func(s *compute.ContainerSpec) { s.User = "00:65532" }, "runs as root"},
		{"root with group", func(s *compute.ContainerSpec) { s.User = "root:agora" }, "runs as root"},
		{"only a group", func(s *compute.ContainerSpec) { s.User = ":65532" }, "runs as root"},
		{"network", func(s *compute.ContainerSpec) { s.NetworkMode = "container:abc" }, "network mode"},
		{"network and mode", func(s *compute.ContainerSpec) { s.Network, s.NetworkMode = "agora-egress-d-1", "bridge" }, "give one"},
		{"network name", func(s *compute.ContainerSpec) { s.Network = "a b" }, "want letters, digits"},
		{"aliases without network", func(s *compute.ContainerSpec) { s.NetworkAliases = []string{"proxy"} }, "without a network"},
		{"dns not an address", func(s *compute.ContainerSpec) { s.DNS = []string{"dns.example"} }, "not an IP address"},
		{"relative workdir", func(s *compute.ContainerSpec) { s.WorkingDir = "ws" }, "not absolute"},
		{"relative mount source", func(s *compute.ContainerSpec) { s.Mounts[0].Source = "ws" }, "source"},
		{"relative mount target", func(s *compute.ContainerSpec) { s.Mounts[0].Target = "ws" }, "target"},
		{"mount over /tmp", func(s *compute.ContainerSpec) { s.Mounts[0].Target = "/tmp/" }, "reserved"},
		{"env without =", func(s *compute.ContainerSpec) { s.Env = []string{"FOO"} }, "KEY=value"},
		{"managed label", func(s *compute.ContainerSpec) { s.Labels[compute.LabelManaged] = "no" }, compute.LabelManaged},
		{"extra host", func(s *compute.ContainerSpec) { s.ExtraHosts = []string{"nohost"} }, "host:ip"},
		{"secret without name", func(s *compute.ContainerSpec) { s.Secrets = []compute.SecretRef{{ValueFrom: "prod/db"}} }, "not an environment variable name"},
		{"secret name with =", func(s *compute.ContainerSpec) { s.Secrets = []compute.SecretRef{{Name: "A=B", ValueFrom: "prod/db"}} }, "not an environment variable name"},
		{"secret without valueFrom", func(s *compute.ContainerSpec) { s.Secrets = []compute.SecretRef{{Name: "DB"}} }, "valueFrom is empty"},
		{"secret twice", func(s *compute.ContainerSpec) {
			s.Secrets = []compute.SecretRef{{Name: "DB", ValueFrom: "a"}, {Name: "DB", ValueFrom: "b"}}
		}, "given twice"},
		{"negative memory", func(s *compute.ContainerSpec) { s.Resources.MemoryBytes = -1 }, "negative"},
		{"tiny memory", func(s *compute.ContainerSpec) { s.Resources.MemoryBytes = 1 << 20 }, "6 MiB"},
	} {
		s := valid()
		s.Labels = map[string]string{compute.LabelDispatchID: "d-1"}
		s.Mounts = []compute.Mount{{Source: "/var/lib/agora/ws/d-1", Target: "/workspace"}}
		tc.change(&s)
		err := s.Validate()
		if !errors.Is(err, compute.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want ErrInvalidSpec mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	err := compute.ContainerSpec{NetworkMode: "overlay"}.Validate()
	for _, want := range []string{"image is required", "user", "network mode"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(empty spec) = %v, want it to mention %q", err, want)
		}
	}
}

func TestContainerRunning(t *testing.T) {
	t.Parallel()
	for state, want := range map[string]bool{"created": false, "running": true, "paused": true, "restarting": true, "removing": false, "exited": false, "dead": false} {
		if got := (compute.Container{State: state}).Running(); got != want {
			t.Errorf("Container{State: %q}.Running() = %v, want %v", state, got, want)
		}
	}
}
