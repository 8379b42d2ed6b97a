package registry

import (
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// CapabilityFile is a capability as its file describes it: a directory to
// pack. Its format is schemas/capability.schema.json.
type CapabilityFile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Path        string `json:"path"`
}

// Resolved is a sub-agent with everything it names pinned.
type Resolved struct {
	Entry        *wire.Entry
	Subagent     schemas.Subagent
	Capabilities []schemas.BundleRef
	Env          []schemas.BundleRef
	Pins         wire.Pins
}
