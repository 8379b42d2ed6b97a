package progress

import (
	"strings"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
	"github.com/agoradev/agora/cmd/agora/internal/view"
)

// TestBatchBar: on a terminal the progress is one bar redrawn in place,
// colored only when color is on, and cleared at the end.
func TestBatchBar(t *testing.T) {
	t.Parallel()
	rep := &batchreport.Report{Results: []client.BatchLine{{Result: client.BatchSubmitted}, {Result: client.BatchFailed}, {}, {}}}
	for _, color := range []bool{false, true} {
		var buf strings.Builder
		b := &Bar{w: &buf, ui: view.UI{TTY: true, Color: color}, batch: "b", total: 4}
		b.Draw(rep)
		out := buf.String()
		if !strings.HasPrefix(out, "\r\x1b[K") || !strings.Contains(out, strings.Repeat("█", 15)+"") || !strings.Contains(out, "2/4 1 submitted · ") ||
			strings.Contains(out, "\n") || strings.Contains(out, "\x1b[3") != color {
			t.Errorf("bar (color %v) = %q", color, out)
		}
		b.Done(rep)
		if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
			t.Errorf("bar not cleared at the end: %q", buf.String())
		}
	}
	// NO_COLOR: view.New on a non-terminal never colors; on a terminal NO_COLOR
	// turns color off (view.New), which the bar follows through its UI.
}
