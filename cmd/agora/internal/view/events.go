package view

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agoradev/agora/wire"
)

// Parked writes the event counters, then the lifecycle events the
// orchestrator parked, one per row, and how to retry or discard one.
func (u UI) Parked(w io.Writer, parked []wire.ParkedEvent, stats wire.PipelineStats) {
	fmt.Fprintf(w, "events applied %d · retried %d · parked %d · dropped: %d for unknown tasks, %d invalid, %d of unknown kinds\n",
		stats.Applied, stats.Retried, stats.Parked, stats.Dropped["unknown_task"], stats.Dropped["invalid"], stats.Dropped["unknown_kind"])
	if len(parked) == 0 {
		fmt.Fprintln(w, "no parked events")
		return
	}
	rows := make([][]Cell, 0, len(parked))
	for _, p := range parked {
		rows = append(rows, []Cell{{strconv.FormatUint(p.Sequence, 10), ""}, {string(p.Kind), ""}, {p.DispatchID, ""},
			{HumanDuration(time.Since(p.ParkedAt)), ""}, {Clip(p.Error, 100), Yellow}})
	}
	u.Table(w, []string{"SEQ", "KIND", "DISPATCH", "PARKED", "ERROR"}, rows)
	fmt.Fprintln(w, "\nretry one with 'agora events retry SEQ', or drop it with 'agora events discard SEQ'")
}
