package main

// agora nats-auth init DIR: the NATS identities an external NATS server or
// cluster needs for agora (roles.InitNATSAuth), as `agora serve` makes them
// for its embedded server: an operator, the AGORA account with its
// JetStream limits, a user per role, the workers' scoped signing key, and
// the nats-server configuration include that trusts them.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

const natsAuthInitSynopsis = "DIR [--runner ID]... [--max-disk SIZE] [--max-memory SIZE]"

// natsAuthUsage is agora nats-auth -h: init is its only subcommand.
const natsAuthUsage = "usage: agora nats-auth init " + natsAuthInitSynopsis + "\n"

func natsAuthInitVerb(fs *flag.FlagSet) runFunc {
	var runners []string
	fs.StringArrayVar(&runners, "runner", nil, "make runner-`ID`.creds for the runner started with --id ID (repeatable; run again to add runners: every key is kept)")
	maxDisk := fs.String("max-disk", "", "cap the AGORA account's JetStream file storage at `SIZE` (e.g. 20G; default: no account cap, the servers' max_file_store bounds it)")
	maxMem := fs.String("max-memory", "", "cap the AGORA account's JetStream memory storage at `SIZE` (e.g. 1G; default: no account cap, the servers' max_memory_store bounds it)")
	return func(_ context.Context, pos, _ []string, stdout, _ io.Writer) error {
		if len(pos) != 1 {
			return usagef("want one DIR, where the keys and credentials go (e.g. /etc/agora/nats-auth); got %d arguments", len(pos))
		}
		disk, err := parseSize("--max-disk", *maxDisk)
		if err != nil {
			return err
		}
		mem, err := parseSize("--max-memory", *maxMem)
		if err != nil {
			return err
		}
		for _, r := range runners {
			if err := roles.ValidateRunnerID(r); err != nil {
				return usagef("--runner: %v", err)
			}
		}
		dir, err := filepath.Abs(pos[0])
		if err != nil {
			return err
		}
		made, err := roles.InitNATSAuth(dir, runners, disk, mem)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "agora nats-auth: identities in %s (0700; every file 0600), account AGORA %s\n", dir, made.Account)
		for _, f := range made.Files {
			fmt.Fprintf(stdout, "  %s\n", filepath.Join(dir, f))
		}
		fmt.Fprintf(stdout, "next: copy %s to every NATS node and include it (docs/scaling.md); give the orchestrators %s and each runner its runner-ID.creds (--nats-creds)\n",
			made.ServerConfig, made.OrchestratorCreds)
		return nil
	}
}

// parseSize reads a byte count with an optional K, M, G or T suffix
// (powers of 1024); "" is 0.
func parseSize(flagName, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	num := strings.TrimSuffix(strings.ToUpper(s), "B")
	if n := len(num); n > 0 {
		if i := strings.IndexByte("KMGT", num[n-1]); i >= 0 {
			mult, num = int64(1)<<(10*(i+1)), num[:n-1]
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return 0, usagef("%s %q: want a positive size in bytes, or with K, M, G or T (e.g. 20G)", flagName, s)
	}
	return v * mult, nil
}
