package orchestrator

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/agoradev/agora/wire"
)

// Cursor kinds: a cursor of one list is refused by another.
const (
	cursorTasks     = 't' // List: created_at and id of the last task, newest first
	cursorQuestions = 'q' // Questions: asked_at and task id of the last question, oldest first
)

// sortKey orders tasks by creation (and questions by when they were
// asked), the id breaking ties: a cursor holds the key of the last item
// of its page, so a page starts where the last one ended whatever was
// inserted or removed meanwhile.
type sortKey struct {
	at int64 // Unix nanoseconds
	id string
}

func keyOf(at time.Time, id string) sortKey { return sortKey{at.UnixNano(), id} }

func (k sortKey) compare(o sortKey) int {
	switch {
	case k.at < o.at:
		return -1
	case k.at > o.at:
		return 1
	case k.id < o.id:
		return -1
	case k.id > o.id:
		return 1
	}
	return 0
}

// encodeCursor makes the opaque cursor of a page ending at k.
func encodeCursor(kind byte, k sortKey) string {
	b := make([]byte, 0, 9+len(k.id))
	b = append(b, kind)
	b = binary.BigEndian.AppendUint64(b, uint64(k.at))
	b = append(b, k.id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of kind; ok is false for no cursor.
func decodeCursor(kind byte, s string) (k sortKey, ok bool, err error) {
	if s == "" {
		return sortKey{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 10 || b[0] != kind {
		return sortKey{}, false, &wire.PageError{Param: "cursor", Reason: fmt.Sprintf("%q is not a cursor of this list; pass the next_cursor of its previous page", clip(s, 40))}
	}
	return sortKey{int64(binary.BigEndian.Uint64(b[1:9])), string(b[9:])}, true, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ListView is t as lists show it: without the request's input, the
// rounds' partial_state and the rounds' results and artifacts (the task's
// own, its last round's, stay), which can be large (GET one task for
// them). The
// JSON field names are the task's; the fields left out are simply absent.
// It changes t in place; the rounds are copied first, so a cached task's
// rounds are not touched.
func ListView(t *wire.Task) *wire.Task {
	t.Request.Input = nil
	stripped := false
	for i := range t.Rounds {
		q := t.Rounds[i].Question
		heavyQ := q != nil && len(q.PartialState) > 0
		heavyR := len(t.Rounds[i].Result) > 0 || t.Rounds[i].ResultRef != nil || len(t.Rounds[i].Artifacts) > 0
		if (heavyQ || heavyR) && !stripped {
			t.Rounds = append([]wire.Round(nil), t.Rounds...)
			stripped = true
		}
		if heavyQ {
			cp := *q
			cp.PartialState = nil
			t.Rounds[i].Question = &cp
		}
		if heavyR {
			t.Rounds[i].Result, t.Rounds[i].ResultRef, t.Rounds[i].Artifacts = nil, nil, nil
		}
	}
	return t
}
