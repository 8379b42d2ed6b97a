package adapters

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agoradev/agora/schemas"
)

// ErrUnknownRuntime is wrapped by ByRuntime when no adapter serves a runtime.
var ErrUnknownRuntime = errors.New("unknown runtime")

// ByRuntime returns the adapter in list that serves rt. The error names rt
// and the runtimes list does serve.
func ByRuntime(list []Adapter, rt schemas.Runtime) (Adapter, error) {
	known := make([]string, 0, len(list))
	for _, a := range list {
		if a.Runtime() == rt {
			return a, nil
		}
		known = append(known, string(a.Runtime()))
	}
	slices.Sort(known)
	if len(known) == 0 {
		known = append(known, "none")
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownRuntime, rt, strings.Join(known, ", "))
}
