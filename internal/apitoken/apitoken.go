// Package apitoken is the grammar of the API's bearer tokens as an
// operator configures them (--token, --tokens-file, $AGORA_TOKENS): a
// secret or its sha256, the name it records and its roles. The API
// (orchestrator/api) authenticates with what Parse returns; agora token
// create checks the line it prints with it.
package apitoken

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// Token is one accepted bearer token: the secret's hash (so every compare
// takes the same time whatever the lengths), the name it records and its
// roles.
type Token struct {
	Name     string
	Sum      [sha256.Size]byte
	Admin    bool
	Answerer bool
}

// Roles a token may have (NAME:SECRET:ROLE[,ROLE]). Without one a named
// token is a submitter: it sees and acts on its own tasks only.
const (
	// RoleAdmin sees and acts on every task, may use every local secret and
	// may answer or continue on behalf of someone (recorded as Via).
	RoleAdmin = "admin"
	// RoleAnswerer sees every task and answers any, on behalf of the person
	// it names in by (recorded as By, the token's name as Via): a Slack app
	// or a web inbox.
	RoleAnswerer = "answerer"
	// RoleSubmitter is the default, named for clarity.
	RoleSubmitter = "submitter"
)

// Parse reads tokens as the API's configuration takes them: SECRET,
// NAME:SECRET or NAME:SECRET:ROLE[,ROLE] (the secret also as sha256=HEX),
// each part non-empty, no secret twice.
func Parse(raw []string) ([]Token, error) {
	out := make([]Token, 0, len(raw))
	seen := map[[sha256.Size]byte]bool{}
	for i, s := range raw {
		name, secret, named := strings.Cut(s, ":")
		if !named {
			name, secret = "", s
		}
		if secret == "" || named && name == "" {
			return nil, fmt.Errorf("api: token %d: want SECRET or NAME:SECRET[:ROLE,…], each part non-empty", i+1)
		}
		t := Token{Name: name}
		// A last part of role names is the roles; anything else stays part
		// of the secret, as before roles existed.
		if rest, roles, ok := cutLast(secret, ":"); ok && rest != "" && isRoles(roles) {
			secret = rest
			for r := range strings.SplitSeq(roles, ",") {
				t.Admin = t.Admin || r == RoleAdmin
				t.Answerer = t.Answerer || r == RoleAnswerer
			}
		}
		if hexSum, ok := strings.CutPrefix(secret, hashedPrefix); ok {
			// A secret kept as its hash (a tokens file made by 'agora token
			// create'): the server never holds the secret itself.
			b, err := hex.DecodeString(hexSum)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("api: token %d: %s must be followed by the secret's sha256 in 64 hex digits", i+1, hashedPrefix)
			}
			copy(t.Sum[:], b)
		} else {
			t.Sum = sha256.Sum256([]byte(secret))
		}
		if seen[t.Sum] {
			return nil, fmt.Errorf("api: token %d: the same secret is given twice", i+1)
		}
		seen[t.Sum] = true
		out = append(out, t)
	}
	return out, nil
}

// hashedPrefix marks a token's secret given as its sha256
// (NAME:sha256=HEX[:ROLE]); a secret that itself starts so cannot be given.
const hashedPrefix = "sha256="

// CheckName reports a token name that a tokens file line cannot carry: an
// empty one, one with ':' (the line's separator: "a:b" would read back as
// a token named "a"), a control character or a line break, white space at
// either end (a line is trimmed) or a leading '#' (a comment line).
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("a token name must not be empty")
	case strings.Contains(name, ":"):
		return fmt.Errorf("token name %q: a name cannot contain ':' (it separates the name from the secret)", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("token name %q: a name cannot contain control characters or line breaks", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("token name %q: a name cannot start or end with white space", name)
	case strings.HasPrefix(name, "#"):
		return fmt.Errorf("token name %q: a name cannot start with '#' (the line would be a comment)", name)
	}
	return nil
}

// HashedLine is the tokens file line for a token named name with secret
// and roles, holding only the secret's sha256 (NAME:sha256=HEX[:ROLE,…]).
// It fails for a name CheckName refuses, and unless the line reads back
// (ParseFile, Parse) as the same token: that name, that secret, those
// roles.
func HashedLine(name, secret string, roles []string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(secret))
	line := name + ":" + hashedPrefix + hex.EncodeToString(sum[:])
	if len(roles) > 0 {
		line += ":" + strings.Join(roles, ",")
	}
	want := Token{Name: name, Sum: sum}
	for _, r := range roles {
		switch r {
		case RoleAdmin:
			want.Admin = true
		case RoleAnswerer:
			want.Answerer = true
		case RoleSubmitter:
		default:
			return "", fmt.Errorf("token role %q: want %s, %s or %s", r, RoleAdmin, RoleAnswerer, RoleSubmitter)
		}
	}
	lines, err := ParseFile(strings.NewReader(line + "\n"))
	if err != nil {
		return "", fmt.Errorf("the tokens file line for %q: %w", name, err)
	}
	got, err := Parse(lines)
	if err != nil {
		return "", fmt.Errorf("the tokens file line for %q: %w", name, err)
	}
	if len(got) != 1 || got[0] != want {
		return "", fmt.Errorf("the tokens file line for %q does not read back as the token it stands for", name)
	}
	return line, nil
}

// ParseFile reads a tokens file: one token a line as Parse takes
// them (NAME:SECRET[:ROLE] or NAME:sha256=HEX[:ROLE]), blank lines
// and lines starting with # ignored. It checks each line as Parse does.
func ParseFile(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := Parse([]string{line}); err != nil {
			return nil, fmt.Errorf("line %d: %s", n, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "api: "), "token 1: "))
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// isRoles reports whether s is a comma-separated list of known roles.
func isRoles(s string) bool {
	for r := range strings.SplitSeq(s, ",") {
		if r != RoleAdmin && r != RoleAnswerer && r != RoleSubmitter {
			return false
		}
	}
	return s != ""
}
