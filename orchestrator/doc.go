// Package orchestrator keeps tasks — chains of dispatches (rounds) of one
// sub-agent — in JetStream KV, applies the lifecycle events of their
// dispatches, routes each question to the task's answerers, and
// re-dispatches the same sub-agent with the answer and the partial_state it
// left, until the task ends.
//
// The task state machine:
//
//	          submit / answer accepted / respawn / continue
//	                       │
//	                       ▼
//	┌──────────────────► queued ──── cancel ─────────────────┐
//	│                      │ dispatch.started               │
//	│                      ▼                                ▼
//	│                   running ─── dispatch.cancelled ──► cancelled
//	│                      │
//	│      ┌───────────────┼──────────────────┐
//	│      │ needs_input   │ finished         │ failed (any reason)
//	│      ▼               ▼                  ▼
//	│  needs_input      finished            failed
//	│      │  ├── cancel ──────────────────────────────► cancelled
//	│      │  ├── route exhausted, no default ─────────► expired
//	│      │  └── max rounds / max wait ───────────────► failed
//	└──────┘ answer accepted (or the default, marked assumed)
//
// Replay and fork (replay.go) make new tasks from an existing one and link
// the two: a replay's questions are answered from the original's recorded
// answers in apply, never routed, and a divergent one fails it at once.
//
// finished, failed, cancelled and expired are terminal; respawn (from the
// last round) and continue (a follow-up message as the next answer) start a
// new round. A failure that the task's retry policy names, with attempts
// left, does not fail the task: the round's next attempt is queued (retry.go)
// and enqueued after the backoff, the task queued meanwhile. Every change is a compare-and-swap on the task's KV revision,
// so replayed events and two orchestrator replicas are harmless; an event is
// acknowledged only after its change is stored. A round's dispatch request
// is enqueued after the change that created it is stored (an outbox flag,
// checked on start), and its msg-id and the runner's claim make a repeated
// enqueue harmless: no round runs twice.
//
// What it may import: docs/architecture.md.
package orchestrator
