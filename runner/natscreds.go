package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agoradev/agora/schemas"
)

// Worker NATS credentials.
//
// With --worker-nats the worker publishes its own events, so it needs a
// NATS user; the bus refuses anonymous clients. Each dispatch gets its own,
// minted from the account's scoped signing key (natsauth.Signer): it may
// publish only agora.events.<id> and agora.logs.<id> and receive its
// acknowledgements, and it expires with the dispatch. Like the event key,
// the credentials travel in a file of the key mount that the worker reads
// and deletes before the sub-agent starts: in the environment they would be
// in /proc/1/environ, readable by the sub-agent.

const containerNATSCredsFile = containerKeyDir + "/nats.creds"

// workerCredsSlack is added to the dispatch's timeout and grace for the
// credentials' lifetime: the container's start, the bundle fetch and the
// last event's publish window happen around the worker's own timeout.
const workerCredsSlack = 5 * time.Minute

// prepareNATSCreds writes the worker's credentials into the key dir when
// the worker will publish itself; it reports whether it did.
func (d *dispatch) prepareNATSCreds(req *schemas.DispatchRequest) (bool, error) {
	r := d.r
	if r.cfg.WorkerNATSURL == "" || r.cfg.WorkerNATSSigner == nil || req.NetworkMode() == schemas.NetworkNone {
		return false, nil
	}
	expires := time.Now().Add(req.Spec.Timeout(r.cfg.DefaultTimeout) + r.cfg.Grace + workerCredsSlack)
	creds, err := r.cfg.WorkerNATSSigner.Worker(d.id, expires)
	if err != nil {
		return false, fmt.Errorf("worker nats credentials: %w", err)
	}
	path := filepath.Join(r.keyDir(d.id), filepath.Base(containerNATSCredsFile))
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		return false, fmt.Errorf("worker nats credentials: %w", err)
	}
	if err := os.Lchown(path, containerUID, containerUID); err != nil {
		_ = os.Chmod(path, 0o644) // a runner that may not chown: the worker must still read it
	}
	return true, nil
}
