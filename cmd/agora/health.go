package main

import (
	"context"
	"fmt"
	"io"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/explain"
	"github.com/agoradev/agora/wire"
)

// healthVerb asks the agora server whether it is up (GET /healthz, no
// token needed): exit 0 and "ok" when it is, 1 with the reason when it is
// not. The server is --server, else $AGORA_SERVER, else the config file's
// context, else the listener $AGORA_LISTEN names (what 'agora serve'
// binds; 0.0.0.0 and :: are asked on loopback), else the default. The
// serve image's HEALTHCHECK runs it.
func healthVerb(fs *flag.FlagSet) runFunc {
	a := newAPIFlags(fs)
	timeout := fs.Duration("timeout", 5*time.Second, "give up after `D`")
	return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) error {
		var err error
		if len(pos) > 0 {
			return usagef("unexpected argument %q; agora health takes flags only", pos[0])
		}
		if *timeout <= 0 {
			return usagef("--timeout %s: want a positive duration, e.g. 5s", *timeout)
		}
		if a.server == "" && getenv(environ, "AGORA_SERVER") == "" {
			if listen := getenv(environ, "AGORA_LISTEN"); listen != "" {
				if a.server, err = explain.LoopbackURL(listen); err != nil {
					return usagef("AGORA_LISTEN %q: %v; want HOST:PORT, e.g. 0.0.0.0:7070", listen, err)
				}
			}
		}
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		if err := c.Health(ctx); err != nil {
			return a.explain(err, "")
		}
		return a.show(stdout, wire.Health{Status: "ok"}, func() { fmt.Fprintln(stdout, "ok") })
	}
}
