package compute

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strings"
)

var networkName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// DefaultTmpfsBytes is the size of the /tmp tmpfs when the spec leaves
// TmpfsBytes zero.
const DefaultTmpfsBytes = 64 << 20

// Validate reports every problem of the spec, each wrapped in ErrInvalidSpec.
// It is pure: it looks at nothing outside the spec.
func (s ContainerSpec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidSpec}, args...)...))
	}
	if strings.TrimSpace(s.Image) == "" {
		bad("image is required")
	}
	if err := validateUser(s.User); err != nil {
		bad("user: %v", err)
	}
	switch s.NetworkMode {
	case "", NetworkNone, NetworkBridge, NetworkHost:
	default:
		bad("network mode %q: want %q, %q or %q", s.NetworkMode, NetworkNone, NetworkBridge, NetworkHost)
	}
	switch {
	case s.Network != "" && s.NetworkMode != "":
		bad("network %q and network mode %q: give one", s.Network, s.NetworkMode)
	case s.Network != "" && !networkName.MatchString(s.Network):
		bad("network %q: want letters, digits, '_', '.' and '-'", s.Network)
	case s.Network == "" && len(s.NetworkAliases) > 0:
		bad("network aliases %q without a network", s.NetworkAliases)
	}
	for _, d := range s.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			bad("dns %q is not an IP address", d)
		}
	}
	if s.WorkingDir != "" && !path.IsAbs(s.WorkingDir) {
		bad("working dir %q is not absolute", s.WorkingDir)
	}
	for i, m := range s.Mounts {
		switch {
		case m.Source == "" || !path.IsAbs(m.Source):
			bad("mount %d: source %q is not an absolute host path", i, m.Source)
		case m.Target == "" || !path.IsAbs(m.Target):
			bad("mount %d: target %q is not an absolute path", i, m.Target)
		case path.Clean(m.Target) == "/" || path.Clean(m.Target) == "/tmp":
			bad("mount %d: target %q is reserved", i, m.Target)
		}
	}
	for i, dir := range s.ScratchDirs {
		switch {
		case !path.IsAbs(dir):
			bad("scratch dir %d: %q is not an absolute path", i, dir)
		case path.Clean(dir) == "/" || path.Clean(dir) == "/tmp":
			bad("scratch dir %d: %q is reserved", i, dir)
		}
		for _, m := range s.Mounts {
			if path.Clean(m.Target) == path.Clean(dir) {
				bad("scratch dir %d: %q is a mount's target too", i, dir)
			}
		}
	}
	for _, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			bad("env %q is not KEY=value", kv)
		}
	}
	seen := map[string]bool{}
	for i, sec := range s.Secrets {
		switch {
		case sec.Name == "" || strings.ContainsAny(sec.Name, "= \t\n\x00"):
			bad("secret %d: name %q is not an environment variable name", i, sec.Name)
		case strings.TrimSpace(sec.ValueFrom) == "":
			bad("secret %s: valueFrom is empty", sec.Name)
		case seen[sec.Name]:
			bad("secret %s is given twice", sec.Name)
		}
		seen[sec.Name] = true
	}
	for k := range s.Labels {
		if k == "" {
			bad("empty label key")
		}
	}
	if v, ok := s.Labels[LabelManaged]; ok && v != "true" {
		bad("label %s=%q: the engine sets it to \"true\"", LabelManaged, v)
	}
	for _, h := range s.ExtraHosts {
		if host, ip, ok := strings.Cut(h, ":"); !ok || host == "" || ip == "" {
			bad("extra host %q is not host:ip", h)
		}
	}
	r := s.Resources
	if r.NanoCPUs < 0 || r.MemoryBytes < 0 || r.PidsLimit < 0 {
		bad("resources must not be negative: %+v", r)
	}
	if r.MemoryBytes != 0 && r.MemoryBytes < 6<<20 {
		bad("memory limit %d bytes is below the engine's minimum of 6 MiB", r.MemoryBytes)
	}
	if s.StopTimeout < 0 || s.TmpfsBytes < 0 {
		bad("stop timeout and tmpfs size must not be negative")
	}
	return errors.Join(errs...)
}

// validateUser refuses an empty user and root, by name or by uid.
func validateUser(u string) error {
	if u == "" {
		return errors.New("required: containers never run as root")
	}
	name, group, _ := strings.Cut(u, ":")
	switch strings.TrimLeft(name, "0") {
	case "", "root":
		// "0", "00" and "root" are root; so is an empty name before ":gid".
		return fmt.Errorf("%q runs as root", u)
	}
	if strings.ContainsAny(u, " \t\n") || strings.Contains(group, ":") {
		return fmt.Errorf("%q is not uid[:gid] or name[:group]", u)
	}
	return nil
}
