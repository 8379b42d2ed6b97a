package api

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/agoradev/agora/orchestrator/api/apitest"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "write openapi.json and docs/openapi.json from the wire types")

// TestOpenAPIDocument checks that openapi.json (embedded and served) and
// docs/openapi.json are what the generator makes of the wire types and
// the route table, and that kin-openapi finds the document valid.
func TestOpenAPIDocument(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatalf("build the document: %v", err)
	}
	want, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatalf("encode the document: %v", err)
	}
	want = append(want, '\n')
	files := []string{"openapi.json", filepath.Join("..", "..", "docs", "openapi.json")}
	if *updateOpenAPI {
		for _, f := range files {
			if err := os.WriteFile(f, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range files {
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what the wire types and the route table make; run go test ./orchestrator/api -run TestOpenAPIDocument -update-openapi", f)
		}
	}
	if !bytes.Equal(OpenAPI, want) {
		t.Errorf("the embedded document differs from the generated one; rebuild after -update-openapi")
	}
	loaded, err := openapi3.NewLoader().LoadFromData(OpenAPI)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3 document: %v", err)
	}
}

// TestOpenAPIRoutes checks that every endpoint the handler registers is
// in the document and every operation of the document is an endpoint.
func TestOpenAPIRoutes(t *testing.T) {
	h := &handler{svc: &apitest.Service{}}
	var served []string
	for _, e := range h.endpoints() {
		served = append(served, e.method+" "+strings.ReplaceAll(e.path, "...}", "}"))
	}
	slices.Sort(served)
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("decode openapi.json: %v", err)
	}
	documented := openAPIRoutes(doc)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is served but not in openapi.json", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("%s is in openapi.json but not served", r)
		}
	}
	if len(served) != len(documented) {
		t.Errorf("served %d endpoints, documented %d", len(served), len(documented))
	}
}
