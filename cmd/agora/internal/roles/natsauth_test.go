package roles

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestEmbeddedNATSRequiresCredentials: serve's embedded NATS refuses a
// loopback process without credentials (no forged event, no task written),
// and keeps the orchestrator's and the runner's identities in the data dir,
// 0600; the runner's are good for a runner on another process, but do not
// write the orchestrator's buckets.
func TestEmbeddedNATSRequiresCredentials(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	s, err := Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0", Orchestrator: true, Logger: natstest.Logger(t), WrapHTTP: checkAPI(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })

	if nc, err := nats.Connect(s.NATSURL(), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Fatal("anonymous connection to the embedded NATS succeeded, want an authorization violation")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("anonymous connection: %v, want an authorization violation", err)
	}

	authDir := filepath.Join(dir, "nats-auth")
	if got := s.NATSCredsDir(); got != authDir {
		t.Errorf("NATSCredsDir() = %q, want %q", got, authDir)
	}
	// A runner on another process gets its own user from the same
	// identities (agora nats-auth init DIR --runner ID).
	if _, _, err := natsauth.Init(authDir, []string{"other"}, natsauth.Limits{}); err != nil {
		t.Fatal(err)
	}
	runnerCreds := natsauth.RunnerCredsFile("other")
	for _, name := range []string{natsauth.OrchestratorCredFile, runnerCreds, natsauth.WorkerSignerFile} {
		fi, err := os.Stat(filepath.Join(authDir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want a 0600 file", name, fi, err)
		}
	}
	b, err := bus.Connect(ctx, s.NATSURL(), bus.Options{Auth: bus.Auth{CredsFile: filepath.Join(authDir, runnerCreds)},
		InboxPrefix: bus.RunnerInboxPrefix("other")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Connected() {
		t.Fatal("the runner's credentials: not connected")
	}
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatalf("EnsureEventStream with the runner's credentials: %v", err)
	}

	// The runner may not write the orchestrator's buckets.
	want := []string{orchestrator.TaskBucket, orchestrator.IndexBucket, orchestrator.MemoryBucket, orchestrator.ParkedBucket, registry.Bucket, slackanswer.Bucket, orchestrator.SessionBucket, orchestrator.RulesBucket, orchestrator.TaskIndexBucket}
	if !slices.Equal(natsauth.OrchestratorBuckets, want) {
		t.Fatalf("natsauth.OrchestratorBuckets = %v, want the orchestrator's %v", natsauth.OrchestratorBuckets, want)
	}
	js := func(creds, inbox string) jetstream.JetStream {
		opts := []nats.Option{nats.UserCredentials(filepath.Join(authDir, creds)),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})} // the violation is expected
		if inbox != "" {
			opts = append(opts, nats.CustomInboxPrefix(inbox))
		}
		nc, err := nats.Connect(s.NATSURL(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	put := func(js jetstream.JetStream) error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.Publish(pctx, "$KV."+orchestrator.TaskBucket+".t-forged", []byte(`{"state":"finished"}`))
		return err
	}
	// Nor read them (issue 20, finding 5): not the tasks, not the memory,
	// not the task index snapshot (it holds the open tasks).
	read := func(js jetstream.JetStream, bucket string) error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		kv, err := js.KeyValue(pctx, bucket)
		if err != nil {
			return err
		}
		_, err = kv.Get(pctx, "t-forged")
		return err
	}
	runnerJS, orchJS := js(runnerCreds, bus.RunnerInboxPrefix("other")), js(natsauth.OrchestratorCredFile, "")
	if err := put(runnerJS); err == nil {
		t.Error("the runner's credentials wrote agora_tasks, want refused")
	}
	if err := put(orchJS); err != nil {
		t.Errorf("the orchestrator's credentials: write agora_tasks: %v", err)
	}
	for _, bucket := range []string{orchestrator.TaskBucket, orchestrator.MemoryBucket, orchestrator.RulesBucket, orchestrator.TaskIndexBucket} {
		if err := read(runnerJS, bucket); err == nil {
			t.Errorf("the runner's credentials read %s, want refused", bucket)
		}
	}
	if err := read(orchJS, orchestrator.TaskBucket); err != nil {
		t.Errorf("the orchestrator's credentials: read agora_tasks: %v", err)
	}
}

// TestForgedRunnerEventRefused (issue 20, finding 5): with another
// runner's credentials, a dispatch.finished for a dispatch this stack's
// runner is running is stored on that runner's subject, refused by the
// orchestrator (the claim is not its), parked — and the task keeps
// running until its own runner finishes it.
func TestForgedRunnerEventRefused(t *testing.T) {
	testenv.NeedDocker(t, workerImage, dockerErr)
	ctx := context.Background()
	dir := t.TempDir()
	s := start(t, Config{DataDir: dir, Listen: "127.0.0.1:0", Orchestrator: true, Runner: true,
		Slots: 1, Image: workerImage, Logger: natstest.Logger(t)})
	c := client.New(s.URL(), "")
	// Runs long enough for the forged event to land mid-run.
	task, err := c.Submit(ctx, wire.SubmitRequest{TaskID: "long", Subagent: subagent("long", "sleep 6; echo done-by-its-runner")})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	testutil.Eventually(t, 2*time.Minute, "the task to run", func() bool {
		got, err := c.Get(ctx, task.ID)
		return err == nil && got.State == wire.StateRunning
	})
	got, err := c.Get(ctx, task.ID)
	if err != nil || len(got.Rounds) != 1 {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	dispatchID := got.Rounds[0].DispatchID

	authDir := filepath.Join(dir, "nats-auth")
	if _, _, err := natsauth.Init(authDir, []string{"intruder"}, natsauth.Limits{}); err != nil {
		t.Fatal(err)
	}
	ib, err := bus.Connect(ctx, s.NATSURL(), bus.Options{Auth: bus.Auth{CredsFile: filepath.Join(authDir, natsauth.RunnerCredsFile("intruder"))},
		InboxPrefix: bus.RunnerInboxPrefix("intruder"), Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ib.Close()
	intruder, err := ib.AsRunner("intruder")
	if err != nil {
		t.Fatal(err)
	}
	zero, ms := 0, int64(1)
	forged := schemas.Event{Kind: schemas.KindFinished, DispatchID: dispatchID, TaskID: task.ID, Round: 1, Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms}
	if _, err := intruder.PublishEvent(ctx, forged); err != nil {
		t.Fatalf("the intruder's publish on its own subject: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, "the forged event parked", func() bool {
		parked, _, err := c.ParkedEvents(ctx)
		return err == nil && len(parked) == 1
	})
	parked, _, _ := c.ParkedEvents(ctx)
	if p := parked[0]; p.DispatchID != dispatchID || p.Kind != schemas.KindFinished || !strings.Contains(p.Error, "does not hold the dispatch's claim") {
		t.Errorf("parked = %+v; want the intruder's finished, refused for the claim", p)
	}
	if got, err := c.Get(ctx, task.ID); err != nil || got.State != wire.StateRunning {
		t.Fatalf("task after the forged finished: %s, %v; want still running", got.State, err)
	}
	done := wait(t, c, task.ID, wire.StateFinished)
	var out strings.Builder
	if err := c.Logs(ctx, done.ID, 1, false, &out); err != nil || !strings.Contains(out.String(), "done-by-its-runner") {
		t.Errorf("output = %q, %v; want its own runner's run", out.String(), err)
	}
}

// TestAnonymousBus (issue 20, finding 9): on an external NATS that lets
// anonymous clients in, a role given credentials refuses to start unless
// allowed, and one without credentials starts with a loud warning; a
// runner refuses another runner's credentials; S3 storage whose bucket does
// not exist fails the start, naming it; a runner's worker signing key that
// is not there fails it too, and workers sent to NATS on loopback are
// warned about.
func TestAnonymousBus(t *testing.T) {
	t.Parallel()
	open := natstest.Start(t).ClientURL()
	ids, err := natsauth.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	orchCreds := bus.Auth{CredsFile: ids.Path(natsauth.OrchestratorCredFile)}
	otherRunner, err := ids.RunnerCreds("someone-else", natsauth.RunnerCredsFile("someone-else"))
	if err != nil {
		t.Fatal(err)
	}
	backend := s3mem.New()
	if err := backend.CreateBucket("there"); err != nil {
		t.Fatal(err)
	}
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3srv.Close)
	awsEnv := []string{"AWS_ACCESS_KEY_ID=fake", "AWS_SECRET_ACCESS_KEY=fake", "AWS_REGION=us-east-1"}
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string // "" starts
		wantLog string
	}{
		{name: "credentials on an open bus", cfg: Config{NATSAuth: orchCreds, Orchestrator: true},
			wantErr: "lets clients in without credentials"},
		{name: "credentials on an open bus, allowed", cfg: Config{NATSAuth: orchCreds, NATSAllowAnonymous: true, Orchestrator: true},
			wantLog: "NATS LETS ANYONE IN"},
		{name: "no credentials on an open bus", cfg: Config{Orchestrator: true}, wantLog: "NATS LETS ANYONE IN"},
		{name: "another runner's credentials", cfg: Config{NATSAuth: bus.Auth{CredsFile: otherRunner}, Runner: true, RunnerID: "me", Image: "unused"},
			wantErr: `runner "someone-else"'s, not this runner's (--id me)`},
		{name: "workers told to reach NATS on loopback", cfg: Config{NATSAuth: bus.Auth{CredsFile: otherRunner}, Runner: true, RunnerID: "me", Image: "unused",
			WorkerNATSURL: "nats://127.0.0.1:4222"},
			wantErr: "not this runner's", wantLog: "--worker-nats names a loopback address, which containers cannot reach"},
		{name: "a worker signing key that is not there", cfg: Config{Runner: true, RunnerID: "me", Image: "unused",
			WorkerNATSSignerFile: "/nonexistent/worker-signer.nk"},
			wantErr: "worker signing key: open /nonexistent/worker-signer.nk"},
		{name: "a runner id that cannot end a subject", cfg: Config{Runner: true, RunnerID: "a b", Image: "unused"},
			wantErr: "must not contain '*', '>' or white space: it ends the runner's NATS subjects (--id)"},
		{name: "a bucket that does not exist", cfg: Config{Orchestrator: true, NoStorage: false, AWSEnv: awsEnv,
			StorageURI: "s3://not-there/agora?endpoint=" + s3srv.URL + "&path_style=true"},
			wantErr: "bucket s3://not-there: the bucket does not exist: create it (e.g. aws s3 mb s3://not-there)"},
		{name: "a bucket that exists", cfg: Config{Orchestrator: true, AWSEnv: awsEnv,
			StorageURI: "s3://there/agora?endpoint=" + s3srv.URL + "&path_style=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testutil.Buffer
			cfg := tc.cfg
			cfg.DataDir, cfg.NATSURL, cfg.Listen = t.TempDir(), open, "127.0.0.1:0"
			cfg.NoStorage = cfg.StorageURI == "" && !cfg.Runner
			if cfg.Runner && cfg.StorageURI == "" {
				cfg.StorageURI = "file://" + t.TempDir()
			}
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.WrapHTTP = checkAPI(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := Start(ctx, cfg)
			if err == nil {
				defer func() { _ = s.Stop(context.Background()) }()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Start: %v; want it started", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Start = %v; want an error with %q", err, tc.wantErr)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("logs lack %q:\n%s", tc.wantLog, logs.String())
			}
		})
	}
}
