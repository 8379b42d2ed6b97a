package runner

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/schemas"
)

// exchangeTransport hands a dispatch its files through its exchange in
// storage (exchange.go), for an engine that cannot mount this host's files
// (ECS on Fargate). Only the request and the event key stay on this host.
type exchangeTransport struct{ r *Runner }

var _ transport = exchangeTransport{}

func (t exchangeTransport) prepare(ctx context.Context, d *dispatch) (compute.ContainerSpec, error) {
	if err := d.writeRequestFile(); err != nil {
		return compute.ContainerSpec{}, errors.New(prepareFailed + err.Error())
	}
	rf, reason, err := d.prepareExchange(ctx)
	if err != nil {
		return compute.ContainerSpec{}, cannotStart(reason, err.Error())
	}
	return compileContainer(d.req, t.r.cfg, hostPaths{Remote: &rf}), nil
}

// workerPublishes is false: the worker gets no NATS credentials, and its
// events are relayed from its output.
func (exchangeTransport) workerPublishes(*schemas.DispatchRequest) bool { return false }

// watch does nothing: the workspace is the task's scratch volume, bounded
// by the platform (AGORA_MAX_WORKSPACE_BYTES bounds the snapshot).
func (exchangeTransport) watch(context.Context, *dispatch, string) {}

func (exchangeTransport) markCancel(ctx context.Context, d *dispatch) { d.markCancelInExchange(ctx) }

func (exchangeTransport) collect(ctx context.Context, d *dispatch, kind schemas.EventKind, _ []schemas.Event) {
	d.settleExchange(ctx, kind)
}

func (t exchangeTransport) remove(ctx context.Context, _ string, eventKey []byte, log *slog.Logger) {
	t.r.removeExchange(ctx, eventKey, log)
}
