package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/docker/docker/api/types/network"
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
