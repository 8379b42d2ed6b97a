package idnames

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, json, want string
	}{
		{"a task", `{"id":"t-1","state":"queued","task_id":"other"}`, "t-1\n"},
		{"a question", `{"task_id":"t-2","round":1}`, "t-2\n"},
		{"a list of tasks", `{"tasks":[{"id":"a"},{"id":"b"}],"next_cursor":"x"}`, "a\nb\n"},
		{"registry entries", `[{"name":"rev","version":"0123456789ab"},{"name":"plain"}]`, "rev@0123456789ab\nplain\n"},
		{"parked events", `{"items":[{"seq":77},{"seq":78}]}`, "77\n78\n"},
		{"artifacts", `{"task_id":"t-3","artifacts":[{"name":"a.txt"},{"name":"b.txt"}]}`, "a.txt\nb.txt\n"},
		{"contexts, sorted", `{"contexts":{"prod":{},"dev":{}}}`, "dev\nprod\n"},
		{"the version", `{"version":"1.2.3","go":"go1.26"}`, "1.2.3\n"},
		{"a string", `"t-9"`, "t-9\n"},
		{"JSON lines", "{\"id\":\"x\"}\n{\"id\":\"y\"}\n", "x\ny\n"},
		{"nothing with an id", `{"ok":true}`, ""},
	} {
		var out bytes.Buffer
		if err := Write(&out, strings.NewReader(tt.json)); err != nil || out.String() != tt.want {
			t.Errorf("%s: Write(%s) = %q, %v; want %q", tt.name, tt.json, out.String(), err, tt.want)
		}
	}
	if err := Write(&bytes.Buffer{}, strings.NewReader(`{"id":`)); err == nil || !strings.HasPrefix(err.Error(), "-o name: read the JSON: ") {
		t.Errorf("Write of broken JSON = %v; want an error naming -o name", err)
	}
}
