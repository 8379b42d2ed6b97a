package main

// agora events: the lifecycle events the orchestrator could not apply
// (parked after their last delivery), and retrying or discarding them.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

const eventsSynopsis = "parked | retry SEQ | discard SEQ [--json] [--server URL] [--token TOKEN]"

func eventsVerb(fs *flag.FlagSet) runFunc {
	a := newAPIFlags(fs)
	return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) error {
		var err error
		if len(pos) == 0 {
			return usagef("want parked, retry SEQ or discard SEQ, e.g. agora events parked")
		}
		var seq uint64
		switch pos[0] {
		case "parked":
			if len(pos) != 1 {
				return usagef("unexpected argument %q; agora events parked takes none", pos[1])
			}
		case "retry", "discard":
			if len(pos) != 2 {
				return usagef("want agora events %s SEQ, with SEQ from 'agora events parked'", pos[0])
			}
			seq, err = strconv.ParseUint(pos[1], 10, 64)
			if err != nil || seq == 0 {
				return usagef("SEQ %q: want a parked event's sequence, a positive whole number ('agora events parked' lists them)", pos[1])
			}
		default:
			return usagef("unknown events command %q; want parked, retry SEQ or discard SEQ", pos[0])
		}
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		switch pos[0] {
		case "retry":
			if err := c.RetryParked(ctx, seq); err != nil {
				return a.explain(err, "")
			}
			fmt.Fprintf(stdout, "parked event %d applied\n", seq)
			return nil
		case "discard":
			if err := c.DiscardParked(ctx, seq); err != nil {
				return a.explain(err, "")
			}
			fmt.Fprintf(stdout, "parked event %d discarded\n", seq)
			return nil
		}
		return listParked(ctx, c, a, environ, stdout)
	}
}

func listParked(ctx context.Context, c *client.Client, a *apiFlags, environ []string, stdout io.Writer) error {
	parked, stats, err := c.ParkedEvents(ctx)
	if err != nil {
		return a.explain(err, "")
	}
	if parked == nil {
		parked = []wire.ParkedEvent{}
	}
	if a.json {
		return writeJSON(stdout, wire.ParkedEventList{ParkedEvents: parked, Stats: stats})
	}
	u := newUI(stdout, environ)
	fmt.Fprintf(stdout, "events applied %d · retried %d · parked %d · dropped: %d for unknown tasks, %d invalid, %d of unknown kinds\n",
		stats.Applied, stats.Retried, stats.Parked, stats.Dropped["unknown_task"], stats.Dropped["invalid"], stats.Dropped["unknown_kind"])
	if len(parked) == 0 {
		fmt.Fprintln(stdout, "no parked events")
		return nil
	}
	rows := make([][]cell, 0, len(parked))
	for _, p := range parked {
		rows = append(rows, []cell{{strconv.FormatUint(p.Sequence, 10), ""}, {string(p.Kind), ""}, {p.DispatchID, ""},
			{humanDuration(time.Since(p.ParkedAt)), ""}, {clipText(p.Error, 100), sgrYellow}})
	}
	u.writeTable(stdout, []string{"SEQ", "KIND", "DISPATCH", "PARKED", "ERROR"}, rows)
	fmt.Fprintln(stdout, "\nretry one with 'agora events retry SEQ', or drop it with 'agora events discard SEQ'")
	return nil
}
