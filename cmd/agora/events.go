package main

// agora events: the lifecycle events the orchestrator could not apply
// (parked after their last delivery), and retrying or discarding them.

import (
	"context"
	"fmt"
	"io"
	"strconv"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/view"
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
	return a.show(stdout, wire.ParkedEventList{ParkedEvents: parked, Stats: stats}, func() { view.New(stdout, environ).Parked(stdout, parked, stats) })
}
