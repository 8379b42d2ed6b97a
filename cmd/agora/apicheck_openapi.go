//go:build openapicheck

package main

import (
	"fmt"
	"io"
	"net/http"

	"github.com/agoradev/agora/orchestrator/api/openapitest"
)

// apiCheck, in the binary the tests run (testenv.Binary builds it with the
// openapicheck tag), checks every request the server gets and every
// response it gives against openapi.json, and reports each mismatch to
// the file $AGORA_OPENAPI_REPORT names (openapitest.Env), else to stderr.
// Requests that break the document must be refused (Lenient): tests send
// bad ones on purpose.
func apiCheck(environ []string, stderr io.Writer) func(http.Handler) http.Handler {
	report := openapitest.ReportTo(getenv(environ, openapitest.ReportEnv), stderr)
	return func(h http.Handler) http.Handler {
		w, err := openapitest.Wrap(h, openapitest.Lenient, report)
		if err != nil {
			report(fmt.Sprintf("openapitest: %v", err))
			return h
		}
		return w
	}
}
