package demo

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/agoradev/agora/schemas"
)

// TestAnswer: --answer wins; CI=true, `agora demo </dev/null` (stdin a
// character device that is no terminal) and an empty pipe take the
// question's default; without a default they fail naming --answer.
func TestAnswer(t *testing.T) {
	t.Parallel()
	def := "config.yaml"
	q := &schemas.NeedsInput{Question: "Which one should stay?", Options: []string{"config.yaml", "config.json"}, Default: &def}
	noDefault := &schemas.NeedsInput{Question: "A or B?", Options: []string{"A", "B"}}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { devNull.Close() })
	for _, tt := range []struct {
		name         string
		q            *schemas.NeedsInput
		flag         string
		ci           bool
		stdin        io.Reader
		want, wantBy string
		wantErr      string
	}{
		{name: "--answer", q: q, flag: "config.json", stdin: devNull, want: "config.json", wantBy: "--answer"},
		{name: "/dev/null", q: q, stdin: devNull, want: def, wantBy: "default"},
		{name: "an empty reader", q: q, stdin: strings.NewReader(""), want: def, wantBy: "default"},
		{name: "CI=true", q: q, ci: true, stdin: strings.NewReader("config.json\n"), want: def, wantBy: "default"},
		{name: "no default", q: noDefault, stdin: devNull, wantErr: "--answer"},
	} {
		var out bytes.Buffer
		got, by, err := answer(tt.q, tt.flag, tt.ci, tt.stdin, &out)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: answer = %v; want an error naming %s", tt.name, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want || !strings.Contains(by, tt.wantBy)):
			t.Errorf("%s: answer = %q, %q, %v; want %q by %s", tt.name, got, by, err, tt.want, tt.wantBy)
		}
	}
}
