//go:build !openapicheck

package main

import (
	"io"
	"net/http"
)

// apiCheck wraps the HTTP API in the binary tests build with the
// openapicheck tag (apicheck_openapi.go); a real binary serves it as is.
func apiCheck([]string, io.Writer) func(http.Handler) http.Handler { return nil }
