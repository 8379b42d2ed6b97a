package docker

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/agoradev/agora/internal/compute"
)

// BridgeGateway implements compute.HostGateway: the host's address on the
// engine's default "bridge" network (docker0, usually 172.17.0.1), which is
// what "host-gateway" resolves to in a container.
//
// The daemon reports it as the IPAM gateway when one was configured. Docker
// 20.10 leaves that empty for the default bridge; then the address of the
// bridge interface is used when it is on this host, else the first address of
// the bridge's subnet (the daemon's default).
func (e *Engine) BridgeGateway(ctx context.Context) (netip.Addr, error) {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	n, err := e.cli.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("inspect the bridge network: %w", err)
	}
	var subnets []netip.Prefix
	for _, c := range n.IPAM.Config {
		if a, err := netip.ParseAddr(c.Gateway); err == nil && a.Is4() {
			return a, nil
		}
		if p, err := netip.ParsePrefix(c.Subnet); err == nil && p.Addr().Is4() {
			subnets = append(subnets, p.Masked())
		}
	}
	if len(subnets) == 0 {
		return netip.Addr{}, fmt.Errorf("the bridge network has no IPv4 subnet (IPAM %+v)", n.IPAM.Config)
	}
	if name := n.Options["com.docker.network.bridge.name"]; name != "" {
		if a, ok := interfaceAddr(name, subnets[0]); ok {
			return a, nil
		}
	}
	return subnets[0].Addr().Next(), nil
}

// interfaceAddr is the address of the local interface name within subnet.
func interfaceAddr(name string, subnet netip.Prefix) (netip.Addr, bool) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return netip.Addr{}, false
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && subnet.Contains(ip.Unmap()) {
				return ip.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}

var _ compute.Networker = (*Engine)(nil)

// CreateNetwork implements compute.Networker. An internal network is a
// bridge with --internal (no route out) and no address of the host on it
// (com.docker.network.bridge.inhibit_ipv4): its members cannot reach the
// host's services through a gateway address either.
func (e *Engine) CreateNetwork(ctx context.Context, spec compute.NetworkSpec) (string, error) {
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[compute.LabelManaged] = "true"
	opts := network.CreateOptions{Driver: "bridge", Internal: spec.Internal, Labels: labels}
	if spec.Internal {
		opts.Options = map[string]string{"com.docker.network.bridge.inhibit_ipv4": "true"}
	}
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	resp, err := e.cli.NetworkCreate(ctx, spec.Name, opts)
	switch {
	case cerrdefs.IsConflict(err):
		return "", fmt.Errorf("create network %s: %w: %w", spec.Name, compute.ErrAlreadyExists, err)
	case err != nil:
		return "", fmt.Errorf("create network %s: %w", spec.Name, err)
	}
	if resp.Warning != "" {
		e.cfg.Logger.Warn("docker network create warning", "network", spec.Name, "warning", resp.Warning)
	}
	return resp.ID, nil
}

// ConnectNetwork implements compute.Networker.
func (e *Engine) ConnectNetwork(ctx context.Context, netName, containerID string, aliases []string) error {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	if err := e.cli.NetworkConnect(ctx, netName, containerID, &network.EndpointSettings{Aliases: aliases}); err != nil {
		return fmt.Errorf("connect container %s to network %s: %w", containerID, netName, notFound(err))
	}
	return nil
}

// RemoveNetwork implements compute.Networker.
func (e *Engine) RemoveNetwork(ctx context.Context, id string) error {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	err := e.cli.NetworkRemove(ctx, id)
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("remove network %s: %w", id, err)
}

// ListNetworks implements compute.Networker.
func (e *Engine) ListNetworks(ctx context.Context, labels map[string]string) ([]compute.Network, error) {
	args := filters.NewArgs(filters.Arg("label", compute.LabelManaged+"=true"))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args.Add("label", k+"="+labels[k])
	}
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	list, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: args})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	out := make([]compute.Network, 0, len(list))
	for _, n := range list {
		out = append(out, compute.Network{ID: n.ID, Name: n.Name, Labels: n.Labels})
	}
	slices.SortFunc(out, func(a, b compute.Network) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
