// Package worker runs one dispatch inside its container and turns it into
// exactly one terminal lifecycle event and one exit code.
//
// The lifecycle, in order: validate the configuration and the spec (from
// AGORA_SPEC_FILE or dispatches/<id>/spec.json in storage); pick the runtime
// adapter; fetch capability and env bundles and verify each sha256, resolve
// the bundles' secret refs (env:, file:, local:, aws-sm:) and from then on
// redact every resolved value from stderr, the logs and the events; emit
// dispatch.started; prepare the workspace (capability overlay with safe paths
// only, the needs-input SKILL, .agora/input.json and .agora/resume.json, no
// stale sentinel); run agora-setup.sh when the workspace has one; run the
// adapter with an allow-listed environment under the dispatch timeout; read
// the sentinel; emit the one terminal event; return its exit code. Every
// failure the worker can name ends in a dispatch.failed event, never only in
// a log line.
//
// What it may import and what the static worker binary must never link
// (nats-server, the Docker SDK, the orchestrator, wire):
// docs/architecture.md; test/arch checks both.
package worker
