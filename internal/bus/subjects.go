package bus

import (
	"fmt"
	"strings"
)

// Streams.
const (
	// EventStream holds every lifecycle event, subjects EventSubjects.
	EventStream = "AGORA_EVENTS"
	// QueueStream is the dispatch-request work queue (reserved; not created here yet).
	QueueStream = "AGORA_QUEUE"
)

// Subject prefixes and wildcards.
const (
	// EventSubjects is the subject filter of EventStream.
	EventSubjects = "agora.events.>"
	// EventSubjectPrefix precedes the dispatch id in an event subject.
	EventSubjectPrefix = "agora.events."
	// LogSubjectPrefix precedes the dispatch id in a log subject (reserved).
	LogSubjectPrefix = "agora.logs."
	// ControlSubjectPrefix precedes the dispatch id in a control subject (reserved).
	ControlSubjectPrefix = "agora.control."
)

// WorkerInboxPrefix is the inbox prefix of a worker's connection
// (Options.InboxPrefix): its NATS user may subscribe only below it, to
// receive JetStream's acknowledgements and nothing else.
func WorkerInboxPrefix(dispatchID string) string { return "_AGORA_INBOX." + dispatchID }

// EventSubject is the subject of dispatchID's lifecycle events as the
// orchestrator and the dispatch's own worker publish them.
func EventSubject(dispatchID string) string { return EventSubjectPrefix + dispatchID }

// RunnerEventSubject is the subject of dispatchID's events as runnerID
// relays (or recovers, or settles) them: agora.events.<dispatch_id>.<runner_id>,
// in the same stream. A runner's NATS user may publish only on its own
// (natsauth.RunnerPermissions), so the subject says which runner sent an
// event and the orchestrator applies it only when that runner holds the
// dispatch's claim.
func RunnerEventSubject(dispatchID, runnerID string) string {
	return EventSubjectPrefix + dispatchID + "." + runnerID
}

// ParseEventSubject splits an event subject into its dispatch id and, for
// a runner's subject, the runner id ("" for EventSubject). ok is false for
// a subject of neither form.
func ParseEventSubject(subject string) (dispatchID, runnerID string, ok bool) {
	rest, found := strings.CutPrefix(subject, EventSubjectPrefix)
	if !found {
		return "", "", false
	}
	dispatchID, runnerID, _ = strings.Cut(rest, ".")
	if ValidateDispatchID(dispatchID) != nil {
		return "", "", false
	}
	if runnerID != "" && ValidateRunnerID(runnerID) != nil {
		return "", "", false
	}
	return dispatchID, runnerID, true
}

// RunnerInboxPrefix is the inbox prefix of a runner's connection
// (Options.InboxPrefix): its NATS user may subscribe only below it, so it
// cannot read the replies the orchestrator receives on _INBOX.
func RunnerInboxPrefix(runnerID string) string { return "_AGORA_RUNNER." + runnerID }

// ValidateRunnerID reports whether id can end a subject: one or more
// non-empty tokens (a host name's dots are fine) without '*', '>' or white
// space.
func ValidateRunnerID(id string) error {
	if id == "" {
		return fmt.Errorf("runner id is empty")
	}
	if strings.ContainsAny(id, "*> \t\r\n") {
		return fmt.Errorf("runner id %q must not contain '*', '>' or white space", id)
	}
	for _, tok := range strings.Split(id, ".") {
		if tok == "" {
			return fmt.Errorf("runner id %q must not start or end with '.' or hold '..'", id)
		}
	}
	return nil
}

// LogSubject is the subject of dispatchID's log lines.
func LogSubject(dispatchID string) string { return LogSubjectPrefix + dispatchID }

// ControlSubject is the subject of commands to dispatchID's runner (cancel, …).
func ControlSubject(dispatchID string) string { return ControlSubjectPrefix + dispatchID }

// ValidateDispatchID reports whether id can be one subject token.
func ValidateDispatchID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("dispatch id is empty")
	case strings.ContainsAny(id, ".*> \t\r\n"):
		return fmt.Errorf("dispatch id %q must not contain '.', '*', '>' or white space", id)
	}
	return nil
}
