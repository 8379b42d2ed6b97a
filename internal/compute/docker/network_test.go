package docker_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
)

// listen serves "hello\n" to every connection on addr until the test ends.
func listen(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// TestReachHost shows how a container reaches a service of the host (NATS,
// say): with NetworkHost it shares the host's loopback; on the bridge it
// reaches host.docker.internal (the bridge gateway) but only a service that
// listens on that address too.
func TestReachHost(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	image := computetest.BusyboxImage(t, e)
	gw, err := e.BridgeGateway(context.Background())
	if err != nil {
		t.Fatalf("BridgeGateway: %v", err)
	}
	t.Logf("bridge gateway %s", gw)
	loopback := listen(t, "127.0.0.1:0")
	onBridge := listen(t, net.JoinHostPort(gw.String(), "0"))

	for _, tc := range []struct {
		name    string
		network string
		host    string
		port    int
		reached bool
	}{
		{"host network to loopback", compute.NetworkHost, "127.0.0.1", loopback, true},
		{"bridge to the gateway", compute.NetworkBridge, "host.docker.internal", onBridge, true},
		{"bridge to a loopback-only service", compute.NetworkBridge, "host.docker.internal", loopback, false},
		{"none to the gateway", compute.NetworkNone, gw.String(), onBridge, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			spec := compute.ContainerSpec{
				Image:       image,
				Entrypoint:  []string{"nc", "-w", "5", tc.host, strconv.Itoa(tc.port)},
				User:        computetest.User,
				Labels:      computetest.Label(t, e),
				NetworkMode: tc.network,
			}
			if tc.network == compute.NetworkBridge {
				spec.ExtraHosts = []string{compute.HostGatewayExtraHost}
			}
			id, err := e.Create(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(ctx, id); err != nil {
				t.Fatal(err)
			}
			res, err := e.Wait(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if err := e.Logs(ctx, id, false, &out, &errb); err != nil {
				t.Fatal(err)
			}
			reached := res.Successful() && strings.TrimSpace(out.String()) == "hello"
			if reached != tc.reached {
				t.Errorf("%s → %s:%d reached = %v (exit %d, stdout %q, stderr %q), want %v",
					tc.network, tc.host, tc.port, reached, res.ExitCode, out.String(), errb.String(), tc.reached)
			}
		})
	}
}

// TestInternalNetwork: CreateNetwork makes an internal network without a
// host address on it (a second create of the name is ErrAlreadyExists);
// ListNetworks finds it by label; a container on it reaches a peer by
// alias and nothing of the host; RemoveNetwork removes it, and a second
// remove is no error.
func TestInternalNetwork(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	image := computetest.BusyboxImage(t, e)
	ctx := context.Background()
	gw, err := e.BridgeGateway(ctx)
	if err != nil {
		t.Fatalf("BridgeGateway: %v", err)
	}
	hostPort := listen(t, net.JoinHostPort(gw.String(), "0"))
	name := "agora-test-internal-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	labels := map[string]string{"agora.test": name}
	id, err := e.CreateNetwork(ctx, compute.NetworkSpec{Name: name, Internal: true, Labels: labels})
	if err != nil {
		t.Fatalf("CreateNetwork: %v", err)
	}
	t.Cleanup(func() { _ = e.RemoveNetwork(context.Background(), id) })
	if _, err := e.CreateNetwork(ctx, compute.NetworkSpec{Name: name, Internal: true}); !errors.Is(err, compute.ErrAlreadyExists) {
		t.Errorf("second CreateNetwork = %v, want ErrAlreadyExists", err)
	}
	found, err := e.ListNetworks(ctx, labels)
	if err != nil || len(found) != 1 || found[0].ID != id || found[0].Labels[compute.LabelManaged] != "true" {
		t.Fatalf("ListNetworks = %+v, %v; want the one network, managed", found, err)
	}

	run := func(cname string, aliases []string, script string) string {
		t.Helper()
		cid, err := e.Create(ctx, compute.ContainerSpec{Name: cname, Image: image, User: "65532:65532", Network: name, NetworkAliases: aliases,
			Entrypoint: []string{"/bin/sh", "-c", script}, Labels: labels})
		if err != nil {
			t.Fatalf("Create %s: %v", cname, err)
		}
		t.Cleanup(func() { _ = e.Remove(context.Background(), cid) })
		if err := e.Start(ctx, cid); err != nil {
			t.Fatalf("Start %s: %v", cname, err)
		}
		return cid
	}
	run(name+"-peer", []string{"peer"}, `echo peer-here | nc -l -p 7000`)
	cid := run(name+"-probe", nil, `
for i in 1 2 3 4 5 6 7 8 9 10; do out=$(nc peer 7000 </dev/null 2>&1) && break; sleep 0.3; done; echo "peer: $out"
if nc -w 3 `+gw.String()+` `+strconv.Itoa(hostPort)+` </dev/null >/dev/null 2>&1; then echo "host: reached"; else echo "host: unreachable"; fi`)
	if _, err := e.Wait(ctx, cid); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := e.Logs(ctx, cid, false, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "peer: peer-here") || !strings.Contains(out.String(), "host: unreachable") {
		t.Errorf("on the internal network: %q; want the peer reached by its alias and the host unreachable", out.String())
	}
	// Containers first, then the network.
	for _, c := range []string{name + "-peer", name + "-probe"} {
		list, _ := e.List(ctx, map[string]string{"agora.test": name})
		for _, found := range list {
			if found.Name == c {
				_ = e.Remove(ctx, found.ID)
			}
		}
	}
	if err := e.RemoveNetwork(ctx, id); err != nil {
		t.Errorf("RemoveNetwork: %v", err)
	}
	if err := e.RemoveNetwork(ctx, id); err != nil {
		t.Errorf("second RemoveNetwork = %v, want nil", err)
	}
}
