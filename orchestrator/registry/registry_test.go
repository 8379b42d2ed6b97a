package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/registryfile"
	"github.com/agoradev/agora/wire"
)

func openRegistry(t *testing.T) (*Registry, storage.Store) {
	t.Helper()
	store := storagetest.FileStore(t)
	r, err := Open(t.Context(), bustest.Bus(t), store)
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}

func mustPack(t *testing.T, dir string) []byte {
	t.Helper()
	data, _, err := registryfile.PackDir(dir, wire.MaxCapabilityBytes)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRegisterIsContentAddressed(t *testing.T) {
	r, store := openRegistry(t)
	ctx := t.Context()

	skill := mustPack(t, filepath.Join("testdata", "skill"))
	c1, err := r.RegisterCapability(ctx, "review-skill", "checklist", skill)
	if err != nil || !c1.Created || c1.Entry.Seq != 1 || c1.Entry.Files != 2 {
		t.Fatalf("first registration = %+v, %v; want created seq 1 with 2 files", c1, err)
	}
	again, err := r.RegisterCapability(ctx, "review-skill", "checklist", mustPack(t, filepath.Join("testdata", "skill")))
	if err != nil || again.Created || again.Entry.Version != c1.Entry.Version {
		t.Fatalf("identical registration = %+v, %v; want the existing version %s", again, err, c1.Entry.Version)
	}
	// The bundle is in storage where the worker looks, under its hash.
	rc, err := store.Get(ctx, storage.BlobKey(c1.Entry.Bundle.SHA256))
	if err != nil {
		t.Fatalf("bundle not in storage: %v", err)
	}
	stored, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(stored, skill) {
		t.Error("stored bundle differs from the packed tar")
	}

	env := wire.Env{Name: "review-env", Values: map[string]string{"LOG_LEVEL": "debug"}, Secrets: map[string]string{"GITHUB_TOKEN": "local:github-token"}}
	e1, err := r.RegisterEnv(ctx, env)
	if err != nil || !e1.Created {
		t.Fatalf("RegisterEnv = %+v, %v", e1, err)
	}
	env.Values["LOG_LEVEL"] = "info"
	e2, err := r.RegisterEnv(ctx, env)
	if err != nil || !e2.Created || e2.Entry.Seq != 2 || e2.Entry.Version == e1.Entry.Version {
		t.Fatalf("changed env = %+v, %v; want a new version, seq 2", e2, err)
	}
	// The stored env bundle is exactly what the worker parses.
	rc, err = store.Get(ctx, storage.BlobKey(e2.Entry.Bundle.SHA256))
	if err != nil {
		t.Fatal(err)
	}
	var bundle struct{ Values, Secrets map[string]string }
	if err := json.NewDecoder(rc).Decode(&bundle); err != nil || bundle.Values["LOG_LEVEL"] != "info" || bundle.Secrets["GITHUB_TOKEN"] != "local:github-token" {
		t.Errorf("stored env bundle = %+v, %v", bundle, err)
	}
	rc.Close()

	data, _ := registryfile.ReadFile(filepath.Join("testdata", "reviewer.yaml"))
	def, err := registryfile.ParseSubagent("reviewer.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := r.RegisterSubagent(ctx, *def)
	if err != nil || !s1.Created {
		t.Fatalf("RegisterSubagent = %+v, %v", s1, err)
	}

	// Resolve pins the latest capability and env at that moment.
	res, err := r.Resolve(ctx, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Pins{Subagent: s1.Entry.Ref(), Capabilities: []string{c1.Entry.Ref()}, Env: []string{e2.Entry.Ref()}}
	if fmt.Sprint(res.Pins) != fmt.Sprint(want) {
		t.Errorf("pins = %+v, want %+v", res.Pins, want)
	}
	if res.Subagent.Version != s1.Entry.Digest || res.Env[0].SHA256 != e2.Entry.Bundle.SHA256 || res.Capabilities[0].Name != c1.Entry.Ref() {
		t.Errorf("resolved = %+v", res)
	}
	// An older version stays reachable by its ref.
	old, err := r.Get(ctx, wire.KindEnv, e1.Entry.Ref())
	if err != nil || old.Env.Values["LOG_LEVEL"] != "debug" {
		t.Errorf("Get(%s) = %+v, %v", e1.Entry.Ref(), old, err)
	}
	full, err := r.Get(ctx, wire.KindEnv, "review-env@"+e1.Entry.Digest[len("sha256:"):])
	if err != nil || full.Version != e1.Entry.Version {
		t.Errorf("Get by full digest = %+v, %v", full, err)
	}

	versions, err := r.Versions(ctx, wire.KindEnv, "review-env")
	if err != nil || len(versions) != 2 || versions[0].Seq != 1 || versions[1].Seq != 2 {
		t.Errorf("Versions = %v, %v", versions, err)
	}
	list, err := r.List(ctx, wire.KindEnv)
	if err != nil || len(list) != 1 || list[0].Version != e2.Entry.Version {
		t.Errorf("List(env) = %v, %v; want the latest only", list, err)
	}
	if list, err := r.List(ctx, wire.KindSubagent); err != nil || len(list) != 1 || list[0].Name != "reviewer" {
		t.Errorf("List(subagent) = %v, %v", list, err)
	}
}

func TestRegisterErrors(t *testing.T) {
	r, _ := openRegistry(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"sub-agent naming a capability that is not registered", func() error {
			_, err := r.RegisterSubagent(ctx, wire.Subagent{Name: "a", Runtime: "exec", Command: wire.Command{"true"}, Capabilities: []string{"nope"}})
			return err
		}, ErrNotFound},
		{"sub-agent breaking the schema", func() error {
			_, err := r.RegisterSubagent(ctx, wire.Subagent{Name: "a", Runtime: "exec"})
			return err
		}, ErrInvalid},
		{"capability with a bad name", func() error {
			_, err := r.RegisterCapability(ctx, "../x", "", mustPack(t, filepath.Join("testdata", "skill")))
			return err
		}, ErrInvalid},
		{"capability that is not a tar", func() error {
			_, err := r.RegisterCapability(ctx, "x", "", []byte("not a tar at all, really not"))
			return err
		}, ErrInvalid},
		{"capability escaping the workspace", func() error {
			_, err := r.RegisterCapability(ctx, "x", "", tarOf(t, "../evil", "x"))
			return err
		}, ErrInvalid},
		{"env with a bad secret ref", func() error {
			_, err := r.RegisterEnv(ctx, wire.Env{Name: "e", Secrets: map[string]string{"T": "plain"}})
			return err
		}, ErrInvalid},
		{"unknown ref", func() error { _, err := r.Get(ctx, wire.KindSubagent, "ghost"); return err }, ErrNotFound},
		{"unknown version", func() error { _, err := r.Get(ctx, wire.KindSubagent, "ghost@0123456789ab"); return err }, ErrNotFound},
		{"malformed ref", func() error { _, err := r.Get(ctx, wire.KindSubagent, "a@latest"); return err }, ErrInvalid},
		{"versions of nothing", func() error { _, err := r.Versions(ctx, wire.KindEnv, "ghost"); return err }, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.want) {
				t.Errorf("error = %v, want %v", err, tc.want)
			}
		})
	}
	if list, err := r.List(ctx, wire.KindCapability); err != nil || len(list) != 0 {
		t.Errorf("after only failed registrations List = %v, %v; want nothing", list, err)
	}
}

// Concurrent registrations of different content under one name each get
// their own sequence number.
func TestRegisterConcurrently(t *testing.T) {
	r, _ := openRegistry(t)
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	seqs := make(chan int, n)
	for i := range n {
		wg.Go(func() {
			reg, err := r.RegisterEnv(ctx, wire.Env{Name: "shared", Values: map[string]string{"I": fmt.Sprint(i)}})
			if err != nil {
				t.Error(err)
				return
			}
			seqs <- reg.Entry.Seq
		})
	}
	wg.Wait()
	close(seqs)
	seen := map[int]bool{}
	for s := range seqs {
		if seen[s] {
			t.Errorf("seq %d given twice", s)
		}
		seen[s] = true
	}
	versions, err := r.Versions(ctx, wire.KindEnv, "shared")
	if err != nil || len(versions) != n {
		t.Errorf("Versions = %d, %v; want %d", len(versions), err, n)
	}
}

func tarOf(t *testing.T, name, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(data))
	_ = tw.Close()
	return b.Bytes()
}

// A registration that died between claiming the head and writing its
// version: the name still resolves to the latest version that exists, and
// registering that content again completes it.
func TestRegisterAfterAHalfRegistration(t *testing.T) {
	r, _ := openRegistry(t)
	ctx := t.Context()
	first, err := r.RegisterEnv(ctx, wire.Env{Name: "e", Values: map[string]string{"V": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	second := wire.Env{Name: "e", Values: map[string]string{"V": "2"}}
	// What RegisterEnv would write for second, minus its version key.
	probe, err := r.RegisterEnv(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.kv.Delete(ctx, versionKey(wire.KindEnv, "e", probe.Entry.Version)); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, wire.KindEnv, "e")
	if err != nil || got.Version != first.Entry.Version {
		t.Fatalf("Get(e) with a dangling head = %+v, %v; want version 1", got, err)
	}
	again, err := r.RegisterEnv(ctx, second)
	if err != nil || !again.Created || again.Entry.Seq != 2 {
		t.Fatalf("registering the dangling content again = %+v, %v; want it written as seq 2", again, err)
	}
	if got, err := r.Get(ctx, wire.KindEnv, "e"); err != nil || got.Version != probe.Entry.Version {
		t.Errorf("Get(e) after the repair = %+v, %v", got, err)
	}
}

// Registrations of the same content at once agree on one version and seq.
func TestRegisterSameContentConcurrently(t *testing.T) {
	r, _ := openRegistry(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make(chan wire.Registered, 6)
	for range 6 {
		wg.Go(func() {
			reg, err := r.RegisterEnv(ctx, wire.Env{Name: "same", Values: map[string]string{"A": "1"}})
			if err != nil {
				t.Error(err)
				return
			}
			results <- reg
		})
	}
	wg.Wait()
	close(results)
	created := 0
	for reg := range results {
		if reg.Created {
			created++
		}
		if reg.Entry.Seq != 1 {
			t.Errorf("seq = %d, want 1 for every registration of one content", reg.Entry.Seq)
		}
	}
	if created != 1 {
		t.Errorf("%d registrations say they created the version, want 1", created)
	}
}
