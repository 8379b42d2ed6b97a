package slackanswer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg     string
		want    Target
		wantErr string
	}{
		{arg: "#ops", want: Target{Channel: "#ops"}},
		{arg: "@U123", want: Target{Channel: "@U123"}},
		{arg: "C0123", want: Target{Channel: "C0123"}},
		{arg: "#ops?allow=U1+S2+W3", want: Target{Channel: "#ops", Allow: []string{"U1", "S2", "W3"}}},
		{arg: "#ops?allow=U1&remind=1h", want: Target{Channel: "#ops", Allow: []string{"U1"}, Remind: time.Hour}},
		{arg: "", wantErr: "want slack:#channel or slack:@user"},
		{arg: "#", wantErr: "want slack:#channel"},
		{arg: "ops", wantErr: `"ops": want #channel, a channel id or @user`},
		{arg: "#ops?allow=alice", wantErr: `allow: "alice" is not a Slack user`},
		{arg: "#ops?allow=C1", wantErr: `allow: "C1" is not a Slack user`},
		{arg: "#ops?remind=soon", wantErr: `remind: "soon" is not a positive duration`},
		{arg: "#ops?who=U1", wantErr: `unknown parameter "who"`},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.arg)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseTarget(%q) = %v; want an error saying %q", tt.arg, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("ParseTarget(%q): %v", tt.arg, err)
		case !reflect.DeepEqual(got, tt.want):
			t.Errorf("ParseTarget(%q) = %+v, want %+v", tt.arg, got, tt.want)
		}
	}
}
