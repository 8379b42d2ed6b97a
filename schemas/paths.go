package schemas

// Paths inside the workspace that belong to the contract, relative to it.
const (
	// AgoraDir holds the files agora and the sub-agent exchange.
	AgoraDir = ".agora"
	// SentinelPath is the needs_input sentinel a sub-agent writes to pause.
	SentinelPath = ".agora/needs_input.json"
	// InputPath holds the dispatch's input object.
	InputPath = ".agora/input.json"
	// ResumePath holds question, answer, partial_state and history on a resumed round.
	ResumePath = ".agora/resume.json"
	// SetupScript, when present in the workspace, runs before the runtime.
	SetupScript = "agora-setup.sh"
)

// SentinelMaxBytes caps the whole sentinel file.
const SentinelMaxBytes = 1 << 20
