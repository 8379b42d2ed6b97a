package registry

import (
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// The registry's wire types live in package wire; these names keep the
// registry's callers reading naturally.
type (
	Kind       = wire.Kind
	Subagent   = wire.Subagent
	Limits     = wire.SubagentLimits
	Command    = wire.Command
	Env        = wire.Env
	Entry      = wire.Entry
	Registered = wire.Registered
	Pins       = wire.Pins
)

// Kinds of entries.
const (
	KindSubagent   = wire.KindSubagent
	KindCapability = wire.KindCapability
	KindEnv        = wire.KindEnv
)

// Kinds in display order.
var Kinds = wire.Kinds

// CapabilityFile is a capability as its file describes it: a directory to
// pack. Its format is schemas/capability.schema.json.
type CapabilityFile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Path        string `json:"path"`
}

// Resolved is a sub-agent with everything it names pinned.
type Resolved struct {
	Entry        *Entry
	Subagent     schemas.Subagent
	Capabilities []schemas.BundleRef
	Env          []schemas.BundleRef
	Pins         Pins
}
