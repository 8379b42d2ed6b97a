package runner

import (
	"os"

	"github.com/agoradev/agora/schemas"
)

// containerUID is the worker image's user, which owns what the runner
// prepares for a container.
const containerUID = 65532

// snapshotKey is where the runner records the snapshot of dispatchID's
// workspace: JSON of a workspace.Record.
func snapshotKey(dispatchID string) string {
	return schemas.DispatchKey(dispatchID, schemas.ExchangeWorkspace)
}

// answerKey is where a finished dispatch's .agora/answer.json is kept.
func answerKey(dispatchID string) string {
	return schemas.DispatchKey(dispatchID, schemas.ExchangeAnswer)
}

// logKey is where a dispatch's captured output is stored.
func logKey(dispatchID string) string { return schemas.DispatchKey(dispatchID, schemas.DispatchOutput) }

// prepareDir creates dir for the container's user: owned by it when the
// runner may chown, else open to all.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Lchown(dir, containerUID, containerUID); err != nil {
		return os.Chmod(dir, 0o777)
	}
	return nil
}
