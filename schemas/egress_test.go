package schemas

import (
	"strings"
	"testing"
)

func TestParseEgressRule(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in   string
		want EgressRule
	}{
		{"api.anthropic.com", EgressRule{Host: "api.anthropic.com"}},
		{"GitHub.com", EgressRule{Host: "github.com"}},
		{"*.githubusercontent.com", EgressRule{Host: "githubusercontent.com", Wildcard: true}},
		{"git.example.com:8443", EgressRule{Host: "git.example.com", Port: 8443}},
		{"*.example.co.uk:443", EgressRule{Host: "example.co.uk", Wildcard: true, Port: 443}},
		{"models", EgressRule{Host: "models"}}, // an intranet or Docker container name
		{"a-b.c1", EgressRule{Host: "a-b.c1"}},
	}
	for _, tc := range ok {
		got, err := ParseEgressRule(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseEgressRule(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, why string }{
		{"", "is empty"},
		{"10.0.0.1", "IP address"},
		{"10.0.0.1:443", "IP address"},
		{"127.1", "looks like an IP address"},
		{"2130706433", "looks like an IP address"},
		{"::1", "IP address"},
		{"[::1]:443", "IP address"},
		{"fe80::1", "IP address"},
		{"*.10.0.0.1", "IP address"},
		{"localhost", "loopback"},
		{"db.localhost", "loopback"},
		{"*.com", "top-level domain"},
		{"*", `"*"`},
		{"a.*.example.com", `"*"`},
		{"exa_mple.com", "not a letter"},
		{"-a.example.com", "starting or ending with '-'"},
		{"a..example.com", "empty label"},
		{"example.com.", "empty label"},
		{"example.com:0", "port"},
		{"example.com:65536", "port"},
		{"example.com:https", "port"},
		{"example.com:+443", "port"},
		{"http://example.com", "is a URL"},
		{"example.com/path", "is a URL"},
		{strings.Repeat("a", 64) + ".com", "63"},
		{strings.Repeat("abcdefghi.", 26) + "com", "253"},
	}
	for _, tc := range bad {
		_, err := ParseEgressRule(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "want a DNS host name") {
			t.Errorf("ParseEgressRule(%q) = %v; want an error saying %q and the grammar", tc.in, err, tc.why)
		}
	}
}

func TestEgressRuleAllows(t *testing.T) {
	t.Parallel()
	rule := func(s string) EgressRule {
		r, err := ParseEgressRule(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cases := []struct {
		rule, host string
		port       int
		want       bool
	}{
		{"github.com", "github.com", 443, true},
		{"github.com", "GITHUB.COM.", 443, true},
		{"github.com", "github.com", 80, true},
		{"github.com", "github.com", 22, false},
		{"github.com", "api.github.com", 443, false},
		{"github.com", "evilgithub.com", 443, false},
		{"github.com", "github.com.evil.example", 443, false},
		{"*.githubusercontent.com", "raw.githubusercontent.com", 443, true},
		{"*.githubusercontent.com", "a.b.githubusercontent.com", 443, true},
		{"*.githubusercontent.com", "githubusercontent.com", 443, false},
		{"*.githubusercontent.com", "evilgithubusercontent.com", 443, false},
		{"git.example.com:8443", "git.example.com", 8443, true},
		{"git.example.com:8443", "git.example.com", 443, false},
	}
	for _, tc := range cases {
		if got := rule(tc.rule).Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("%q.Allows(%q, %d) = %v, want %v", tc.rule, tc.host, tc.port, got, tc.want)
		}
	}
}

func TestCheckNetwork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		network string
		egress  []string
		want    string // the network, or a part of the error
		ok      bool
	}{
		{"", nil, "", true},
		{"none", nil, "none", true},
		{"bridge", nil, "bridge", true},
		{"", []string{"api.anthropic.com"}, "egress", true},
		{"egress", []string{"api.anthropic.com"}, "egress", true},
		{"egress", nil, "needs an egress list", false},
		{"bridge", []string{"api.anthropic.com"}, `network is "bridge"`, false},
		{"wifi", nil, `network "wifi": want none, bridge, host or egress`, false},
		{"", []string{"1.2.3.4", "ok.example.com", "*.com"}, "top-level domain", false},
		{"", make([]string, MaxEgressHosts+1), "over the contract's maximum 64", false},
	}
	for _, tc := range cases {
		got, err := CheckNetwork(tc.network, tc.egress)
		switch {
		case tc.ok && (err != nil || got != tc.want):
			t.Errorf("CheckNetwork(%q, %q) = %q, %v; want %q", tc.network, tc.egress, got, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckNetwork(%q, %q) = %q, %v; want an error containing %q", tc.network, tc.egress, got, err, tc.want)
		}
	}
}
