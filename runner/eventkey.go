package runner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agoradev/agora/schemas"
)

// Event keys.
//
// In relay mode the runner takes the worker's events from the container's
// stdout. Every process in the container runs as the same user, so a
// sub-agent could write an event line there too (through /proc/1/fd/1) and
// claim "finished" for a run that failed. So each dispatch gets a random
// key: the runner keeps a copy on its host (<data-dir>/dispatches/<id>.key,
// 0600, for an adopted container too) and hands the worker one in a file of
// its own mount (/run/agora/key/event.key) that the worker reads and
// deletes before the sub-agent starts; the worker signs every event line
// with it (schemas.SignEventLine), and the runner takes only lines that
// verify. The worker is not dumpable, so the sub-agent cannot read the key
// from its memory either.

const (
	containerKeyDir  = "/run/agora/key"
	containerKeyFile = containerKeyDir + "/event.key"
	// containerWorkerEnvFile holds the operator's --worker-env values, for
	// the worker alone: in the container's environment they would be in
	// /proc/1/environ (docker-init's, the sub-agent's user), readable by the
	// sub-agent. The worker reads and deletes the file like the key.
	containerWorkerEnvFile = containerKeyDir + "/worker.env"
)

func (r *Runner) keyDir(id string) string { return filepath.Join(r.cfg.DataDir, "keys", id) }

func (r *Runner) keyFile(id string) string {
	return filepath.Join(r.dispatchesDir(), id+".key")
}

// ensureEventKey makes the dispatch's key, kept on this host, or takes
// the one already there (a container of this dispatch may exist already);
// fresh reports a new one.
func (d *dispatch) ensureEventKey() (fresh bool, err error) {
	r := d.r
	if key, err := readKey(r.keyFile(d.id)); err == nil {
		d.eventKey = key
		return false, nil
	}
	key := make([]byte, schemas.EventKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return false, fmt.Errorf("event key: %w", err)
	}
	if err := os.MkdirAll(r.dispatchesDir(), 0o755); err != nil {
		return false, fmt.Errorf("event key: %w", err)
	}
	if err := os.WriteFile(r.keyFile(d.id), []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return false, fmt.Errorf("event key: %w", err)
	}
	d.eventKey = key
	return true, nil
}

// prepareEventKey ensures the dispatch's key and, for a new one, the key
// mount the worker reads it (and the worker environment) from.
func (d *dispatch) prepareEventKey() error {
	r := d.r
	fresh, err := d.ensureEventKey()
	if err != nil || !fresh {
		return err
	}
	text := []byte(hex.EncodeToString(d.eventKey) + "\n")
	dir := r.keyDir(d.id)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("event key: %w", err)
	}
	// The worker must delete the file, so its user owns the directory.
	if err := prepareDir(dir); err != nil {
		return fmt.Errorf("event key: %w", err)
	}
	path := filepath.Join(dir, filepath.Base(containerKeyFile))
	if err := os.WriteFile(path, text, 0o600); err != nil {
		return fmt.Errorf("event key: %w", err)
	}
	if err := os.Lchown(path, containerUID, containerUID); err != nil {
		_ = os.Chmod(path, 0o644) // a runner that may not chown: the worker must still read it
	}
	return d.writeWorkerEnv()
}

// writeWorkerEnv puts the operator's worker environment next to the key:
// KEY=VALUE entries, each ended by a NUL byte (as /proc/PID/environ), 0600
// and owned by the worker's user.
func (d *dispatch) writeWorkerEnv() error {
	env := d.r.cfg.WorkerEnv
	if len(env) == 0 {
		return nil
	}
	var text []byte
	for _, kv := range env {
		text = append(append(text, kv...), 0)
	}
	path := filepath.Join(d.r.keyDir(d.id), filepath.Base(containerWorkerEnvFile))
	if err := os.WriteFile(path, text, 0o600); err != nil {
		return fmt.Errorf("worker environment: %w", err)
	}
	if err := os.Lchown(path, containerUID, containerUID); err != nil {
		_ = os.Chmod(path, 0o644) // a runner that may not chown: the worker must still read it
	}
	return nil
}

// loadEventKey takes the host copy of an adopted dispatch's key. Without
// one (a dispatch started by a runner before keys existed), its stdout is
// taken unverified, as it was then.
func (d *dispatch) loadEventKey() {
	key, err := readKey(d.r.keyFile(d.id))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("event key of an adopted container", "error", err)
		}
		return
	}
	d.eventKey = key
}

func readKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != schemas.EventKeyBytes {
		return nil, fmt.Errorf("event key %s is malformed", path)
	}
	return key, nil
}
