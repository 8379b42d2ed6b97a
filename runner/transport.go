package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/schemas"
)

// transport is how a dispatch's files travel between this runner and its
// container — its spec, its private values (event key, worker
// environment, credentials, secrets), its workspace, the cancel marker,
// and what the worker leaves for the rest of agora. There are two, chosen
// once per runner (newTransport):
//
//   - hostTransport (hostfiles.go): files on this host, bind-mounted into
//     the container (Docker, EC2);
//   - exchangeTransport (remote.go, exchange.go): objects under the
//     dispatch's exchange prefix in storage, for an engine that cannot
//     mount this host's files (ECS on Fargate, Config.NoHostMounts).
//
// Everything else in a dispatch's life — claim, create, start, follow,
// settle — is the same for both.
type transport interface {
	// prepare lays out what the dispatch's container reads and returns the
	// container that runs it. A *startError names the failure's reason;
	// any other error is worker-lost. It may stop early once the dispatch
	// is cancelled (the caller checks).
	prepare(ctx context.Context, d *dispatch) (compute.ContainerSpec, error)
	// workerPublishes reports whether the worker publishes its own events
	// to NATS; else the runner relays them from its output. req is nil for
	// an adopted container whose request is gone.
	workerPublishes(req *schemas.DispatchRequest) bool
	// watch bounds what the running container writes, until ctx ends.
	watch(ctx context.Context, d *dispatch, containerID string)
	// markCancel tells the worker that the SIGTERM to come is the runner's
	// cancel (cancel.go).
	markCancel(ctx context.Context, d *dispatch)
	// collect keeps, for the rest of agora, what the worker of an ended
	// container left (a workspace snapshot record, an answer file, blobs
	// it wrote) and points the events in missing at what it stored. It
	// runs before any of those events is published.
	collect(ctx context.Context, d *dispatch, kind schemas.EventKind, missing []schemas.Event)
	// remove deletes the transport's files of a dispatch whose outcome is
	// recorded; eventKey is nil when the runner has none for it.
	remove(ctx context.Context, id string, eventKey []byte, log *slog.Logger)
}

// newTransport is the runner's one transport.
func newTransport(r *Runner) transport {
	if r.cfg.NoHostMounts {
		return exchangeTransport{r}
	}
	return hostTransport{r}
}

// Both transports keep a dispatch's request and event key on this host, so
// that a restarted runner can settle an adopted container.

func (r *Runner) requestFile(id string) string {
	return filepath.Join(r.dispatchesDir(), id+".request.json")
}

// writeRequestFile keeps the request on this host for adoption after a
// restart.
func (d *dispatch) writeRequestFile() error {
	request, err := json.Marshal(d.req)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.r.dispatchesDir(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(d.r.requestFile(d.id), request, 0o600)
}

// readRequestFile reads the request kept on the host for an adopted
// container; nil when it is gone.
func (r *Runner) readRequestFile(id string, log *slog.Logger) *schemas.DispatchRequest {
	data, err := os.ReadFile(r.requestFile(id))
	if err != nil {
		log.Warn("request of an adopted container is missing; settling without it", "error", err)
		return nil
	}
	req, err := schemas.ParseDispatchRequest(data)
	if err != nil {
		log.Warn("request of an adopted container does not parse", "error", err)
		return nil
	}
	return req
}

// removeFiles removes what a settled dispatch occupies besides its
// container: the transport's files, its egress proxy and network (when it
// may have had them), and its request and key on this host.
func (r *Runner) removeFiles(ctx context.Context, id string, eventKey []byte, egress bool, log *slog.Logger) {
	r.transport.remove(ctx, id, eventKey, log)
	if egress {
		r.removeEgress(ctx, id)
	}
	removePaths(log, r.requestFile(id), r.keyFile(id))
}

func removePaths(log *slog.Logger, paths ...string) {
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			log.Error("remove dispatch files", "path", p, "error", err)
		}
	}
}

// restoreFrom is the dispatch whose workspace a resumed round continues,
// "" for none.
func restoreFrom(req *schemas.DispatchRequest) string {
	if req.Fresh() || req.Workspace == nil {
		return ""
	}
	return req.Workspace.RestoreFrom
}
