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
