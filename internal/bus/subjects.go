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

// EventSubject is the subject of dispatchID's lifecycle events.
func EventSubject(dispatchID string) string { return EventSubjectPrefix + dispatchID }

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
