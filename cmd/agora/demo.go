package main

import (
	"context"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/demo"
	"github.com/agoradev/agora/cmd/agora/internal/roleflags"
)

// demoVerb shows the whole loop on the embedded stack: a sub-agent pauses
// with a question, it is answered, the same sub-agent resumes and finishes.
func demoVerb(stdin io.Reader) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		config := roleConfig(roleflags.Demo, fs)
		var answerFlag string
		var keep, webOnly bool
		fs.StringVar(&answerFlag, "answer", "", "answer with `ANSWER` (an option or its number) instead of asking on the terminal")
		fs.BoolVar(&keep, "keep", false, "keep the temporary data directory")
		fs.BoolVar(&webOnly, "web", false, "wait for the answer on the web inbox (its address is printed), even without a terminal")
		return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
			cfg, err := config(args, environ)
			if err != nil {
				return err
			}
			if webOnly && answerFlag != "" {
				return usagef("--answer and --web both say how to answer; give one")
			}
			return demo.Run(ctx, cfg, demo.Options{Answer: answerFlag, Keep: keep, Web: webOnly, CI: getenv(environ, "CI") == "true",
				Debug: getenv(environ, "AGORA_LOG_LEVEL") == "debug"}, stdin, stdout, stderr)
		}
	}
}
