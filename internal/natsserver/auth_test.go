package natsserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
)

// TestOperatorModeAdoptsUnauthenticatedStore: a store written by a server
// without authentication keeps its streams when the server is restarted in
// operator mode with AdoptGlobal, and anonymous clients are then refused.
func TestOperatorModeAdoptsUnauthenticatedStore(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	open := natstest.StartWith(t, natsserver.Config{StoreDir: dir})
	_, js := connect(t, open.ClientURL())
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "agora_tasks"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "t-1", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	open.Shutdown()

	ids, err := natsauth.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	closed := natstest.StartWith(t, natsserver.Config{StoreDir: dir, Operator: ids.OperatorJWT,
		SystemAccount: ids.SystemAccount, Accounts: ids.AccountJWTs, AdoptGlobal: ids.Account})
	if nc, err := nats.Connect(closed.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("anonymous connection succeeded, want refused")
	}
	nc, err := nats.Connect(closed.ClientURL(), nats.UserCredentials(ids.Path(natsauth.OrchestratorCredFile)))
	if err != nil {
		t.Fatalf("connect with the orchestrator's credentials: %v", err)
	}
	defer nc.Close()
	js, err = jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err = js.KeyValue(ctx, "agora_tasks")
	if err != nil {
		t.Fatalf("KeyValue(agora_tasks) after turning authentication on: %v", err)
	}
	if e, err := kv.Get(ctx, "t-1"); err != nil || string(e.Value()) != "kept" {
		t.Fatalf("Get(t-1) = %v; want the value stored before", err)
	}
}
