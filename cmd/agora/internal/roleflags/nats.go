package roleflags

import (
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/internal/bus"
)

// natsAuthFlags are the credential options of a role that connects to a
// NATS server given with --nats: the usual NATS client ones.
type natsAuthFlags struct {
	fs                          *flag.FlagSet
	creds, nkey, user, password string
	tlsCA, tlsCert, tlsKey      string
	// allowAnonymous is --nats-allow-anonymous: run with credentials on a
	// server that also lets anonymous clients in.
	allowAnonymous bool
	// replicas is --nats-replicas: not a credential, but every role
	// that takes --nats takes it too.
	replicas int
}

func (n *natsAuthFlags) register(fs *flag.FlagSet) {
	n.fs = fs
	fs.StringVar(&n.creds, "nats-creds", "", "connect to --nats as the user in the credentials `FILE` (a user JWT and seed, e.g. <data-dir>/nats-auth/runner.creds of an agora serve)")
	fs.StringVar(&n.nkey, "nats-nkey", "", "connect to --nats as the nkey user whose seed is in `FILE`")
	fs.StringVar(&n.user, "nats-user", "", "connect to --nats as `USER`, with the password in $AGORA_NATS_PASSWORD (or --nats-password)")
	fs.StringVar(&n.password, "nats-password", "", "the `PASSWORD` of --nats-user (visible to other local users in the process list: prefer $AGORA_NATS_PASSWORD)")
	fs.StringVar(&n.tlsCA, "nats-tls-ca", "", "check the NATS server's certificate against the CAs in `FILE` (PEM), and use TLS")
	fs.StringVar(&n.tlsCert, "nats-tls-cert", "", "present the client certificate in `FILE` (PEM) to NATS; with --nats-tls-key")
	fs.StringVar(&n.tlsKey, "nats-tls-key", "", "the key `FILE` (PEM) of --nats-tls-cert")
	fs.BoolVar(&n.allowAnonymous, "nats-allow-anonymous", false, "start even though the --nats server lets clients in without credentials (its authorization is off); without it a role given credentials refuses such a server, and one without warns")
	fs.IntVar(&n.replicas, "nats-replicas", bus.DefaultReplicas, "create agora's streams and buckets with `N` replicas (3 on a three-node NATS cluster); existing ones keep theirs")
}

// given reports whether a credential or TLS flag is on the command line.
func (n *natsAuthFlags) given() bool {
	for _, name := range []string{"nats-creds", "nats-nkey", "nats-user", "nats-password", "nats-tls-ca", "nats-tls-cert", "nats-tls-key"} {
		if n.fs.Changed(name) {
			return true
		}
	}
	return false
}

// auth checks the flags and turns them into bus.Auth. The password comes
// from $AGORA_NATS_PASSWORD when --nats-user is given without
// --nats-password (it is no plain default: without a user it means
// nothing, and a password without a user is a mistake).
func (n *natsAuthFlags) auth(environ []string) (bus.Auth, error) {
	a := bus.Auth{CredsFile: n.creds, NKeySeedFile: n.nkey, User: n.user, Password: n.password,
		TLSCA: n.tlsCA, TLSCert: n.tlsCert, TLSKey: n.tlsKey}
	if a.User != "" && a.Password == "" {
		a.Password = getenv(environ, "AGORA_NATS_PASSWORD")
	}
	if err := a.Validate(); err != nil {
		return a, err
	}
	if n.replicas < 1 || n.replicas > bus.MaxReplicas {
		return a, fmt.Errorf("--nats-replicas %d: want 1-%d", n.replicas, bus.MaxReplicas)
	}
	return a, nil
}
