package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/egress"
	"github.com/agoradev/agora/schemas"
)

// A dispatch with network egress (docs/runner.md, "Egress allow-list")
// runs on an internal network of its own — no route out, no address of
// the host on it — whose only other member is its proxy: a container of
// the worker image running `agora-worker egress-proxy`, joined to the
// uplink network (Config.EgressUplink) as well. The sub-agent's tools
// reach the listed hosts through it (HTTP_PROXY and friends); nothing
// else leaves the network. The proxy, not the sub-agent, resolves names:
// the sub-agent's resolver forwards to an address it cannot reach.
//
// Network and proxy carry the labels below, never LabelRunner or
// LabelDispatchID (reconcile would take the proxy for a dispatch), and
// go with the dispatch (finish, removeLeftovers, reconcile).
const (
	// LabelEgressFor names the dispatch an egress network or proxy serves.
	LabelEgressFor = "agora.egress_for"
	// LabelEgressRunner names the runner that made it.
	LabelEgressRunner = "agora.egress_runner"
	// EgressProxyHost is the proxy's name on the dispatch's network.
	EgressProxyHost = "agora-egress-proxy"
	// EgressProxyPort is where it listens.
	EgressProxyPort = 3128
	// DefaultEgressUplink is the network the proxy reaches hosts through.
	DefaultEgressUplink = compute.NetworkBridge
	// unreachableDNS is the sub-agent's resolver: not a loopback address
	// (Docker before 26 forwards such queries from the host's network
	// namespace, a way out of an internal network: CVE-2024-29018), and
	// not on the internal network, so a query goes nowhere.
	unreachableDNS = "198.51.100.53"
	// egressWorkerPath is the worker binary in the worker image.
	egressWorkerPath = "/usr/local/bin/agora-worker"
)

// egressName names a dispatch's network and proxy container (Docker keeps
// the two apart): unique per dispatch and runner, like containerName.
func egressName(runnerID, dispatchID string) string {
	sum := sha256.Sum256([]byte(runnerID))
	return "agora-egress-" + dispatchID + "-" + hex.EncodeToString(sum[:4])
}

// egressProxyURL is what the sub-agent's HTTP_PROXY and HTTPS_PROXY say.
var egressProxyURL = "http://" + EgressProxyHost + ":" + strconv.Itoa(EgressProxyPort)

// egressEnv are the variables that send the sub-agent's tools through
// the proxy, in both the upper and lower case tools read.
func egressEnv() []string {
	noProxy := "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + egressProxyURL, "HTTPS_PROXY=" + egressProxyURL,
		"http_proxy=" + egressProxyURL, "https_proxy=" + egressProxyURL,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}
}

func (r *Runner) egressLabels(id string) map[string]string {
	return map[string]string{LabelEgressFor: id, LabelEgressRunner: r.cfg.ID}
}

// compileEgressProxy is the proxy container of req. Pure.
func compileEgressProxy(req *schemas.DispatchRequest, cfg Config) compute.ContainerSpec {
	id := req.Spec.DispatchID
	name := egressName(cfg.ID, id)
	return compute.ContainerSpec{
		Name:           name,
		Image:          cfg.Image,
		Entrypoint:     []string{egressWorkerPath, "egress-proxy"},
		Env:            []string{schemas.EnvDispatchID + "=" + id, schemas.EnvEgressAllow + "=" + strings.Join(req.Egress, ",")},
		Labels:         map[string]string{LabelEgressFor: id, LabelEgressRunner: cfg.ID},
		User:           ContainerUser,
		Network:        name,
		NetworkAliases: []string{EgressProxyHost},
		Resources:      compute.Resources{NanoCPUs: 500_000_000, MemoryBytes: 128 << 20, PidsLimit: 256},
		Init:           true,
		StopTimeout:    cfg.Grace,
	}
}

// prepareEgress makes (or finds, after a restart) the dispatch's internal
// network and starts its proxy there, joined to the uplink too.
func (d *dispatch) prepareEgress(ctx context.Context) error {
	r := d.r
	nw, ok := r.cfg.Engine.(compute.Networker)
	if !ok || r.cfg.NoHostMounts {
		return errors.New("network egress needs a Docker engine that makes networks; this runner's cannot: use network none or bridge, or run the task on a Docker runner")
	}
	if _, err := schemas.ParseEgress(d.req.Egress); err != nil {
		return err
	}
	spec := compileEgressProxy(d.req, r.cfg)
	if _, err := nw.CreateNetwork(ctx, compute.NetworkSpec{Name: spec.Name, Internal: true, Labels: r.egressLabels(d.id)}); err != nil && !errors.Is(err, compute.ErrAlreadyExists) {
		return err
	}
	proxyID, err := r.cfg.Engine.Create(ctx, spec)
	fresh := err == nil
	if errors.Is(err, compute.ErrAlreadyExists) {
		found, lerr := r.cfg.Engine.List(ctx, r.egressLabels(d.id))
		if lerr != nil || len(found) == 0 {
			return fmt.Errorf("egress proxy %s exists but is not this runner's: %v", spec.Name, lerr)
		}
		proxyID, err = found[0].ID, nil
	}
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if err := nw.ConnectNetwork(ctx, r.cfg.EgressUplink, proxyID, nil); err != nil && (fresh || !strings.Contains(err.Error(), "already exists")) {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if err := r.cfg.Engine.Start(ctx, proxyID); err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if err := r.awaitProxy(ctx, proxyID); err != nil {
		return err
	}
	d.log.Info("egress proxy started", "hosts", len(d.req.Egress), "uplink", r.cfg.EgressUplink)
	return nil
}

// proxyReadyTimeout bounds the wait for a started proxy to listen.
const proxyReadyTimeout = 30 * time.Second

// awaitProxy waits until the proxy says it listens, so the sub-agent never
// starts before its only way out. A proxy that exits instead (an old
// worker image without egress-proxy, a list it refuses) fails the
// dispatch with what it printed.
func (r *Runner) awaitProxy(ctx context.Context, proxyID string) error {
	ctx, cancel := context.WithTimeout(ctx, proxyReadyTimeout)
	defer cancel()
	var said strings.Builder
	ready := false
	lines := &lineWriter{fn: func(line []byte) {
		if strings.Contains(string(line), "egress-proxy: listening") {
			ready = true
			cancel()
			return
		}
		if said.Len() < 1024 {
			said.Write(line)
			said.WriteByte(' ')
		}
	}}
	err := r.cfg.Engine.Logs(ctx, proxyID, true, io.Discard, lines)
	lines.Flush()
	switch {
	case ready:
		return nil
	case err != nil && ctx.Err() == nil:
		return fmt.Errorf("egress proxy: read its output: %w", err)
	case ctx.Err() != nil:
		return fmt.Errorf("egress proxy did not listen within %s: %s", proxyReadyTimeout, strings.TrimSpace(said.String()))
	}
	return fmt.Errorf("egress proxy exited before it listened (is the worker image %s older than this runner? rebuild it with agora image build): %s", r.cfg.Image, strings.TrimSpace(said.String()))
}

// followEgress reads the proxy's decisions until ctx ends or the proxy
// stops: each denial is logged with the dispatch and host, counted, and
// written into the dispatch's output, where `agora logs` shows it.
func (d *dispatch) followEgress(ctx context.Context, output io.Writer) {
	r := d.r
	found, err := r.cfg.Engine.List(ctx, r.egressLabels(d.id))
	if err != nil || len(found) == 0 {
		d.log.Warn("egress proxy not found; its decisions are not logged", "error", err)
		return
	}
	lines := &lineWriter{fn: func(line []byte) {
		var dec egress.Decision
		if json.Unmarshal(line, &dec) != nil {
			return
		}
		if !dec.Denied() {
			if dec.Error != "" {
				d.log.Warn("egress allowed but not relayed", "host", dec.Host, "port", dec.Port, "method", dec.Method, "error", dec.Error)
			}
			return
		}
		total := r.egressDenied.Add(1)
		d.log.Warn("egress denied", "host", dec.Host, "port", dec.Port, "method", dec.Method, "reason", dec.Reason, "egress_denied_total", total)
		fmt.Fprintf(output, "agora: egress denied: %s %s:%d (%s); the sub-agent may reach only %s\n",
			dec.Method, dec.Host, dec.Port, dec.Reason, strings.Join(d.req.Egress, ", "))
	}}
	if err := r.cfg.Engine.Logs(ctx, found[0].ID, true, lines, io.Discard); err != nil && ctx.Err() == nil {
		d.log.Warn("read the egress proxy's decisions", "error", err)
	}
	lines.Flush()
}

// removeEgress removes a dispatch's proxy and network, if it had them.
func (r *Runner) removeEgress(ctx context.Context, id string) {
	nw, ok := r.cfg.Engine.(compute.Networker)
	if !ok {
		return
	}
	labels := r.egressLabels(id)
	found, err := r.cfg.Engine.List(ctx, labels)
	if err != nil {
		r.log.Error("list egress proxies", "dispatch_id", id, "error", err)
	}
	for _, c := range found {
		if err := r.cfg.Engine.Remove(ctx, c.ID); err != nil {
			r.log.Error("remove egress proxy", "dispatch_id", id, "container_id", c.ID, "error", err)
		}
	}
	nets, err := nw.ListNetworks(ctx, labels)
	if err != nil {
		r.log.Error("list egress networks", "dispatch_id", id, "error", err)
	}
	for _, n := range nets {
		if err := nw.RemoveNetwork(ctx, n.ID); err != nil {
			r.log.Error("remove egress network", "dispatch_id", id, "network", n.Name, "error", err)
		}
	}
}

// sweepEgress removes the egress proxies and networks of this runner whose
// dispatch has no container left (keep): made by a process that stopped
// before the dispatch's container was created. A redelivered request
// makes them again.
func (r *Runner) sweepEgress(ctx context.Context, keep map[string]bool) {
	nw, ok := r.cfg.Engine.(compute.Networker)
	if !ok {
		return
	}
	ids := map[string]bool{}
	mine := map[string]string{LabelEgressRunner: r.cfg.ID}
	found, err := r.cfg.Engine.List(ctx, mine)
	if err != nil {
		r.log.Error("list egress proxies", "error", err)
	}
	for _, c := range found {
		ids[c.Labels[LabelEgressFor]] = true
	}
	nets, err := nw.ListNetworks(ctx, mine)
	if err != nil {
		r.log.Error("list egress networks", "error", err)
	}
	for _, n := range nets {
		ids[n.Labels[LabelEgressFor]] = true
	}
	for id := range ids {
		if !keep[id] {
			r.log.Info("removing the egress proxy and network of a dispatch without a container", "dispatch_id", id)
			r.removeEgress(ctx, id)
		}
	}
}

// EgressDenied is how many requests the egress proxies of this runner's
// dispatches have refused since it started.
func (r *Runner) EgressDenied() int64 { return r.egressDenied.Load() }
