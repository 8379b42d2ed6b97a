package schemas

import (
	"bytes"
	"io"
)

// OutputMark begins every line of a round's stored (and streamed) output
// that agora wrote: an event line or a worker log line whose MAC the
// runner verified (SignEventLine, SignLogLine), or a note of the runner's.
// No line of the sub-agent's begins with it: the runner replaces the mark
// at the start of any line it did not verify with "␞" (U+241E). So a
// reader tells agora's lines from the sub-agent's by the first byte alone,
// and a sub-agent that prints a line looking like an event is still shown
// as the sub-agent's.
const OutputMark = '\x1e'

// OutputFilter passes a round's output on as it comes: the sub-agent's
// lines only, or with All every line, agora's without their mark.
type OutputFilter struct {
	W   io.Writer
	All bool
	// mid: within a line; drop: within a line not passed on.
	mid, drop bool
}

func (f *OutputFilter) Write(p []byte) (int, error) {
	total := len(p)
	var out []byte
	for len(p) > 0 {
		if !f.mid {
			f.mid = true
			f.drop = p[0] == OutputMark && !f.All
			if p[0] == OutputMark {
				p = p[1:]
				continue
			}
		}
		n := bytes.IndexByte(p, '\n') + 1
		if n == 0 {
			n = len(p)
		} else {
			f.mid = false
		}
		if !f.drop {
			out = append(out, p[:n]...)
		}
		p = p[n:]
	}
	if len(out) > 0 {
		if _, err := f.W.Write(out); err != nil {
			return 0, err
		}
	}
	return total, nil
}
