package view

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/agoradev/agora/cmd/agora/internal/cliconfig"
)

// Contexts writes the config file's contexts, one per row, the current one
// starred; a token is said to be set, never shown.
func Contexts(w io.Writer, c cliconfig.File) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CURRENT\tNAME\tSERVER\tTOKEN")
	for _, n := range slices.Sorted(maps.Keys(c.Contexts)) {
		cur, tok := "", ""
		if n == c.CurrentContext {
			cur = "*"
		}
		if c.Contexts[n].Token != "" {
			tok = "(set)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cur, n, c.Contexts[n].Server, tok)
	}
	return tw.Flush()
}
