package schemas

// A dispatch's exchange: the storage prefix (AGORA_EXCHANGE_KEY) through
// which a runner that can mount nothing into the container (ECS Fargate)
// and its worker pass the files a mount would carry (docs/contract.md).
// The names of its objects:
const (
	ExchangeSpec      = "spec.json"      // the spec (runner writes)
	ExchangePrivate   = "private.json"   // PrivateValues (runner writes, worker reads and deletes)
	ExchangeCancel    = "cancel"         // the cancel marker (runner writes)
	ExchangeWorkspace = "workspace.json" // a workspace snapshot record (worker writes)
	ExchangeAnswer    = "answer.json"    // a finished round's .agora/answer.json (worker writes)
)

// DispatchOutput is the name of a dispatch's captured output (runner
// writes, orchestrator reads) among its objects in storage (DispatchKey).
const DispatchOutput = "output.log"

// DispatchKey is the storage key of a dispatch's object name —
// ExchangeSpec, ExchangeWorkspace, ExchangeAnswer or DispatchOutput — kept
// by dispatch id rather than in an exchange: dispatches/<id>/<name>.
func DispatchKey(dispatchID, name string) string {
	return "dispatches/" + dispatchID + "/" + name
}

// PrivateValues is an exchange's private.json: what a runner otherwise
// passes in files it mounts (AGORA_EVENT_KEY_FILE, AGORA_WORKER_ENV_FILE).
type PrivateValues struct {
	// EventKey is the hex key (EventKeyBytes) event lines are signed with;
	// "" means unsigned, as without AGORA_EVENT_KEY_FILE.
	EventKey string `json:"event_key"`
	// WorkerEnv are NAME=value entries for the worker's environment only.
	WorkerEnv []string `json:"worker_env,omitempty"`
}
