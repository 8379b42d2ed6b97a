package natsserver_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("nats.Connect(%s): %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return nc, js
}

func TestStartServesJetStreamAndShutdownIsIdempotent(t *testing.T) {
	t.Parallel()
	s := natstest.Start(t)
	if got := s.ClientURL(); !strings.HasPrefix(got, "nats://127.0.0.1:") || s.Port() == 0 {
		t.Fatalf("ClientURL() = %q, Port() = %d; want nats://127.0.0.1:<port>, port > 0", got, s.Port())
	}
	if got, want := s.ClientURL(), "nats://127.0.0.1:"+strconv.Itoa(s.Port()); got != want {
		t.Fatalf("ClientURL() = %q, want %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js := connect(t, s.ClientURL())
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("AccountInfo: %v (JetStream not enabled?)", err)
	}

	s.Shutdown()
	s.Shutdown() // idempotent
	if _, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port())), time.Second); err == nil {
		t.Fatalf("dial %d after Shutdown succeeded, want refused", s.Port())
	}
	nc.Close()
}

func TestShutdownConcurrentCallsAllWait(t *testing.T) {
	t.Parallel()
	s := natstest.Start(t)
	done := make(chan struct{})
	for range 3 {
		go func() {
			s.Shutdown()
			done <- struct{}{}
		}()
	}
	for range 3 {
		<-done
	}
	if _, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port())), time.Second); err == nil {
		t.Fatalf("dial %d after Shutdown returned succeeded, want refused", s.Port())
	}
}

func TestRandomPortsDiffer(t *testing.T) {
	t.Parallel()
	a, b := natstest.Start(t), natstest.Start(t)
	if a.Port() == b.Port() {
		t.Fatalf("two servers on port %d, want different random ports", a.Port())
	}
	if a.Config().StoreDir == b.Config().StoreDir {
		t.Fatalf("two servers share store dir %s", a.Config().StoreDir)
	}
}

func TestRestartOnSameStoreKeepsStreamData(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := natstest.Start(t)
	nc, js := connect(t, s.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "DURABLE", Subjects: []string{"durable.>"}, Storage: jetstream.FileStorage,
	}); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	for i := range 3 {
		if _, err := js.Publish(ctx, "durable.x", []byte(strconv.Itoa(i))); err != nil {
			t.Fatalf("Publish %d: %v", i, err)
		}
	}
	nc.Close()

	port, dir := s.Port(), s.Config().StoreDir
	s2 := natstest.Restart(t, s)
	if s2.Port() != port || s2.Config().StoreDir != dir {
		t.Fatalf("Restart: port %d store %s, want port %d store %s", s2.Port(), s2.Config().StoreDir, port, dir)
	}
	_, js2 := connect(t, s2.ClientURL())
	st, err := js2.Stream(ctx, "DURABLE")
	if err != nil {
		t.Fatalf("Stream(DURABLE) after restart: %v", err)
	}
	if got := st.CachedInfo().State.Msgs; got != 3 {
		t.Fatalf("stream DURABLE holds %d messages after restart, want 3", got)
	}
	msg, err := st.GetMsg(ctx, 3)
	if err != nil {
		t.Fatalf("GetMsg(3): %v", err)
	}
	if string(msg.Data) != "2" {
		t.Fatalf("message 3 = %q, want %q", msg.Data, "2")
	}
}

func TestStartFailsFastWhenPortIsTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	start := time.Now()
	s, err := natsserver.Start(context.Background(), natsserver.Config{
		StoreDir: t.TempDir(), Port: port, Logger: natstest.Logger(t), ReadyTimeout: 30 * time.Second,
	})
	if err == nil {
		s.Shutdown()
		t.Fatalf("Start on taken port %d succeeded, want error", port)
	}
	if !strings.Contains(err.Error(), "listening") {
		t.Errorf("Start on taken port: error %q does not say it could not listen", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Start on taken port took %s, want a fast failure, not the ready timeout", elapsed)
	}
}

func TestStartHonoursCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stopped by test")
	cancel(stop)
	_, err := natsserver.Start(ctx, natsserver.Config{StoreDir: t.TempDir(), Logger: natstest.Logger(t)})
	if !errors.Is(err, stop) {
		t.Fatalf("Start with cancelled ctx: err = %v, want %v", err, stop)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	d := natsserver.Config{StoreDir: "/x"}.WithDefaults()
	if d.Host != natsserver.DefaultHost || d.Logger == nil || d.ReadyTimeout != natsserver.DefaultReadyTimeout || d.Port != 0 {
		t.Errorf("WithDefaults() = %+v, want host %s, a logger, ready timeout %s, port 0",
			d, natsserver.DefaultHost, natsserver.DefaultReadyTimeout)
	}
	for _, tc := range []struct {
		name string
		cfg  natsserver.Config
		want string // substring of the error; "" means valid
	}{
		{"valid", natsserver.Config{StoreDir: "/x"}, ""},
		{"random port -1", natsserver.Config{StoreDir: "/x", Port: -1}, ""},
		{"no store dir", natsserver.Config{}, "store dir"},
		{"negative port", natsserver.Config{StoreDir: "/x", Port: -2}, "port -2"},
		{"port too big", natsserver.Config{StoreDir: "/x", Port: 65536}, "port 65536"},
		{"cluster node", natsserver.Config{StoreDir: "/x", ServerName: "n0", Cluster: natsserver.ClusterConfig{Name: "c", Port: 6222}}, ""},
		{"cluster without a port", natsserver.Config{StoreDir: "/x", ServerName: "n0", Cluster: natsserver.ClusterConfig{Name: "c"}}, "cluster port 0"},
		{"cluster node without a name", natsserver.Config{StoreDir: "/x", Cluster: natsserver.ClusterConfig{Name: "c", Port: 6222}}, "server name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.WithDefaults().Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
