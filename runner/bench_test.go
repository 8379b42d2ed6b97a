package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
)

// BenchmarkDispatchOverhead measures, side by side in one run on the same
// image, a no-op dispatch through agora (enqueue → claimed → container
// created, started, output relayed → terminal event → settled, container
// removed, request acknowledged) against a bare create/start/wait/remove of
// the same container spec, one at a time and parallel. It logs a table;
// docs/benchmarks.md records the numbers.
//
//	go test -run '^$' -bench DispatchOverhead -benchtime 20x ./runner
func BenchmarkDispatchOverhead(b *testing.B) {
	if dockerErr != nil || workerImage == "" {
		if os.Getenv("CI") == "true" {
			b.Fatalf("Docker engine required under CI=true: %v", dockerErr)
		}
		b.Skipf("no Docker engine: %v", dockerErr)
	}
	const parallel = 4
	ctx := context.Background()
	srv := natstest.Start(b)
	bs, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer bs.Close()
	storeDir := b.TempDir()
	store, err := storage.Open(ctx, "file://"+storeDir, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := docker.New(docker.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	cfg := Config{ID: fmt.Sprintf("bench-%d", testutil.RunNumber()), Slots: parallel, Image: workerImage, DataDir: b.TempDir(),
		StorageURI: "file://" + storeDir, Store: store, Bus: bs, Engine: eng, Grace: 3 * time.Second}
	r, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer r.Stop(ctx)

	var mu sync.Mutex
	terminal := map[string]chan struct{}{}
	stop, err := bs.SubscribeEvents("", func(ev schemas.Event) {
		if !ev.Kind.Terminal() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ch, ok := terminal[ev.DispatchID]; ok {
			close(ch)
			delete(terminal, ev.DispatchID)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()

	var n int
	noop := func() schemas.DispatchRequest {
		n++
		return schemas.DispatchRequest{Spec: schemas.DispatchSpec{
			DispatchID: fmt.Sprintf("bench-%d-%d", testutil.RunNumber(), n),
			Subagent:   schemas.Subagent{Name: "noop", Runtime: schemas.RuntimeExec, Command: []string{"true"}},
		}}
	}
	// throughAgora runs reqs through the queue and returns when every one is
	// settled (terminal event stored, container removed, request acked).
	throughAgora := func(reqs []schemas.DispatchRequest) time.Duration {
		began := time.Now()
		var waits []chan struct{}
		for _, req := range reqs {
			ch := make(chan struct{})
			mu.Lock()
			terminal[req.Spec.DispatchID] = ch
			mu.Unlock()
			waits = append(waits, ch)
			if _, err := bs.Enqueue(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		for i, ch := range waits {
			select {
			case <-ch:
			case <-time.After(2 * time.Minute):
				b.Fatalf("no terminal event for %s", reqs[i].Spec.DispatchID)
			}
			for r.lookup(reqs[i].Spec.DispatchID) != nil {
				time.Sleep(200 * time.Microsecond)
			}
		}
		return time.Since(began)
	}
	// bare runs the same container specs straight on the engine.
	bare := func(reqs []schemas.DispatchRequest) time.Duration {
		dirs := make([]hostPaths, len(reqs))
		for i, req := range reqs {
			p := hostPaths{SpecDir: filepath.Join(b.TempDir(), "spec"), Workspace: filepath.Join(b.TempDir(), "ws")}
			spec, _ := json.Marshal(req.Spec)
			if err := os.MkdirAll(p.SpecDir, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p.SpecDir, "spec.json"), spec, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := prepareDir(p.Workspace); err != nil {
				b.Fatal(err)
			}
			dirs[i] = p
		}
		began := time.Now()
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				spec := compileContainer(&req, Config{ID: "bare", Image: workerImage, StorageURI: "file://" + storeDir, Grace: 3 * time.Second}, dirs[i])
				spec.Name += "-bare"
				id, err := eng.Create(ctx, spec)
				if err != nil {
					b.Error(err)
					return
				}
				if err := eng.Start(ctx, id); err != nil {
					b.Error(err)
				}
				if res, err := eng.Wait(ctx, id); err != nil || !res.Successful() {
					b.Errorf("bare run: %+v, %v", res, err)
				}
				if err := eng.Remove(ctx, id); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		return time.Since(began)
	}
	batch := func(k int) []schemas.DispatchRequest {
		out := make([]schemas.DispatchRequest, k)
		for i := range out {
			out[i] = noop()
		}
		return out
	}

	rows := map[string][]time.Duration{}
	run := func(name string, f func([]schemas.DispatchRequest) time.Duration, k int) {
		rows[name] = append(rows[name], f(batch(k)))
	}
	// Warm up both paths once.
	throughAgora(batch(1))
	bare(batch(1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate the order so both paths share the machine's noise.
		if i%2 == 0 {
			run("bare, 1 at a time", bare, 1)
			run("agora, 1 at a time", throughAgora, 1)
			run(fmt.Sprintf("bare, %d in parallel", parallel), bare, parallel)
			run(fmt.Sprintf("agora, %d in parallel", parallel), throughAgora, parallel)
		} else {
			run("agora, 1 at a time", throughAgora, 1)
			run("bare, 1 at a time", bare, 1)
			run(fmt.Sprintf("agora, %d in parallel", parallel), throughAgora, parallel)
			run(fmt.Sprintf("bare, %d in parallel", parallel), bare, parallel)
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")

	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "no-op dispatch, n=%d, same image and container spec; median wall time per batch\n", b.N)
	for _, pair := range [][2]string{
		{"bare, 1 at a time", "agora, 1 at a time"},
		{fmt.Sprintf("bare, %d in parallel", parallel), fmt.Sprintf("agora, %d in parallel", parallel)},
	} {
		bm, am := median(rows[pair[0]]), median(rows[pair[1]])
		fmt.Fprintf(&sb, "%-24s %8.1f ms\n", pair[0], float64(bm.Microseconds())/1000)
		fmt.Fprintf(&sb, "%-24s %8.1f ms   %+.1f%% vs bare\n", pair[1], float64(am.Microseconds())/1000, 100*(float64(am)/float64(bm)-1))
		unit := strings.NewReplacer(" ", "-", ",", "").Replace(pair[1]) + "/bare"
		b.ReportMetric(float64(am)/float64(bm), unit)
	}
	if b.N > 1 { // the one-iteration probe run says little
		b.Log("\n" + sb.String())
	}
}

// BenchmarkSnapshotWorkspace archives a round's workspace as the runner does
// when a sub-agent asks: eight entries (the layout the worker leaves, a
// sentinel, two files of the sub-agent's), owned by the container's user
// when the benchmark may chown, into file storage. The owner names are left
// out of the archive without looking them up (unnamed): the lookup, through
// cgo for a uid the host does not know, cost about 0.1 ms an entry.
//
//	go test -run '^$' -bench SnapshotWorkspace ./runner
func BenchmarkSnapshotWorkspace(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	for _, f := range []string{".agora/input.json", ".agora/count", ".agora/needs_input.json", ".agora/skills/agora-needs-input/SKILL.md", "answers.txt", "notes.md"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("x", 200)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	_ = filepath.WalkDir(ws, func(p string, _ os.DirEntry, err error) error {
		if err == nil {
			_ = os.Lchown(p, containerUID, containerUID)
		}
		return err
	})
	store, err := storage.Open(ctx, "file://"+filepath.Join(dir, "store"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := workspace.Snapshot(ctx, store, ws, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}
