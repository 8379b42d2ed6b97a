package web

import (
	"bytes"
	"strings"

	"github.com/agoradev/agora/schemas"
)

// A round's output marks agora's own lines (events, the worker's log)
// with schemas.OutputMark; the pages show the sub-agent's lines and keep
// agora's behind a toggle.

// outputLine is one line of a round's output as a page shows it.
type outputLine struct {
	// Text is the line with its newline, without the mark.
	Text string
	// Agora: a line agora wrote, shown only when asked for.
	Agora bool
}

// outputView is a round's output split into the sub-agent's lines and
// agora's: all of them with all, else the sub-agent's alone and a count
// of the others.
type outputView struct {
	Lines  []outputLine
	Hidden int
}

// splitOutput classifies out line by line.
func splitOutput(out []byte, all bool) outputView {
	var v outputView
	for len(out) > 0 {
		line := out
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			line = out[:i+1]
		}
		out = out[len(line):]
		agora := line[0] == schemas.OutputMark
		switch {
		case agora && !all:
			v.Hidden++
		case agora:
			v.Lines = append(v.Lines, outputLine{Text: string(line[1:]), Agora: true})
		case len(v.Lines) > 0 && !v.Lines[len(v.Lines)-1].Agora:
			v.Lines[len(v.Lines)-1].Text += string(line) // one text node per run of the sub-agent's lines
		default:
			v.Lines = append(v.Lines, outputLine{Text: string(line)})
		}
	}
	return v
}

// Empty: nothing to show.
func (v outputView) Empty() bool { return len(v.Lines) == 0 && v.Hidden == 0 }

// Text is what is shown, as plain text.
func (v outputView) Text() string {
	var b strings.Builder
	for _, l := range v.Lines {
		b.WriteString(l.Text)
	}
	return b.String()
}
