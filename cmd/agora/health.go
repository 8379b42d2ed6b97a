package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	flag "github.com/spf13/pflag"

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
				if a.server, err = loopbackURL(listen); err != nil {
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
		if a.json {
			return writeJSON(stdout, wire.Health{Status: "ok"})
		}
		fmt.Fprintln(stdout, "ok")
		return nil
	}
}

// loopbackURL is the URL this machine reaches a listener on ADDR at: an
// unspecified host (0.0.0.0, ::, none) is asked on loopback.
func loopbackURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	switch ip := net.ParseIP(host); {
	case host == "" || (ip != nil && ip.IsUnspecified() && ip.To4() != nil):
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
