package registry

import (
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Resolved is a sub-agent with everything it names pinned.
type Resolved struct {
	Entry        *wire.Entry
	Subagent     schemas.Subagent
	Capabilities []schemas.BundleRef
	Env          []schemas.BundleRef
	Pins         wire.Pins
}
