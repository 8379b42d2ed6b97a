package main

// agora secret set|list|rm: this machine's local secret store
// (roles.SecretStore), where the local:NAME refs of env bundles find their
// values when dispatches run on `agora serve` (or `agora runner
// --secrets-dir`). Values are read from stdin or a file, never from an
// argument, and never printed.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/cmd/agora/internal/view"
)

const secretUsage = `usage: agora secret set NAME [--from-file FILE]   the value from stdin, or FILE
       agora secret list [--json]                    names, sizes and times, never values
       agora secret rm NAME...
each takes --data-dir DIR (the store is DIR/secrets; default $AGORA_DATA_DIR,
else ~/.agora, as agora serve) or --secrets-dir DIR (the store itself)
`

// The usage of the subcommands: their arguments, the flags listed from
// their declarations.
const (
	secretSetSynopsis    = "NAME [--from-file FILE] [--data-dir DIR | --secrets-dir DIR]"
	secretListSynopsis   = "[--json] [--data-dir DIR | --secrets-dir DIR]"
	secretRemoveSynopsis = "NAME... [--data-dir DIR | --secrets-dir DIR]"
)

// secretStoreFlag adds --data-dir and --secrets-dir and returns a func
// that opens the store: --secrets-dir, else <data-dir>/secrets with the
// data dir serve uses by default ($AGORA_DATA_DIR, else ~/.agora).
func secretStoreFlag(fs *flag.FlagSet) func(environ []string) (roles.SecretStore, error) {
	dataDir := fs.String("data-dir", "", "the agora data `DIR` whose secrets/ holds the store, as agora serve --data-dir (default $AGORA_DATA_DIR, else ~/.agora)")
	secretsDir := fs.String("secrets-dir", "", "the store in `DIR` itself, as agora serve --secrets-dir (default <data-dir>/secrets)")
	return func(environ []string) (roles.SecretStore, error) {
		if *secretsDir != "" {
			if *dataDir != "" {
				return roles.SecretStore{}, usagef("--secrets-dir names the store itself and --data-dir the directory above it: give one")
			}
			abs, err := filepath.Abs(*secretsDir)
			if err != nil {
				return roles.SecretStore{}, usagef("--secrets-dir %s: %v", *secretsDir, err)
			}
			return roles.OpenSecretStore(abs), nil
		}
		dir := *dataDir
		if dir == "" {
			var err error
			if dir, err = defaultDataDir(environ); err != nil {
				return roles.SecretStore{}, err
			}
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return roles.SecretStore{}, usagef("--data-dir %s: %v", dir, err)
		}
		return roles.OpenSecretStore(filepath.Join(abs, "secrets")), nil
	}
}

func secretSetVerb(stdin io.Reader) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		const name = "agora secret set"
		open := secretStoreFlag(fs)
		fromFile := fs.String("from-file", "", "read the value from `FILE` instead of stdin, byte for byte")
		return func(_ context.Context, pos, environ []string, stdout, stderr io.Writer) error {
			switch {
			case len(pos) == 0:
				return usagef("want the secret's NAME, e.g. printf '%%s' \"$TOKEN\" | agora secret set github")
			case len(pos) > 1:
				return usagef("the value is read from stdin or --from-file, never from an argument, so it stays out of your shell history: printf '%%s' VALUE | agora secret set %s", pos[0])
			}
			key := pos[0]
			if err := roles.ValidSecretName(key); err != nil {
				return usagef("%v", err)
			}
			store, err := open(environ)
			if err != nil {
				return err
			}

			src, from := stdin, "stdin"
			if *fromFile != "" {
				f, err := os.Open(*fromFile)
				if err != nil {
					return fmt.Errorf("read the value of %s: %w", key, err)
				}
				defer f.Close()
				src, from = f, *fromFile
			} else if f, ok := stdin.(*os.File); ok && view.IsTTY(f) {
				fmt.Fprintf(stderr, "%s: type the value of %s, then Ctrl-D (it shows on the screen; pipe it in or use --from-file to keep it off)\n", name, key)
			}
			value, err := io.ReadAll(io.LimitReader(src, roles.MaxSecretBytes+1))
			if err != nil {
				return fmt.Errorf("read the value of %s from %s: %w", key, from, err)
			}
			switch {
			case len(value) == 0:
				return fmt.Errorf("refusing an empty value for %s (%s was empty): pipe the value in, e.g. printf '%%s' \"$VALUE\" | agora secret set %s, or pass --from-file FILE", key, from, key)
			case len(value) > roles.MaxSecretBytes:
				return fmt.Errorf("the value of %s from %s is larger than %d bytes, the most a secret may hold", key, from, roles.MaxSecretBytes)
			}
			replaced, err := store.Set(key, value)
			if err != nil {
				return err
			}
			verb := "set"
			if replaced {
				verb = "replaced"
			}
			fmt.Fprintf(stdout, "secret %s %s (%d bytes) in %s; env bundles refer to it as local:%s\n", key, verb, len(value), store.Dir(), key)
			if strings.HasSuffix(string(value), "\n") {
				fmt.Fprintf(stderr, "%s: note: the value ends with a newline, which is kept as part of it (printf '%%s' leaves it out)\n", name)
			}
			return nil
		}
	}
}

func secretListVerb(fs *flag.FlagSet) runFunc {
	open := secretStoreFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON for scripts instead of a table")
	return func(_ context.Context, pos, environ []string, stdout, _ io.Writer) error {
		if len(pos) > 0 {
			return usagef("unexpected argument %q: list takes no NAME (and never shows a value)", pos[0])
		}
		store, err := open(environ)
		if err != nil {
			return err
		}
		infos, err := store.List()
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, infos)
		}
		if len(infos) == 0 {
			fmt.Fprintf(stdout, "no secrets in %s; add one with: printf '%%s' VALUE | agora secret set NAME\n", store.Dir())
			return nil
		}
		rows := make([][]view.Cell, len(infos))
		for i, in := range infos {
			rows[i] = []view.Cell{{Text: in.Name}, {Text: strconv.FormatInt(in.Size, 10)}, {Text: in.Modified.Local().Format("2006-01-02 15:04:05")}}
		}
		view.New(stdout, environ).Table(stdout, []string{"NAME", "BYTES", "MODIFIED"}, rows)
		return nil
	}
}

func secretRemoveVerb(fs *flag.FlagSet) runFunc {
	open := secretStoreFlag(fs)
	return func(_ context.Context, pos, environ []string, stdout, _ io.Writer) error {
		if len(pos) == 0 {
			return usagef("want the NAME of a secret to remove ('agora secret list' lists them)")
		}
		for _, key := range pos {
			if err := roles.ValidSecretName(key); err != nil {
				return usagef("%v", err)
			}
		}
		store, err := open(environ)
		if err != nil {
			return err
		}
		var errs []error
		for _, key := range pos {
			err := store.Delete(key)
			switch {
			case errors.Is(err, roles.ErrNoSecret):
				errs = append(errs, fmt.Errorf("no secret %s in %s; 'agora secret list' lists them", key, store.Dir()))
			case err != nil:
				errs = append(errs, err)
			default:
				fmt.Fprintf(stdout, "secret %s removed\n", key)
			}
		}
		return errors.Join(errs...)
	}
}

// awsVariables are the AWS_* lines of environ: what a runner gives the
// workers of dispatches with aws-sm: secret refs.
func awsVariables(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}
