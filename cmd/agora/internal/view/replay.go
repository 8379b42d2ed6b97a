package view

import (
	"fmt"
	"io"

	"github.com/agoradev/agora/wire"
)

// Replay prints what a replay found: its verdict and every divergence.
func Replay(w io.Writer, t *wire.Task) {
	rp := t.Replay
	if rp == nil {
		fmt.Fprintf(w, "%s is not a replay\n", t.ID)
		return
	}
	fmt.Fprintf(w, "%s replay of %s: %s (%s); %d question%s answered from the recording\n", t.ID, rp.Of, OrDash(rp.Verdict), StateLabel(t.State),
		rp.Matched, PluralS(rp.Matched))
	for _, d := range rp.Divergences {
		note := ""
		if !d.Fails(rp.Strict) {
			note = " (reported; --strict makes it fail)"
		}
		fmt.Fprintf(w, "  round %d  %s: %s%s\n", d.Round, d.Kind, d.Detail, note)
	}
}

// ClipList is s, cut to n items and a count of the rest.
func ClipList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
}
