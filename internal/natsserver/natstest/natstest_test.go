package natstest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLoggerDropsLinesAfterCleanup(t *testing.T) {
	var log interface{ Info(string, ...any) }
	t.Run("inner", func(t *testing.T) {
		l := natstest.Logger(t)
		l.Info("during the test")
		log = l
	})
	// The inner test and its cleanups are over: t.Log there would panic.
	log.Info("after the test")
}

func TestStartAndRestartKeepPortAndStore(t *testing.T) {
	t.Parallel()
	s := natstest.Start(t)
	s2 := natstest.Restart(t, s)
	if s2.Port() != s.Port() || s2.Config().StoreDir != s.Config().StoreDir {
		t.Fatalf("Restart: %s in %s, want %s in %s", s2.ClientURL(), s2.Config().StoreDir, s.ClientURL(), s.Config().StoreDir)
	}
	if s2.ClientURL() != s.ClientURL() {
		t.Fatalf("Restart: ClientURL %s, want %s", s2.ClientURL(), s.ClientURL())
	}
}

// TestStartCluster: the nodes are routed to each other and hold a stream
// with a replica on each, and a node restarted on its port and store
// rejoins the cluster.
func TestStartCluster(t *testing.T) {
	t.Parallel()
	c := natstest.StartCluster(t, 3)
	if got := strings.Count(c.URLs(), ",") + 1; got != 3 || len(c.Servers) != 3 {
		t.Fatalf("StartCluster(3): %d servers, URLs %q", len(c.Servers), c.URLs())
	}
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3"}, Replicas: 3})
	if err != nil {
		t.Fatalf("create an R3 stream: %v", err)
	}
	if ci := st.CachedInfo().Cluster; ci == nil || len(ci.Replicas) != 2 || ci.Leader == "" {
		t.Errorf("the R3 stream's cluster info = %+v, want a leader and 2 replicas", ci)
	}
	c.Servers[1] = natstest.Restart(t, c.Servers[1])
	if err := testutil.Poll(ctx, time.Minute, 100*time.Millisecond, func() error {
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		for _, r := range info.Cluster.Replicas {
			if r.Offline || !r.Current {
				return fmt.Errorf("replica %s offline %v current %v", r.Name, r.Offline, r.Current)
			}
		}
		return nil
	}); err != nil {
		t.Errorf("after a restart of node 1 the R3 stream's replicas did not come back: %v", err)
	}
}
