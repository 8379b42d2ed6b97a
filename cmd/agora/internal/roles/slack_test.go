package roles

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer/slackfake"
)

// TestSlackMounted: with Slack configured, the roles take slack route
// steps and serves the interactivity endpoint on the API's listener,
// checked by Slack's signature (not the API's tokens), while the API still
// wants its token.
func TestSlackMounted(t *testing.T) {
	t.Parallel()
	fake := slackfake.New(t)
	s := start(t, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Tokens: []string{"alice:s3cret"}, Orchestrator: true,
		Slack: &slackanswer.Config{Token: "xoxb-test", SigningSecret: "sign", APIURL: fake.URL()}})
	post := func(r *http.Request) int {
		t.Helper()
		r.RequestURI = ""
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	click := map[string]any{"type": "block_actions", "user": map[string]any{"id": "U1"}, "actions": []any{}}
	tests := []struct {
		name string
		req  *http.Request
		want int
	}{
		{"signed", slackfake.Interaction(s.URL()+SlackPath, "sign", time.Now(), click), http.StatusOK},
		{"forged", slackfake.Interaction(s.URL()+SlackPath, "forged", time.Now(), click), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		if got := post(tt.req); got != tt.want {
			t.Errorf("%s POST %s: %d, want %d", tt.name, SlackPath, got, tt.want)
		}
	}
	// The Events API endpoint: Slack's challenge answered when signed,
	// refused when not.
	challenge := func(key string) (int, string) {
		t.Helper()
		r := slackfake.Event(s.URL()+SlackEventsPath, key, time.Now(), slackfake.URLVerification("ch4llenge"))
		r.RequestURI = ""
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := challenge("sign"); code != http.StatusOK || !strings.Contains(body, `"challenge":"ch4llenge"`) {
		t.Errorf("signed url_verification at %s: %d %s, want 200 with the challenge", SlackEventsPath, code, body)
	}
	if code, _ := challenge("forged"); code != http.StatusUnauthorized {
		t.Errorf("forged url_verification at %s: %d, want 401", SlackEventsPath, code)
	}
	body := `{"task_id": "slack-1", "route": "slack:#ops?allow=U1", "subagent": {"name": "s", "runtime": "exec", "command": ["true"]}}`
	submit := func(token string) int {
		r, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/tasks", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Host = "agora.internal" // not loopback: the API wants its token
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return post(r)
	}
	if got := submit(""); got != http.StatusUnauthorized {
		t.Errorf("submit without a token: %d, want 401", got)
	}
	if got := submit("s3cret"); got/100 != 2 {
		t.Errorf("submit with route slack:#ops: %d, want it accepted", got)
	}
	if calls := fake.Calls("auth.test"); len(calls) != 1 {
		t.Errorf("auth.test called %d times at start, want 1", len(calls))
	}
}
