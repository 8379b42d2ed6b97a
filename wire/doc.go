// Package wire holds the types agora's HTTP API speaks: tasks, rounds,
// questions, answers, pages, registry entries, the request and response
// bodies, the error codes and the sentinel errors they stand for.
//
// It depends on the standard library and package schemas only, so that
// package client, and anything an integrator builds on it (a Slack app, a
// web page, a CI step), imports no NATS, AWS or Docker code. The
// orchestrator and the API use these types as they are; package
// orchestrator gives them their old names as aliases.
package wire
