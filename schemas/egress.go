package schemas

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// NetworkEgress is the third network mode: the sub-agent's container is on
// a network with no way out but an HTTP(S) proxy that relays only to the
// hosts of its egress allow-list (DispatchRequest.Egress, docs/runner.md).
const NetworkEgress = "egress"

// MaxEgressHosts bounds an egress allow-list: the contract's maximum (the
// JSON Schemas' maxItems). A server's --max-egress-hosts may only be lower.
const MaxEgressHosts = 64

// EgressRule is one entry of an egress allow-list: a host name, or every
// name under a domain ("*.example.com"), and the one port it may be
// reached on (0: the default ports, 443 and 80).
type EgressRule struct {
	// Host is the name in lower case, without the wildcard.
	Host string
	// Wildcard: Host is a domain and every name under it matches (not
	// the domain itself).
	Wildcard bool
	// Port is the only port allowed; 0 allows 443 and 80.
	Port int
}

// EgressGrammar says what an egress entry may be, for error messages.
const EgressGrammar = `a DNS host name ("api.anthropic.com"), optionally "*." in front for every name under a domain ("*.githubusercontent.com") and ":PORT" behind (default ports 443 and 80)`

// ParseEgressRule reads one egress entry: [*.]NAME[:PORT]. It refuses IP
// addresses (v4, v6, bracketed or not), "localhost", a wildcard over a
// single label ("*.com"), names that are not DNS host names (labels of
// letters, digits and inner '-', at most 63 each, 253 in all) and ports
// outside 1-65535, each with a message naming the entry and the rule.
func ParseEgressRule(entry string) (EgressRule, error) {
	var r EgressRule
	s := strings.ToLower(strings.TrimSpace(entry))
	bad := func(why string) (EgressRule, error) {
		return EgressRule{}, fmt.Errorf("egress entry %q %s: want %s", entry, why, EgressGrammar)
	}
	if s == "" {
		return bad("is empty")
	}
	if strings.Contains(s, "://") || strings.Contains(s, "/") {
		return bad("is a URL or path: give the host name only")
	}
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") > 1 {
		return bad("is an IP address (only host names are allowed: the proxy resolves names, so an address would bypass the list)")
	}
	if host, port, ok := strings.Cut(s, ":"); ok {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || port != strconv.Itoa(p) {
			return bad(fmt.Sprintf("has port %q, not a number from 1 to 65535", port))
		}
		s, r.Port = host, p
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		s, r.Wildcard = rest, true
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return bad("is an IP address (only host names are allowed: the proxy resolves names, so an address would bypass the list)")
	}
	if err := checkHostName(s); err != nil {
		return bad(err.Error())
	}
	labels := strings.Split(s, ".")
	if isNumeric(labels[len(labels)-1]) {
		// No top-level domain is all digits: this is an address in some
		// other notation ("10.1", "127.1") that resolvers accept.
		return bad("looks like an IP address (its last label is a number)")
	}
	if s == "localhost" || strings.HasSuffix(s, ".localhost") {
		return bad("names this host's loopback")
	}
	if r.Wildcard && len(labels) < 2 {
		return bad("would allow every name under a top-level domain")
	}
	r.Host = s
	return r, nil
}

func checkHostName(s string) error {
	if len(s) > 253 {
		return fmt.Errorf("is %d characters long, over the 253 of a DNS name", len(s))
	}
	if strings.Contains(s, "*") {
		return errors.New(`has a "*" other than a leading "*."`)
	}
	for _, label := range strings.Split(s, ".") {
		switch {
		case label == "":
			return errors.New("has an empty label")
		case len(label) > 63:
			return fmt.Errorf("has a label of %d characters, over the 63 of DNS", len(label))
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Errorf("has label %q starting or ending with '-'", label)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("has %q, not a letter, digit, '-' or '.'", c)
			}
		}
	}
	return nil
}

func isNumeric(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// ParseEgress reads an egress allow-list: every entry's problem, joined;
// more than MaxEgressHosts entries is one too.
func ParseEgress(entries []string) ([]EgressRule, error) {
	var errs []error
	if len(entries) > MaxEgressHosts {
		errs = append(errs, fmt.Errorf("egress lists %d hosts, over the contract's maximum %d", len(entries), MaxEgressHosts))
	}
	rules := make([]EgressRule, 0, len(entries))
	for _, e := range entries {
		r, err := ParseEgressRule(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rules = append(rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rules, nil
}

// Allows reports whether the rule lets a request reach host:port. host is
// a name (any case, a trailing dot ignored); an IP address never matches.
func (r EgressRule) Allows(host string, port int) bool {
	if r.Port == 0 {
		if port != 443 && port != 80 {
			return false
		}
	} else if port != r.Port {
		return false
	}
	return r.Names(host)
}

// Names reports whether the rule's name covers host, whatever the port.
func (r EgressRule) Names(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if r.Wildcard {
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

// String is the rule as written, in lower case.
func (r EgressRule) String() string {
	s := r.Host
	if r.Wildcard {
		s = "*." + s
	}
	if r.Port != 0 {
		s += ":" + strconv.Itoa(r.Port)
	}
	return s
}

// CheckNetwork checks a request's network and egress allow-list together:
// network one of none, bridge, host, egress (or empty); egress entries
// only with network egress (or empty, which then means egress), and
// network egress only with at least one entry. It returns the network the
// pair means.
func CheckNetwork(network string, egress []string) (string, error) {
	switch network {
	case "", NetworkNone, NetworkBridge, NetworkHost, NetworkEgress:
	default:
		return "", fmt.Errorf("network %q: want %s, %s, %s or %s", network, NetworkNone, NetworkBridge, NetworkHost, NetworkEgress)
	}
	if len(egress) > 0 && network == "" {
		network = NetworkEgress
	}
	switch {
	case network == NetworkEgress && len(egress) == 0:
		return "", fmt.Errorf("network %q needs an egress list of the hosts the sub-agent may reach, e.g. egress: [api.anthropic.com]; for no network at all use network %q", NetworkEgress, NetworkNone)
	case network != NetworkEgress && len(egress) > 0:
		return "", fmt.Errorf("egress lists hosts, but network is %q: drop network (or set it to %q) to keep the sub-agent to those hosts", network, NetworkEgress)
	}
	if _, err := ParseEgress(egress); err != nil {
		return "", err
	}
	return network, nil
}
