package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

const imageBuildSynopsis = "[--worker PATH] [--base IMAGE] [--tag TAG] [--no-busybox] [--json]"

// imageUsage is agora image -h: build is its only subcommand.
const imageUsage = "usage: agora image build " + imageBuildSynopsis + "\n"

// imageResult is what `agora image build --json` prints.
type imageResult struct {
	// Image is the image name (repository:tag) to run dispatches in.
	Image string `json:"image"`
	// ID is the image id.
	ID string `json:"id"`
	// Status is "built" or "up-to-date" (an image with this name and the
	// same inputs existed, so nothing was built).
	Status string `json:"status"`
	// Busybox reports that the image has the host's busybox as /bin/sh.
	Busybox bool `json:"busybox"`
	// InputsHash is the content hash of everything the image is made of.
	InputsHash string `json:"inputs_hash"`
}

func imageBuildVerb(fs *flag.FlagSet) runFunc {
	worker := fs.String("worker", "", "build from the static agora-worker at `PATH` (default: agora-worker next to the agora executable, where 'make build' puts it)")
	base := fs.String("base", "", "add the worker to the local `IMAGE` instead of scratch, e.g. one with Claude Code; nothing is pulled")
	tag := fs.String("tag", "", "name the image `TAG` (default: agora-worker:<first 12 hex digits of the inputs hash>)")
	noBusybox := fs.Bool("no-busybox", false, "leave the host's static busybox (/bin/sh and friends) out of a scratch image")
	asJSON := fs.Bool("json", false, "print the result as one JSON object instead of a line of text")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q; run 'agora image build -h' for the flags", args[0])
		}
		res, err := roles.BuildImage(ctx, getenv(environ, "DOCKER_HOST"), roles.ImageBuild{
			Worker: *worker, Base: *base, Tag: *tag, NoBusybox: *noBusybox, Logger: newLogger(stderr)})
		if err != nil {
			return err
		}
		out := imageResult{Image: res.Image, ID: res.ID, Status: "built", Busybox: res.Busybox, InputsHash: res.InputsHash}
		if res.Skipped {
			out.Status = "up-to-date"
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(out)
		}
		if res.Skipped {
			fmt.Fprintf(stdout, "%s is up to date (%s)\n", out.Image, out.ID)
		} else {
			fmt.Fprintf(stdout, "%s built (%s)\n", out.Image, out.ID)
		}
		return nil
	}
}
