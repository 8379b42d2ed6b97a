package schemas

// Network modes a sub-agent's container can have.
const (
	NetworkNone   = "none"
	NetworkBridge = "bridge"
	NetworkHost   = "host"
)

// Workspace modes across rounds.
const (
	WorkspacePersist = "persist"
	WorkspaceFresh   = "fresh"
)

// DispatchRequest is one message on the AGORA_QUEUE work queue
// (dispatch-request.schema.json): the spec plus how to run its container.
type DispatchRequest struct {
	Spec    DispatchSpec `json:"spec"`
	Image   string       `json:"image,omitempty"`
	Network string       `json:"network,omitempty"`
	// Egress is the allow-list of network egress: [*.]NAME[:PORT]
	// entries (ParseEgressRule).
	Egress    []string          `json:"egress,omitempty"`
	Resources *Resources        `json:"resources,omitempty"`
	Workspace *WorkspaceRequest `json:"workspace,omitempty"`
}

// Resources limit a dispatch's container.
type Resources struct {
	CPUs     float64 `json:"cpus,omitempty"`
	MemoryMB int64   `json:"memory_mb,omitempty"`
	Pids     int64   `json:"pids,omitempty"`
}

// WorkspaceRequest says where a round's workspace comes from.
type WorkspaceRequest struct {
	Mode        string `json:"mode,omitempty"`
	RestoreFrom string `json:"restore_from,omitempty"`
}

// NetworkMode is the request's network, none when unset.
func (r *DispatchRequest) NetworkMode() string {
	if r.Network == "" {
		return NetworkNone
	}
	return r.Network
}

// Fresh reports whether the sub-agent opted out of workspace persistence.
func (r *DispatchRequest) Fresh() bool {
	return r.Workspace != nil && r.Workspace.Mode == WorkspaceFresh
}
