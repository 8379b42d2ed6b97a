package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// egressFixture is the outside world of an egress test: an uplink network
// of its own (the proxy's way out, in place of the engine's bridge) with
// two tiny HTTP servers on it, "listed" and "unlisted", each answering its
// own name. Only the proxy, joined to the uplink, resolves their names
// (Docker's DNS on that network) and reaches them.
type egressFixture struct {
	uplink           string
	listed, unlisted string // container names: the hosts' names
	listedIP         string
	// hostService is a service of the host on the engine's bridge
	// address (where a bridged container reaches the host), host:port.
	hostService string
}

func newEgressFixture(t *testing.T, eng *docker.Engine) egressFixture {
	t.Helper()
	ctx := context.Background()
	n := seq.Add(1)
	f := egressFixture{
		uplink:   fmt.Sprintf("agora-egress-uplink-%d-%d", testutil.RunNumber(), n),
		listed:   fmt.Sprintf("listed-%d-%d", testutil.RunNumber(), n),
		unlisted: fmt.Sprintf("unlisted-%d-%d", testutil.RunNumber(), n),
	}
	netID, err := eng.CreateNetwork(ctx, compute.NetworkSpec{Name: f.uplink, Labels: map[string]string{"agora.test": t.Name()}})
	if err != nil {
		t.Fatalf("create the uplink network: %v", err)
	}
	t.Cleanup(func() {
		if err := eng.RemoveNetwork(context.Background(), netID); err != nil {
			t.Errorf("remove the uplink network: %v", err)
		}
	})
	for _, name := range []string{f.listed, f.unlisted} {
		id, err := eng.Create(ctx, compute.ContainerSpec{
			Name: name, Image: workerImage, User: ContainerUser, Network: f.uplink,
			Entrypoint: []string{"/bin/sh", "-c", `mkdir -p /tmp/www && echo "hello from ` + name + `" > /tmp/www/index.html && hostname -i && exec httpd -f -p 8080 -h /tmp/www`},
			Labels:     map[string]string{"agora.test": t.Name()},
			Resources:  compute.Resources{MemoryBytes: 64 << 20, PidsLimit: 64},
		})
		if err != nil {
			t.Fatalf("create server %s: %v", name, err)
		}
		t.Cleanup(func() {
			if err := eng.Remove(context.Background(), id); err != nil {
				t.Errorf("remove server %s: %v", name, err)
			}
		})
		if err := eng.Start(ctx, id); err != nil {
			t.Fatalf("start server %s: %v", name, err)
		}
		if name != f.listed {
			continue
		}
		testutil.Eventually(t, time.Minute, "the listed server's address", func() bool {
			var out bytes.Buffer
			_ = eng.Logs(ctx, id, false, &out, io.Discard)
			f.listedIP = strings.TrimSpace(out.String())
			return f.listedIP != ""
		})
	}
	gw, err := eng.BridgeGateway(ctx)
	if err != nil {
		t.Fatalf("BridgeGateway: %v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw.String(), "0"))
	if err != nil {
		t.Fatalf("listen on the bridge gateway: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("host service\n"))
			_ = c.Close()
		}
	}()
	f.hostService = ln.Addr().String()
	return f
}

// probeScript is what the sub-agent tries: each line of its output says
// what one attempt got.
func (f egressFixture) probeScript() string {
	return fmt.Sprintf(`
echo "listed: $(timeout 10 wget -q -O- http://%[1]s:8080/ 2>&1)"
echo "unlisted: $(printf 'GET http://%[2]s:8080/ HTTP/1.1\r\nHost: %[2]s:8080\r\n\r\n' | timeout 10 nc agora-egress-proxy 3128 | head -1)"
echo "raw-ip: $(printf 'GET http://%[3]s:8080/ HTTP/1.1\r\nHost: %[3]s:8080\r\n\r\n' | timeout 10 nc agora-egress-proxy 3128 | head -1)"
echo "connect-unlisted: $(printf 'CONNECT %[2]s:8080 HTTP/1.1\r\nHost: %[2]s:8080\r\n\r\n' | timeout 10 nc agora-egress-proxy 3128 | head -1)"
echo "connect-listed-other-port: $(printf 'CONNECT %[1]s:22 HTTP/1.1\r\nHost: %[1]s:22\r\n\r\n' | timeout 10 nc agora-egress-proxy 3128 | head -1)"
echo "connect-listed: $(printf 'CONNECT %[1]s:8080 HTTP/1.1\r\nHost: %[1]s:8080\r\n\r\nGET / HTTP/1.0\r\n\r\n' | timeout 10 nc agora-egress-proxy 3128 | tr -d '\r' | tr '\n' ' ')"
if printf 'GET / HTTP/1.0\r\n\r\n' | timeout 10 nc %[3]s 8080 >/tmp/direct 2>&1; then echo "direct: connected $(head -1 /tmp/direct)"; else echo "direct: refused $(head -1 /tmp/direct)"; fi
host=%[4]s
if timeout 10 nc ${host%%:*} ${host##*:} </dev/null >/tmp/host 2>&1; then echo "host-bridge: connected $(head -1 /tmp/host)"; else echo "host-bridge: refused $(head -1 /tmp/host)"; fi
gw=$(ip route | awk '/^default/ {print $3}')
if timeout 10 nc $gw ${host##*:} </dev/null >/tmp/host 2>&1; then echo "host-gateway: connected $gw $(head -1 /tmp/host)"; else echo "host-gateway: refused $gw $(head -1 /tmp/host)"; fi
if timeout 5 nslookup %[1]s >/tmp/dns 2>&1; then echo "dns: resolved"; else echo "dns: failed"; fi
`, f.listed, f.unlisted, f.listedIP, f.hostService)
}

// checkProbe checks the probe's output line by line.
func (f egressFixture) checkProbe(t *testing.T, out string) {
	t.Helper()
	want := map[string][]string{
		"listed":                    {"hello from " + f.listed},
		"unlisted":                  {"403 Forbidden"},
		"raw-ip":                    {"403 Forbidden"},
		"connect-unlisted":          {"403 Forbidden"},
		"connect-listed-other-port": {"403 Forbidden"},
		"connect-listed":            {"200 Connection established", "hello from " + f.listed},
		"direct":                    {"refused"},
		"host-bridge":               {"refused"},
		"host-gateway":              {"refused"},
		"dns":                       {"failed"},
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			if _, known := want[k]; known {
				got[k] = v
			}
		}
	}
	for k, ws := range want {
		for _, w := range ws {
			if !strings.Contains(got[k], w) {
				t.Errorf("%s: got %q, want it to say %q\n(output:\n%s)", k, got[k], w, out)
			}
		}
	}
}

func egressRequest(f egressFixture, script string) schemas.DispatchRequest {
	req := request(script)
	req.Network = schemas.NetworkEgress
	req.Egress = []string{f.listed + ":8080"}
	return req
}

// noEgressLeft: the runner removed every proxy and network it made.
func (h *harness) noEgressLeft() {
	h.t.Helper()
	ctx := context.Background()
	mine := map[string]string{LabelEgressRunner: h.cfg.ID}
	testutil.Eventually(h.t, time.Minute, "the egress proxy and network to be removed", func() bool {
		cs, err := h.docker.List(ctx, mine)
		ns, nerr := h.docker.ListNetworks(ctx, mine)
		return err == nil && nerr == nil && len(cs) == 0 && len(ns) == 0
	})
}

// TestEgressAllowList: from inside a real container on network egress,
// the listed host is reached through the proxy (http and CONNECT); an
// unlisted name, a raw IP and a listed name on another port get 403 from
// the proxy; a connection straight to the listed host's address fails,
// and so does a DNS lookup. The denials are counted and written into the
// dispatch's output; proxy and network are gone once it settles.
func TestEgressAllowList(t *testing.T) {
	t.Parallel()
	var f egressFixture
	h := newHarness(t, nil)
	f = newEgressFixture(t, h.docker)
	h.cfg.EgressUplink = f.uplink
	r := h.start()

	req := egressRequest(f, f.probeScript())
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, 3*time.Minute)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("terminal = %s %+v, want finished", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
	out := h.output(req.Spec.DispatchID)
	t.Logf("what the sub-agent saw:\n%s", out)
	f.checkProbe(t, out)
	// unlisted, raw IP, CONNECT unlisted, CONNECT to another port.
	testutil.Eventually(t, 10*time.Second, "four denials counted", func() bool { return r.EgressDenied() == 4 })
	for _, want := range []string{"agora: egress denied: GET " + f.unlisted + ":8080 (not-listed)", "(ip-address)", "(port-not-allowed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	h.noEgressLeft()
}

// TestEgressAdoptedAfterRestart: a runner that stops leaves the sub-agent
// and its proxy running; the next process adopts the dispatch, the proxy
// still relays, and both proxy and network go when it settles.
func TestEgressAdoptedAfterRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	f := newEgressFixture(t, h.docker)
	h.cfg.EgressUplink = f.uplink
	first := h.start()
	req := egressRequest(f, fmt.Sprintf(`touch /workspace/ready; while [ ! -e /workspace/go ]; do sleep 0.05; done
echo "listed: $(timeout 10 wget -q -O- http://%s:8080/ 2>&1)"`, f.listed))
	h.enqueue(req)
	ws := h.awaitReady(req.Spec.DispatchID)
	h.stop(first)
	second := h.start()
	testutil.Eventually(t, time.Minute, "the second runner to adopt", func() bool { return second.lookup(req.Spec.DispatchID) != nil })
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("adopted dispatch ended %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
	if out := h.output(req.Spec.DispatchID); !strings.Contains(out, "listed: hello from") {
		t.Errorf("output = %q, want the listed host reached after the restart", out)
	}
	h.noEgressLeft()
}

// TestEgressSweptWithoutContainer: a proxy and network whose dispatch
// never got its container (the runner stopped in between) are removed
// when the next runner process starts.
func TestEgressSweptWithoutContainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	f := newEgressFixture(t, h.docker)
	h.cfg.EgressUplink = f.uplink
	before, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := egressRequest(f, "true")
	d := &dispatch{r: before, id: req.Spec.DispatchID, req: &req, log: before.log}
	if err := d.prepareEgress(context.Background()); err != nil {
		t.Fatalf("prepareEgress: %v", err)
	}
	mine := map[string]string{LabelEgressRunner: h.cfg.ID}
	if cs, _ := h.docker.List(context.Background(), mine); len(cs) != 1 || !cs[0].Running() {
		t.Fatalf("egress proxies = %+v, want one running", cs)
	}
	h.start()
	h.noEgressLeft()
}

// TestEgressProxyThatDoesNotListen: a proxy that exits before it listens
// (an old worker image without egress-proxy, say) fails the preparation
// with what it printed, instead of starting a sub-agent with no way out.
func TestEgressProxyThatDoesNotListen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := h.docker.Create(ctx, compute.ContainerSpec{Image: workerImage, User: ContainerUser,
		Entrypoint: []string{"/bin/sh", "-c", `echo 'agora-worker: unknown command "egress-proxy"' >&2; exit 2`},
		Labels:     map[string]string{"agora.test": t.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.docker.Remove(context.Background(), id) })
	if err := h.docker.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	err = r.awaitProxy(ctx, id)
	if err == nil || !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), `unknown command "egress-proxy"`) {
		t.Errorf("awaitProxy = %v; want it to say the proxy exited, with its output", err)
	}
}
