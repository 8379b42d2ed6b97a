package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/wire"
)

// registryServer is the API with a real registry on an embedded NATS and
// filesystem storage.
func registryServer(t *testing.T) *httptest.Server {
	t.Helper()
	store := storagetest.FileStore(t)
	reg, err := registry.Open(t.Context(), bustest.Bus(t), store)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.NewHandler(api.Config{Service: &apitest.Service{}, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(checked(t, h))
	t.Cleanup(srv.Close)
	return srv
}

func oneFileTar(t *testing.T, name, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(data))
	_ = tw.Close()
	return b.Bytes()
}

func TestRegistryEndpoints(t *testing.T) {
	t.Parallel()
	srv := registryServer(t)
	call := func(method, path, contentType string, body []byte) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	skill := oneFileTar(t, "SKILL.md", "# skill\n")
	for _, tc := range []struct {
		name, method, path string
		body               []byte
		status             int
		want               string
	}{
		{"capability", "POST", "/v1/capabilities?name=skill&description=d", skill, 201, `"created":true`},
		{"capability again", "POST", "/v1/capabilities?name=skill", skill, 200, `"created":false`},
		{"capability without a name", "POST", "/v1/capabilities", skill, 400, "query: name is required"},
		{"capability not a tar", "POST", "/v1/capabilities?name=x", []byte(strings.Repeat("x", 1024)), 422, "capability x: capability archive: not a tar"},
		{"capability escaping", "POST", "/v1/capabilities?name=x", oneFileTar(t, "/etc/passwd", "x"), 422, "must be relative and clean"},
		{"env", "POST", "/v1/envs", []byte(`{"name":"e","values":{"A":"1"},"secrets":{"T":"local:t"}}`), 201, `"seq":1`},
		{"env with a secret value", "POST", "/v1/envs", []byte(`{"name":"e","secrets":{"T":"hunter2"}}`), 422, "/secrets/T: does not match pattern"},
		{"env unknown field", "POST", "/v1/envs", []byte(`{"name":"e","vals":{}}`), 400, `unknown field`},
		{"subagent", "POST", "/v1/subagents", []byte(`{"name":"s","runtime":"exec","command":["true"],"capabilities":["skill"],"env":["e"]}`), 201, `"kind":"subagent"`},
		{"subagent with a missing env", "POST", "/v1/subagents", []byte(`{"name":"s","runtime":"exec","command":["true"],"env":["nope"]}`), 422, "env nope: not registered"},
		{"list", "GET", "/v1/capabilities", nil, 200, `"name":"skill"`},
		{"get", "GET", "/v1/subagents/s", nil, 200, `"capabilities":["skill"]`},
		{"versions", "GET", "/v1/envs/e/versions", nil, 200, `"seq":1`},
		{"capability versions", "GET", "/v1/capabilities/skill/versions?limit=1", nil, 200, `"kind":"capability"`},
		{"subagent versions", "GET", "/v1/subagents/s/versions", nil, 200, `"kind":"subagent"`},
		{"get missing", "GET", "/v1/envs/nope", nil, 404, `"code":"not_found"`},
		{"bad ref", "GET", "/v1/envs/e@latest", nil, 400, "want NAME or NAME@VERSION"},
		{"wrong method", "DELETE", "/v1/envs", nil, 405, `"code":"no_route"`},
	} {
		status, body := call(tc.method, tc.path, "", tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %s %s = %d %s; want %d with %q", tc.name, tc.method, tc.path, status, body, tc.status, tc.want)
		}
	}
	var list wire.EntryList
	_, body := call("GET", "/v1/subagents", "", nil)
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Entries) != 1 || list.Entries[0].Subagent == nil {
		t.Errorf("GET /v1/subagents = %s, %v", body, err)
	}
}

// An API without a registry says so instead of pretending.
func TestRegistryEndpointsWithoutRegistry(t *testing.T) {
	t.Parallel()
	h, err := api.NewHandler(api.Config{Service: &apitest.Service{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(checked(t, h))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/v1/subagents")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 404 || !strings.Contains(string(data), "this server has no registry") {
		t.Errorf("GET /v1/subagents without a registry = %d %s", resp.StatusCode, data)
	}
}
