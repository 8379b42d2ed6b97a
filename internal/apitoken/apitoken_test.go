package apitoken

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("s3cret"))
	hexSum := hex.EncodeToString(sum[:])
	tests := []struct {
		line    string
		want    Token
		wantErr string
	}{
		{line: "s3cret", want: Token{Sum: sum}},
		{line: "alice:s3cret", want: Token{Name: "alice", Sum: sum}},
		{line: "bot:s3cret:answerer", want: Token{Name: "bot", Sum: sum, Answerer: true}},
		{line: "root:s3cret:admin,answerer", want: Token{Name: "root", Sum: sum, Admin: true, Answerer: true}},
		{line: "alice:sha256=" + hexSum + ":submitter", want: Token{Name: "alice", Sum: sum}},
		// A last part that is not roles stays part of the secret.
		{line: "alice:s3:cret", want: Token{Name: "alice", Sum: sha256.Sum256([]byte("s3:cret"))}},
		{line: ":s3cret", wantErr: "each part non-empty"},
		{line: "alice:", wantErr: "each part non-empty"},
		{line: "alice:sha256=abc", wantErr: "64 hex digits"},
		{line: "alice:sha256=" + hexSum + ":root", wantErr: "64 hex digits"},
	}
	for _, tt := range tests {
		got, err := Parse([]string{tt.line})
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Parse(%q) = %v; want an error with %q", tt.line, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || len(got) != 1 || got[0] != tt.want):
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
		}
	}
	if _, err := Parse([]string{"a:s3cret", "b:s3cret"}); err == nil || !strings.Contains(err.Error(), "token 2: the same secret is given twice") {
		t.Errorf("Parse(one secret twice) = %v", err)
	}
}

func TestParseFile(t *testing.T) {
	t.Parallel()
	got, err := ParseFile(strings.NewReader("# tokens\n\nalice:s3cret:admin\n  bob:other  \n"))
	if err != nil || strings.Join(got, "|") != "alice:s3cret:admin|bob:other" {
		t.Errorf("ParseFile = %q, %v", got, err)
	}
	if _, err := ParseFile(strings.NewReader("alice:s3cret\n:x\n")); err == nil || err.Error() != "line 2: want SECRET or NAME:SECRET[:ROLE,…], each part non-empty" {
		t.Errorf("ParseFile(bad line 2) = %v; want the line named, without the api: prefix", err)
	}
}

// TestHashedLine: the line 'agora token create' prints reads back as the
// token it stands for — its name, secret and roles — or is refused: a
// name with ':' read back as the part before it.
func TestHashedLine(t *testing.T) {
	t.Parallel()
	const secret = "agora_s3cret"
	sum := sha256.Sum256([]byte(secret))
	tests := []struct {
		name    string
		roles   []string
		want    Token
		wantErr string
	}{
		{name: "alice", want: Token{Name: "alice", Sum: sum}},
		{name: "ci-bot@example.com", roles: []string{RoleAnswerer}, want: Token{Name: "ci-bot@example.com", Sum: sum, Answerer: true}},
		{name: "root", roles: []string{RoleAdmin, RoleAnswerer}, want: Token{Name: "root", Sum: sum, Admin: true, Answerer: true}},
		{name: "sam", roles: []string{RoleSubmitter}, want: Token{Name: "sam", Sum: sum}},
		{name: "a b", want: Token{Name: "a b", Sum: sum}},
		{name: "a:b", wantErr: "cannot contain ':'"},
		{name: "", wantErr: "must not be empty"},
		{name: " alice", wantErr: "white space"},
		{name: "alice ", wantErr: "white space"},
		{name: "#alice", wantErr: "comment"},
		{name: "ali\nce", wantErr: "line breaks"},
		{name: "ali\tce", wantErr: "control characters"},
		{name: "alice", roles: []string{"root"}, wantErr: `token role "root"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, err := HashedLine(tt.name, secret, tt.roles)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("HashedLine(%q, %q) = %q, %v; want an error with %q", tt.name, tt.roles, line, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("HashedLine(%q, %q): %v", tt.name, tt.roles, err)
			}
			if strings.Contains(line, secret) {
				t.Errorf("HashedLine(%q) = %q holds the secret", tt.name, line)
			}
			got, err := Parse([]string{line})
			if err != nil || len(got) != 1 || got[0] != tt.want {
				t.Errorf("Parse(HashedLine(%q)) = %+v, %v; want %+v", tt.name, got, err, tt.want)
			}
		})
	}
}
