package web

import (
	"bytes"
	"io"
	"strings"
)

// AgoraMark begins every line of a round's output that agora itself
// wrote — an event line whose MAC the runner verified, a worker log line
// it verified the same way, a note of the runner's — and never a line of
// the sub-agent's: the runner rewrites a sub-agent line that begins with
// it (runner/output.go). So a sub-agent that prints something looking
// like an event is still shown as the sub-agent's output.
const AgoraMark = '\x1e'

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
		agora := line[0] == AgoraMark
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

// lineFilter passes a round's output on as it comes, the sub-agent's
// lines only unless all; agora's lines (all) lose their mark.
type lineFilter struct {
	w   io.Writer
	all bool
	// mid: within a line; drop: within a line that is not passed on.
	mid, drop bool
}

func (f *lineFilter) Write(p []byte) (int, error) {
	total := len(p)
	var out []byte
	for len(p) > 0 {
		if !f.mid {
			f.mid = true
			f.drop = p[0] == AgoraMark && !f.all
			if p[0] == AgoraMark {
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
	if len(out) == 0 {
		return total, nil
	}
	if _, err := f.w.Write(out); err != nil {
		return 0, err
	}
	return total, nil
}
