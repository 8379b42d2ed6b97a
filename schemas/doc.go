// Package schemas is agora's wire contract: the JSON Schemas (embedded, draft
// 2020-12) of the dispatch spec, the needs_input sentinel and the lifecycle
// events, the Go types that match them, validation with errors that name the
// JSON pointer, and the closed vocabularies (event kinds, failure reasons).
//
// The JSON Schema files are the source of truth; tests fail if the Go
// constants drift from their enums. This package imports nothing from the
// module, so both the worker and the orchestrator can depend on it.
package schemas
