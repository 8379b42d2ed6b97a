package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/worker/sentinel"
)

// runAsk implements `agora-worker ask`: it writes a valid sentinel
// atomically, so a shell step can pause its dispatch with one line.
func runAsk(args, environ []string, stdin io.Reader, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agora-worker ask: "+format+"\n", a...)
		return 2
	}
	var (
		q         schemas.NeedsInput
		question  []string
		stateArg  string
		workspace string
	)
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		takesValue := map[string]bool{"--option": true, "-o": true, "--context": true, "--default": true, "--state": true, "--workspace": true}
		if !takesValue[name] {
			if strings.HasPrefix(arg, "-") && arg != "-" {
				return fail("unknown flag %s (see agora-worker help)", arg)
			}
			question = append(question, arg)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return fail("%s needs a value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "--option", "-o":
			q.Options = append(q.Options, value)
		case "--context":
			q.Context = value
		case "--default":
			d := value
			q.Default = &d
		case "--state":
			stateArg = value
		case "--workspace":
			workspace = value
		}
	}
	if len(question) != 1 {
		return fail("want exactly one QUESTION argument (quote it), got %d", len(question))
	}
	q.Question = question[0]
	if stateArg != "" {
		var data []byte
		var err error
		if stateArg == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, schemas.SentinelMaxBytes+1))
		} else {
			data, err = os.ReadFile(stateArg)
		}
		if err != nil {
			return fail("read --state: %v", err)
		}
		if !json.Valid(data) {
			return fail("--state %s does not hold JSON", stateArg)
		}
		q.PartialState = data
	}
	path := sentinelPath(environ, workspace)
	if err := sentinel.Write(path, &q); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stderr, "agora-worker ask: question written to %s; exit now and the dispatch pauses until it is answered\n", path)
	return 0
}

// sentinelPath: --workspace, else $AGORA_NEEDS_INPUT_FILE, else
// $AGORA_WORKSPACE, else the current directory.
func sentinelPath(environ []string, workspace string) string {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	switch {
	case workspace != "":
		return sentinel.Path(workspace)
	case env[schemas.EnvNeedsInputFile] != "":
		return env[schemas.EnvNeedsInputFile]
	case env[schemas.EnvWorkspace] != "":
		return sentinel.Path(env[schemas.EnvWorkspace])
	}
	return filepath.FromSlash(schemas.SentinelPath)
}
