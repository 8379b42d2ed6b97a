package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/internal/apitoken"
)

const tokenSynopsis = "agora token create NAME [--role admin|answerer|submitter] [--json]"

// tokenCreateVerb makes a strong token: the secret, shown once, and the
// line for a tokens file, which holds only its hash.
func tokenCreateVerb(fs *flag.FlagSet) runFunc {
	var roles []string
	fs.StringSliceVar(&roles, "role", nil, "give the token `ROLE` (admin, answerer or submitter; repeatable); none: a submitter, which sees its own tasks")
	asJSON := fs.Bool("json", false, "print JSON: name, secret, tokens_file_line")
	return func(_ context.Context, pos, _ []string, stdout, _ io.Writer) error {
		if len(pos) != 1 {
			return usagef("want one NAME (the identity its actions are recorded as): usage: %s", tokenSynopsis)
		}
		name := pos[0]
		var raw [32]byte
		_, _ = rand.Read(raw[:]) // never fails
		secret := "agora_" + base64.RawURLEncoding.EncodeToString(raw[:])
		// The line must read back as the token it stands for: a name with ':'
		// is refused, as would be one that reads back as another.
		line, err := apitoken.HashedLine(name, secret, roles)
		if err != nil {
			return usagef("%v", err)
		}
		if *asJSON {
			return writeJSON(stdout, map[string]string{"name": name, "secret": secret, "tokens_file_line": line})
		}
		fmt.Fprintf(stdout, "secret:           %s\n", secret)
		fmt.Fprintf(stdout, "tokens-file line: %s\n", line)
		fmt.Fprintf(stdout, "\nGive the secret to %s (it is shown only now); add the line to the server's --tokens-file.\n", name)
		return nil
	}
}
