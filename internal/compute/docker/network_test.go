package docker_test

import (
	"bytes"
	"context"
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
