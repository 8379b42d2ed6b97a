package roles

import (
	"errors"
	"strings"
	"testing"
)

// TestHostFix: a data dir problem at start says, in a container, to make
// the dir on the host for the container's user and mount it at the same
// path; outside one it is left as it is.
func TestHostFix(t *testing.T) {
	t.Parallel()
	base := errors.New("data dir /var/lib/agora is owned by uid 0, not by this user")
	if got := hostFix(base, "/var/lib/agora", false); got != base {
		t.Errorf("hostFix outside a container = %v, want the error unchanged", got)
	}
	if got := hostFix(nil, "/var/lib/agora", true); got != nil {
		t.Errorf("hostFix(nil) = %v, want nil", got)
	}
	got := hostFix(base, "/var/lib/agora", true)
	if !errors.Is(got, base) {
		t.Errorf("hostFix in a container = %v, want it to wrap %v", got, base)
	}
	for _, want := range []string{"sudo install -d -m 0700 -o ", " /var/lib/agora;", "docker run -v /var/lib/agora:/var/lib/agora"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("hostFix in a container = %q, want it to contain %q", got, want)
		}
	}
}
