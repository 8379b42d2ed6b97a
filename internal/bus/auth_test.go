package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/schemas"
)

const tasksBucket = "agora_tasks"

// orchestratorBus connects with the orchestrator's credentials, with the
// event stream and the tasks bucket ready.
func orchestratorBus(t *testing.T, url string, ids *natsauth.Identities) (*bus.Bus, *bus.KV) {
	t.Helper()
	b := connect(t, url, bus.Options{Auth: bus.Auth{CredsFile: ids.Path(natsauth.OrchestratorCredFile)}})
	if !b.Connected() {
		t.Fatal("orchestrator credentials: not connected")
	}
	ctx := testCtx(t)
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatalf("EnsureEventStream: %v", err)
	}
	kv, err := b.KeyValue(ctx, tasksBucket, "tasks")
	if err != nil {
		t.Fatalf("KeyValue: %v", err)
	}
	if _, err := kv.Put(ctx, "t-1", []byte(`{"state":"needs_input"}`)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	return b, kv
}

// TestNoCredentialsRefused: a process on the host's loopback without
// credentials can neither connect, forge an event nor write a task.
func TestNoCredentialsRefused(t *testing.T) {
	t.Parallel()
	srv, ids := natstest.StartAuth(t)
	orch, kv := orchestratorBus(t, srv.ClientURL(), ids)
	ctx := testCtx(t)

	if nc, err := nats.Connect(srv.ClientURL(), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Fatal("anonymous nats.Connect succeeded, want an authorization violation")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("anonymous nats.Connect: %v, want an authorization violation", err)
	}

	anon := connect(t, srv.ClientURL(), bus.Options{PublishTimeout: time.Second})
	forged := needsInput("d-1")
	if _, err := anon.PublishEvent(ctx, forged); err == nil {
		t.Fatal("anonymous PublishEvent(needs_input) succeeded, want refused")
	}
	if _, err := anon.KeyValue(refusedCtx(t), tasksBucket, "tasks"); err == nil {
		t.Fatal("anonymous KeyValue(agora_tasks) succeeded, want refused")
	}
	if evs, err := orch.StoredEvents(ctx, "d-1"); err != nil || len(evs) != 0 {
		t.Fatalf("StoredEvents(d-1) = %d events, %v; want none", len(evs), err)
	}
	if v, _, err := kv.Get(ctx, "t-1"); err != nil || string(v) != `{"state":"needs_input"}` {
		t.Fatalf("Get(t-1) = %s, %v; want the orchestrator's value", v, err)
	}
}

// refusedCtx bounds a request the server drops for lack of permission: it
// is never answered.
func refusedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// workerConn is a raw connection with a worker's credentials, reporting
// permission errors on subscribe as errors.
func workerConn(t *testing.T, url, id string, creds []byte) (*nats.Conn, <-chan error) {
	t.Helper()
	tok, err := jwtAndSeed(creds)
	if err != nil {
		t.Fatal(err)
	}
	asyncErrs := make(chan error, 16)
	nc, err := nats.Connect(url, nats.UserJWTAndSeed(tok[0], tok[1]), nats.CustomInboxPrefix(bus.WorkerInboxPrefix(id)),
		nats.PermissionErrOnSubscribe(true),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case asyncErrs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect with %s's credentials: %v", id, err)
	}
	t.Cleanup(nc.Close)
	return nc, asyncErrs
}

// TestWorkerCredentialsScoped: a worker's credentials publish its own
// dispatch's events, and nothing of another dispatch, of the tasks bucket or
// of the logs.
func TestWorkerCredentialsScoped(t *testing.T) {
	t.Parallel()
	srv, ids := natstest.StartAuth(t)
	orch, kv := orchestratorBus(t, srv.ClientURL(), ids)
	ctx := testCtx(t)
	signer, err := ids.LoadSigner()
	if err != nil {
		t.Fatal(err)
	}
	creds, err := signer.Worker("d-1", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatalf("Worker(d-1): %v", err)
	}
	w := connect(t, srv.ClientURL(), bus.Options{Auth: bus.Auth{Creds: creds},
		InboxPrefix: bus.WorkerInboxPrefix("d-1"), PublishTimeout: time.Second})
	if !w.Connected() {
		t.Fatal("worker credentials: not connected")
	}
	if _, err := w.PublishEvent(ctx, started("d-1")); err != nil {
		t.Fatalf("worker d-1 PublishEvent(d-1): %v", err)
	}
	if _, err := w.PublishEvent(ctx, finished("d-2")); err == nil {
		t.Fatal("worker d-1 PublishEvent(d-2) succeeded, want refused")
	}
	if evs, err := orch.StoredEvents(ctx, "d-2"); err != nil || len(evs) != 0 {
		t.Fatalf("StoredEvents(d-2) = %d events, %v; want none", len(evs), err)
	}
	if evs, err := orch.Events(ctx, "d-1"); err != nil || len(evs) != 1 || evs[0].Kind != schemas.KindStarted {
		t.Fatalf("Events(d-1) = %v, %v; want its started event", evs, err)
	}
	if _, err := w.KeyValue(refusedCtx(t), tasksBucket, "tasks"); err == nil {
		t.Fatal("worker KeyValue(agora_tasks) succeeded, want refused")
	}
	if v, _, err := kv.Get(ctx, "t-1"); err != nil || string(v) != `{"state":"needs_input"}` {
		t.Fatalf("Get(t-1) = %s, %v; want the orchestrator's value", v, err)
	}

	nc, asyncErrs := workerConn(t, srv.ClientURL(), "d-1", creds)
	if err := nc.Publish(bus.LogSubject("d-1"), []byte("line")); err != nil {
		t.Fatalf("publish own log: %v", err)
	}
	sub, err := nc.SubscribeSync("agora.logs.>")
	if err != nil {
		t.Fatalf("SubscribeSync: %v", err)
	}
	if _, err := sub.NextMsg(5 * time.Second); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("subscribe agora.logs.>: NextMsg error %v, want a permission violation", err)
	}
	if err := nc.Publish("$JS.API.STREAM.DELETE."+bus.EventStream, nil); err != nil {
		t.Fatalf("publish: %v", err)
	}
	select {
	case err := <-asyncErrs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("publish $JS.API.STREAM.DELETE: async error %v, want a permission violation", err)
		}
	case <-ctx.Done():
		t.Fatal("publish $JS.API.STREAM.DELETE: no permission violation")
	}
}

// TestWorkerCredentialsExpire: expired worker credentials are refused, and
// a connection is closed when its credentials expire.
func TestWorkerCredentialsExpire(t *testing.T) {
	t.Parallel()
	srv, ids := natstest.StartAuth(t)
	signer, err := ids.LoadSigner()
	if err != nil {
		t.Fatal(err)
	}
	old, err := signer.Worker("d-1", time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwtAndSeed(old)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(srv.ClientURL(), nats.UserJWTAndSeed(tok[0], tok[1])); err == nil {
		nc.Close()
		t.Fatal("connect with expired credentials succeeded, want refused")
	}

	soon, err := signer.Worker("d-1", time.Now().Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tok, err = jwtAndSeed(soon)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(srv.ClientURL(), nats.UserJWTAndSeed(tok[0], tok[1]), nats.NoReconnect(),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}), // the expiry is expected
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatalf("connect with credentials valid for 2s: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("connection still open 10s after its credentials expired")
	}
}

// jwtAndSeed splits a creds file's contents.
func jwtAndSeed(creds []byte) ([2]string, error) {
	tok, err := nkeys.ParseDecoratedJWT(creds)
	if err != nil {
		return [2]string{}, err
	}
	kp, err := nkeys.ParseDecoratedUserNKey(creds)
	if err != nil {
		return [2]string{}, err
	}
	seed, err := kp.Seed()
	return [2]string{tok, string(seed)}, err
}
