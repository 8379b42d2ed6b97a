// Package runner runs dispatch requests as ephemeral containers on one
// Docker host (or through ECS): it pulls requests from the AGORA_QUEUE work
// queue while it has a free slot, claims each one (so a dispatch never
// starts twice and a cancel that comes first wins), compiles the request
// into a hardened container spec, starts the container, streams its output
// live to agora.logs.<dispatch_id> and to storage (capped), relays the
// worker's events from its stdout to AGORA_EVENTS, enforces a backstop
// timeout, stops the container on cancel, snapshots the workspace of a
// round that asked a question, and acknowledges the request only once the
// outcome is recorded. A container that ends without a terminal event gets
// one from the runner (dispatch.failed, worker-lost) so every accepted
// dispatch ends with exactly one.
//
// # One delivery, top to bottom
//
//	claim.go    handle: one bus call (bus.Claim: terminal event, claim,
//	            cancel), then run, adopt, or settle what a cancel or another
//	            runner left (resolveClaim)
//	start.go    run: limits, the transport's prepare, Create, renew the
//	            claim (which reads a cancel that came meanwhile), Start;
//	            adopt: a container this process did not create
//	follow.go   follow: output, heartbeat and claim, cancel, backstop, Wait
//	settle.go   settle: gather what is known, decide, collect, publish the
//	            events the bus lacks (the terminal one last), remove
//	outcome.go  decideOutcome: the settle decision, a pure function
//	dispatch.go the dispatch's state; conclude and finish
//
// A dispatch's files reach its container by one of two transports, chosen
// once per runner (transport.go): host files bind-mounted into the
// container (hostfiles.go; Docker and EC2) or objects of the dispatch's
// exchange in storage (remote.go, exchange.go; ECS on Fargate,
// Config.NoHostMounts). Nothing else in the path branches on which.
//
// Cancel, in any state (cancel.go): before Start it means no start (the
// created container is removed unstarted and the runner reports
// dispatch.cancelled); after it the runner creates a cancel marker the
// worker checks, so only the runner's SIGTERM cancels, never a sub-agent's
// own `kill -TERM 1`. A container whose Start fails is removed.
//
// On start it reconciles: containers it finds by label are adopted when
// running, settled when exited, and started when created but never started
// (unless cancelled or settled); none is left behind, no outcome is lost.
// Stopping a runner never kills running dispatches: the next runner process
// on the host adopts them.
//
// How the worker's events reach NATS: by default the runner relays them from
// the container's stdout (the worker gets no AGORA_NATS_URL). That works
// with every network policy, including a sub-agent with no network at all,
// keeps NATS unreachable from sub-agents, and needs no NATS listener on the
// Docker bridge. With Config.WorkerNATSURL set, workers publish themselves
// (their containers must reach that URL) and the runner recovers from stdout
// only what is missing. Either way each event is stored once (Nats-Msg-Id).
//
// What it may import: docs/architecture.md (never the Docker or ECS SDK:
// the engine is a compute.Engine the root hands it).
package runner
