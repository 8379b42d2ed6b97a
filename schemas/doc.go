// Package schemas is agora's wire contract: the JSON Schemas (embedded, draft
// 2020-12) of the dispatch spec, the needs_input sentinel and the lifecycle
// events, the Go types that match them, validation with errors that name the
// JSON pointer, and the closed vocabularies (event kinds, failure reasons).
//
// The JSON Schema files are the source of truth; tests fail if the Go
// constants drift from their enums. Validate runs them through
// github.com/santhosh-tekuri/jsonschema/v5 (draft 2020-12, format
// assertions on), the one JSON Schema implementation agora uses, on the
// worker and the server alike: each schema is compiled once per process, on
// its first use, so a worker pays only for what it validates. The schemas'
// patterns are written to mean the same in ECMA-262 (what JSON Schema
// specifies), Go's regexp and Python's re, and a test holds them to a
// second implementation, Python's jsonschema (docs/contract.md). It
// imports nothing from the module, so every package, the worker's and the
// orchestrator's, may depend on it (docs/architecture.md).
package schemas
