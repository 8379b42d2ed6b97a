package main

import (
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roleflags"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/cmd/agora/internal/verbflags"
)

// parseRole reads the command line of the role verb v into the roles'
// configuration as the verb does, with the flags roleConfig declares.
func parseRole(v roleflags.Verb, args, environ []string) (roles.Config, error) {
	fs := flag.NewFlagSet(v.String(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := roleConfig(v, fs)
	if err := fs.Parse(verbflags.Normalize(fs, args)); err != nil {
		return roles.Config{}, usagef("%s", verbflags.ErrorText(err))
	}
	return config(fs.Args(), environ)
}

func parseServeFlags(args, environ []string, _ io.Writer) (roles.Config, error) {
	return parseRole(roleflags.Serve, args, environ)
}

func parseRunnerFlags(args, environ []string, _ io.Writer) (roles.Config, error) {
	return parseRole(roleflags.Runner, args, environ)
}

func parseOrchestratorFlags(args, environ []string, _ io.Writer) (roles.Config, error) {
	return parseRole(roleflags.Orchestrator, args, environ)
}
