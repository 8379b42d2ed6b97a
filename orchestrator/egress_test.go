package orchestrator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestSubmitEgress: an egress allow-list is checked at submit — its
// grammar, its pairing with network, and this server's maximum count —
// and reaches the dispatch request; a registered sub-agent's network and
// egress fill in together, only when the request gives neither.
func TestSubmitEgress(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{EgressHosts: 2})
	ctx := t.Context()
	tests := []struct {
		name    string
		network string
		egress  []string
		want    string // "" accepted
	}{
		{"list alone means egress", "", []string{"api.anthropic.com", "*.githubusercontent.com"}, ""},
		{"network egress with a list", "egress", []string{"github.com:443"}, ""},
		{"raw IPv4", "", []string{"10.0.0.1"}, `egress entry "10.0.0.1" is an IP address`},
		{"raw IPv6", "", []string{"[::1]:443"}, `egress entry "[::1]:443" is an IP address`},
		{"bad name", "", []string{"exa mple.com"}, `egress entry "exa mple.com" has ' '`},
		{"wildcard over a TLD", "", []string{"*.com"}, "every name under a top-level domain"},
		{"list with another network", "bridge", []string{"github.com"}, `network is "bridge"`},
		{"network egress without a list", "egress", nil, "needs an egress list"},
		{"over the server's maximum", "", []string{"a.example.com", "b.example.com", "c.example.com"},
			"egress (3 hosts) is over this server's maximum 2 (--max-egress-hosts)"},
	}
	for i, tt := range tests {
		task, err := s.orch.Submit(ctx, wire.SubmitRequest{TaskID: fmt.Sprintf("eg-%d", i), Subagent: script("s", "true"), Network: tt.network, Egress: tt.egress})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Submit = %v, want it accepted", tt.name, err)
		case tt.want == "":
			dr := s.orch.request(task, &task.Rounds[0])
			if dr.Network != schemas.NetworkEgress || !slices.Equal(dr.Egress, tt.egress) {
				t.Errorf("%s: dispatch request network %q egress %q; want egress %q", tt.name, dr.Network, dr.Egress, tt.egress)
			}
		case !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s: Submit = %v; want ErrInvalidRequest saying %q", tt.name, err, tt.want)
		}
	}

	if _, err := s.reg.RegisterSubagent(ctx, wire.Subagent{Name: "leaky", Runtime: "exec", Command: wire.Command{"true"},
		Egress: []string{"169.254.169.254"}}); !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), "is an IP address") {
		t.Errorf("register a sub-agent with an IP in egress = %v; want ErrInvalid naming it", err)
	}
	if _, err := s.reg.RegisterSubagent(ctx, wire.Subagent{Name: "coder", Runtime: "exec", Command: wire.Command{"true"},
		Egress: []string{"api.anthropic.com"}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		req     wire.SubmitRequest
		network string
		egress  []string
	}{
		{"the definition's list", wire.SubmitRequest{}, schemas.NetworkEgress, []string{"api.anthropic.com"}},
		{"the request's own list", wire.SubmitRequest{Egress: []string{"github.com"}}, schemas.NetworkEgress, []string{"github.com"}},
		{"the request's own network", wire.SubmitRequest{Network: "none"}, schemas.NetworkNone, nil},
	} {
		tt.req.TaskID, tt.req.SubagentRef = "reg-"+strings.ReplaceAll(strings.ReplaceAll(tt.name, " ", "-"), "'", ""), "coder"
		task, err := s.orch.Submit(ctx, tt.req)
		if err != nil {
			t.Errorf("%s: Submit = %v", tt.name, err)
			continue
		}
		dr := s.orch.request(task, &task.Rounds[0])
		if dr.NetworkMode() != tt.network || !slices.Equal(dr.Egress, tt.egress) {
			t.Errorf("%s: dispatch request network %q egress %q; want %q %q", tt.name, dr.NetworkMode(), dr.Egress, tt.network, tt.egress)
		}
	}
}
