// Package wire holds the types agora's HTTP API speaks: tasks, rounds,
// questions, answers, pages, registry entries, the request and response
// bodies, the error codes and the sentinel errors they stand for.
//
// It depends on the standard library and package schemas only, so that
// package client, and anything an integrator builds on it (a Slack app, a
// web page, a CI step), imports no NATS, AWS or Docker code. The
// orchestrator, the API and the CLI use these types by these names: this
// package is their one home (the aliases orchestrator, orchestrator/api and
// orchestrator/registry once kept for them are gone).
package wire
