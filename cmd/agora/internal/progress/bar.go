package progress

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
	"github.com/agoradev/agora/cmd/agora/internal/view"
)

// Bar shows batch submit's progress on stderr: a bar redrawn in place
// on a terminal (colored unless NO_COLOR or TERM=dumb), otherwise a line
// of counts at most every two seconds and at the end.
type Bar struct {
	w     io.Writer
	ui    view.UI
	batch string
	total int
	last  time.Time
	drawn bool
}

// NewBar is the bar of batch submit for total lines of batch.
func NewBar(w io.Writer, u view.UI, batch string, total int) *Bar {
	return &Bar{w: w, ui: u, batch: batch, total: total, last: time.Now()}
}

func (b *Bar) counts(r *batchreport.Report) (done int, text string) {
	sub, ex, failed := batchreport.Counts(r.Results)
	parts := []string{fmt.Sprintf("%d submitted", sub)}
	if ex > 0 {
		parts = append(parts, fmt.Sprintf("%d already there", ex))
	}
	if failed > 0 {
		parts = append(parts, b.ui.Paint(view.Red, fmt.Sprintf("%d failed", failed)))
	}
	return sub + ex + failed, strings.Join(parts, " · ")
}

// Draw shows how far r is.
func (b *Bar) Draw(r *batchreport.Report) {
	done, text := b.counts(r)
	now := time.Now()
	if !b.ui.TTY {
		if now.Sub(b.last) < 2*time.Second || done == 0 {
			return
		}
		b.last = now
		fmt.Fprintf(b.w, "batch %s: %d/%d lines: %s\n", b.batch, done, b.total, text)
		return
	}
	if done < b.total && now.Sub(b.last) < 50*time.Millisecond {
		return
	}
	b.last = now
	const width = 30
	fill := done * width / max(b.total, 1)
	bar := b.ui.Paint(view.Green, strings.Repeat("█", fill)) + b.ui.Paint(view.Dim, strings.Repeat("░", width-fill))
	fmt.Fprintf(b.w, "\r\x1b[K%s %d/%d %s", bar, done, b.total, text)
	b.drawn = true
}

// Done ends the bar: cleared on a terminal, else the final counts.
func (b *Bar) Done(r *batchreport.Report) {
	if b.ui.TTY {
		if b.drawn {
			fmt.Fprint(b.w, "\r\x1b[K")
		}
		return
	}
	done, text := b.counts(r)
	fmt.Fprintf(b.w, "batch %s: %d/%d lines: %s\n", b.batch, done, b.total, text)
}

// Counter redraws "cancel: 500/1963" in place on a terminal, at
// most every 100 ms, and clears it at the end; nil elsewhere (the summary
// follows).
func Counter(w io.Writer, verb string, total int) func(client.BulkItem) {
	if !view.IsTTY(w) {
		return nil
	}
	done, last := 0, time.Time{}
	return func(client.BulkItem) {
		done++
		switch {
		case done == total:
			fmt.Fprint(w, "\r\x1b[K")
		case time.Since(last) >= 100*time.Millisecond:
			last = time.Now()
			fmt.Fprintf(w, "\r\x1b[K%s: %d/%d", verb, done, total)
		}
	}
}
