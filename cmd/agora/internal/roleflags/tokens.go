package roleflags

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/agoradev/agora/internal/apitoken"
)

// readTokens are every bearer token given, as an operator keeps secrets:
// --token (which shows the secret to every local user in the process
// list), the lines of --tokens-file (default $AGORA_TOKENS_FILE) and
// $AGORA_TOKENS (white-space separated).
func (f *Flags) readTokens(environ []string) ([]string, error) {
	out := append([]string(nil), f.tokens...)
	if f.tokensFile != "" {
		fromFile, err := readTokensFile(f.tokensFile)
		if err != nil {
			return nil, err
		}
		out = append(out, fromFile...)
	}
	return append(out, strings.Fields(getenv(environ, "AGORA_TOKENS"))...), nil
}

// readTokensFile reads a tokens file, refusing one other users may read.
func readTokensFile(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file: %v", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("--tokens-file %s is mode %#o, readable by other users: chmod 600 %s", path, perm, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file: %v", err)
	}
	tokens, err := apitoken.ParseFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("--tokens-file %s: %v", path, err)
	}
	return tokens, nil
}
