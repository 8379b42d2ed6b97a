package schemas

// EventKind is one of the six lifecycle event kinds. The enum in
// event.schema.json is the source of truth; TestVocabularyMatchesSchema keeps
// these constants in step with it.
type EventKind string

const (
	// KindAccepted: the orchestrator accepted the dispatch and queued it.
	KindAccepted EventKind = "dispatch.accepted"
	// KindStarted: the worker validated the spec and is about to prepare the workspace.
	KindStarted EventKind = "dispatch.started"
	// KindFinished: terminal; no sentinel and the runtime exited 0.
	KindFinished EventKind = "dispatch.finished"
	// KindNeedsInput: terminal; the sub-agent left a valid sentinel and waits for an answer.
	KindNeedsInput EventKind = "dispatch.needs_input"
	// KindFailed: terminal; see Failure.Reason.
	KindFailed EventKind = "dispatch.failed"
	// KindCancelled: terminal; the worker was asked to stop (SIGTERM).
	KindCancelled EventKind = "dispatch.cancelled"
)

// EventKinds lists every kind, in lifecycle order.
var EventKinds = []EventKind{KindAccepted, KindStarted, KindFinished, KindNeedsInput, KindFailed, KindCancelled}

// Terminal reports whether k ends a dispatch. Exactly one terminal event is
// stored per dispatch.
func (k EventKind) Terminal() bool {
	switch k {
	case KindFinished, KindNeedsInput, KindFailed, KindCancelled:
		return true
	}
	return false
}

// Known reports whether k is one of the six kinds. Consumers log and skip
// the kinds they do not know.
func (k EventKind) Known() bool {
	for _, known := range EventKinds {
		if k == known {
			return true
		}
	}
	return false
}

// FailureReason says why a dispatch failed; a closed vocabulary.
type FailureReason string

const (
	// ReasonWorkerFailed: bad spec or environment, malformed sentinel, setup
	// script failure, adapter could not start.
	ReasonWorkerFailed FailureReason = "worker-failed"
	// ReasonProviderFailed: no sentinel and the runtime exited non-zero.
	ReasonProviderFailed FailureReason = "provider-failed"
	// ReasonTimeout: the dispatch ran past its timeout.
	ReasonTimeout FailureReason = "timeout"
	// ReasonIntegrityFailed: a bundle's hash did not match, or it holds an unsafe path.
	ReasonIntegrityFailed FailureReason = "integrity-failed"
	// ReasonFetchFailed: a bundle, spec object or secret ref could not be fetched or resolved.
	ReasonFetchFailed FailureReason = "fetch-failed"
	// ReasonWorkerLost: the container ended without a terminal event from the
	// worker (OOM kill, crash, missing image); published by the runner.
	ReasonWorkerLost FailureReason = "worker-lost"
)

// FailureReasons lists every reason.
var FailureReasons = []FailureReason{ReasonWorkerFailed, ReasonProviderFailed, ReasonTimeout, ReasonIntegrityFailed, ReasonFetchFailed, ReasonWorkerLost}
