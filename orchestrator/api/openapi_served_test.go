package api_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
)

// TestOpenAPIServed checks that GET /v1/openapi.json answers the embedded
// document without a token, even when the API has tokens: it describes
// the API, not any data.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	h := newHandler(t, &apitest.Service{}, "ci:s3cret")
	for _, method := range []string{"GET", "HEAD"} {
		rec := serve(h, method, "/v1/openapi.json", "")
		if rec.Code != 200 {
			t.Fatalf("%s /v1/openapi.json without a token = %d %s; want 200", method, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s /v1/openapi.json: Content-Type %q; want application/json", method, ct)
		}
		want := api.OpenAPI
		if method == "HEAD" {
			want = nil
		}
		if !bytes.Equal(rec.Body.Bytes(), want) {
			t.Errorf("%s /v1/openapi.json: body of %d bytes; want the embedded document's %d", method, rec.Body.Len(), len(want))
		}
	}
	if rec := serve(h, "GET", "/v1/tasks", ""); rec.Code != 401 {
		t.Errorf("GET /v1/tasks without a token = %d; want 401 (only the document is public)", rec.Code)
	}
}

// TestOpenAPIValidatorInTestsOnly keeps kin-openapi out of what the
// server, the client and the binaries link: only tests use it.
func TestOpenAPIValidatorInTestsOnly(t *testing.T) {
	t.Parallel()
	pkgs := []string{"github.com/agoradev/agora/orchestrator/api", "github.com/agoradev/agora/client",
		"github.com/agoradev/agora/wire", "github.com/agoradev/agora/cmd/agora"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/getkin/") || strings.HasSuffix(dep, "/openapitest") {
			t.Errorf("%s is linked by %v; the OpenAPI validator belongs in tests", dep, pkgs)
		}
	}
}
