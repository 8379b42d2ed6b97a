// Package schemas is agora's wire contract: the JSON Schemas (embedded, draft
// 2020-12) of the dispatch spec, the needs_input sentinel and the lifecycle
// events, the Go types that match them, validation with errors that name the
// JSON pointer, and the closed vocabularies (event kinds, failure reasons).
//
// The JSON Schema files are the source of truth; tests fail if the Go
// constants drift from their enums. Validate runs them through this
// package's own compiler of the draft 2020-12 keywords they use (compile.go,
// check.go): one schema at a time, on first use, with no package-level
// work, so a worker process pays only for what it validates. It gives the
// messages github.com/santhosh-tekuri/jsonschema/v5 gives, and a test holds
// it to that library, which the tests alone import. This package imports
// nothing from the module, so both the worker and the orchestrator can
// depend on it.
package schemas
