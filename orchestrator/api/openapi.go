package api

import (
	_ "embed"
	"net/http"
)

// OpenAPIPath is where the API serves its OpenAPI 3 document, without a
// token: it describes the API, not any data.
const OpenAPIPath = "/v1/openapi.json"

// OpenAPI is the API's OpenAPI 3.0 document (docs/openapi.json is the
// same file). It is generated from the wire types and the route table in
// openapi_gen_test.go; the package's tests check it against every route
// and every request and response they make.
//
//go:embed openapi.json
var OpenAPI []byte

func (h *handler) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(OpenAPI)
	}
}
