package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/docker"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	computetest.RunConformance(t, e, computetest.BusyboxImage(t, e))
}

func TestAPIVersionNegotiated(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server, err := e.ServerAPIVersion(ctx)
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if got := e.APIVersion(); got != server {
		t.Errorf("APIVersion() after Ping = %s, want the daemon's %s", got, server)
	}
	if _, err := e.List(ctx, nil); err != nil {
		t.Errorf("List on API %s = %v", e.APIVersion(), err)
	}
}

// TestCreateHardening checks with docker inspect that the daemon was asked for
// the hardening, the limits, the mounts and the labels.
func TestCreateHardening(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	image := computetest.BusyboxImage(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	labels := computetest.Label(t, e)
	labels[compute.LabelDispatchID] = "d-1"
	labels[compute.LabelTaskID] = "t-1"
	labels[compute.LabelRound] = "2"
	ws := t.TempDir()
	spec := compute.ContainerSpec{
		Name:        "agora-test-hardening-" + computetest.RandomSuffix(),
		Image:       image,
		Entrypoint:  []string{"/bin/sh", "-c"},
		Cmd:         []string{"exit 0"},
		Env:         []string{"AGORA_DISPATCH_ID=d-1"},
		Labels:      labels,
		User:        "65532:65532",
		WorkingDir:  "/workspace",
		Mounts:      []compute.Mount{{Source: ws, Target: "/workspace"}, {Source: ws, Target: "/spec", ReadOnly: true}},
		NetworkMode: compute.NetworkBridge,
		ExtraHosts:  []string{"host.docker.internal:host-gateway"},
		Resources:   compute.Resources{NanoCPUs: 1_500_000_000, MemoryBytes: 256 << 20, PidsLimit: 128},
		Init:        true,
		StopSignal:  "SIGINT",
		StopTimeout: 5 * time.Second,
		TmpfsBytes:  32 << 20,
	}
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	info, err := e.InspectContainer(ctx, id)
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	hc, cfg := info.HostConfig, info.Config

	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("inspect: %s = %v, want %v", what, got, want)
		}
	}
	check("Name", strings.TrimPrefix(info.Name, "/"), spec.Name)
	check("SecurityOpt", hc.SecurityOpt, []string{"no-new-privileges:true"})
	check("CapDrop", []string(hc.CapDrop), []string{"ALL"})
	check("CapAdd", len(hc.CapAdd), 0)
	check("Privileged", hc.Privileged, false)
	check("User", cfg.User, "65532:65532")
	check("ReadonlyRootfs", hc.ReadonlyRootfs, true)
	check("Tmpfs", hc.Tmpfs, map[string]string{"/tmp": "rw,nosuid,nodev,mode=1777,size=33554432"})
	check("Memory", hc.Memory, int64(256<<20))
	check("MemorySwap", hc.MemorySwap, int64(256<<20))
	check("NanoCPUs", hc.NanoCPUs, int64(1_500_000_000))
	check("PidsLimit", *hc.PidsLimit, int64(128))
	check("NetworkMode", string(hc.NetworkMode), "bridge")
	check("ExtraHosts", hc.ExtraHosts, []string{"host.docker.internal:host-gateway"})
	check("Init", hc.Init != nil && *hc.Init, true)
	check("RestartPolicy", string(hc.RestartPolicy.Name), "no")
	check("AutoRemove", hc.AutoRemove, false)
	check("LogConfig.Type", hc.LogConfig.Type, "json-file")
	check("Env has AGORA_DISPATCH_ID", slices.Contains(cfg.Env, "AGORA_DISPATCH_ID=d-1"), true)
	check("Entrypoint", []string(cfg.Entrypoint), spec.Entrypoint)
	check("Cmd", []string(cfg.Cmd), spec.Cmd)
	check("WorkingDir", cfg.WorkingDir, "/workspace")
	check("StopSignal", cfg.StopSignal, "SIGINT")
	check("StopTimeout", cfg.StopTimeout != nil && *cfg.StopTimeout == 5, true)
	check("Tty", cfg.Tty, false)
	for k, v := range labels {
		check("label "+k, cfg.Labels[k], v)
	}
	check("label "+compute.LabelManaged, cfg.Labels[compute.LabelManaged], "true")

	if len(hc.Mounts) != 2 {
		t.Fatalf("inspect: %d mounts, want 2: %+v", len(hc.Mounts), hc.Mounts)
	}
	for i, want := range spec.Mounts {
		m := hc.Mounts[i]
		if string(m.Type) != "bind" || m.Source != want.Source || m.Target != want.Target || m.ReadOnly != want.ReadOnly {
			t.Errorf("inspect: mount %d = %+v, want bind %+v", i, m, want)
		}
	}
}

func TestCreateDefaults(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	image := computetest.BusyboxImage(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := e.Create(ctx, compute.ContainerSpec{Image: image, Cmd: []string{"true"}, User: "agora", Labels: computetest.Label(t, e)})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	info, err := e.InspectContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	hc := info.HostConfig
	if hc.NetworkMode != "none" {
		t.Errorf("default NetworkMode = %q, want none", hc.NetworkMode)
	}
	if hc.Memory != 0 || hc.NanoCPUs != 0 || (hc.PidsLimit != nil && *hc.PidsLimit > 0) {
		t.Errorf("default limits = memory %d, cpus %d, pids %v; want none", hc.Memory, hc.NanoCPUs, hc.PidsLimit)
	}
	if got := hc.Tmpfs["/tmp"]; !strings.HasSuffix(got, "size=67108864") {
		t.Errorf("default /tmp tmpfs = %q, want size 64 MiB", got)
	}
	if hc.Init == nil || *hc.Init {
		t.Errorf("Init = %v, want an explicit false", hc.Init)
	}
	if hc.LogConfig.Config["max-size"] != "67108864" || hc.LogConfig.Config["max-file"] != "1" {
		t.Errorf("LogConfig = %+v, want json-file max-size 64 MiB, one file", hc.LogConfig)
	}
}

// TestCreateRefusesSecrets: Docker has no secret store, so a spec with
// Secrets is refused before anything is created, rather than its values
// being put where docker inspect shows them.
func TestCreateRefusesSecrets(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	labels := computetest.Label(t, e)
	spec := compute.ContainerSpec{Image: "agora-test-never-used:1", Cmd: []string{"true"}, User: "agora", Labels: labels,
		Secrets: []compute.SecretRef{{Name: "DB_PASSWORD", ValueFrom: "prod/db"}}}
	_, err := e.Create(ctx, spec)
	if !errors.Is(err, compute.ErrInvalidSpec) || !strings.Contains(err.Error(), "no secret store") || !strings.Contains(err.Error(), "as files") {
		t.Errorf("Create with secrets = %v, want ErrInvalidSpec saying Docker has no secret store and secrets go as files", err)
	}
	if left, err := e.List(ctx, labels); err != nil || len(left) != 0 {
		t.Errorf("List after a refused Create = %d containers, %v; want none", len(left), err)
	}
}

func TestImages(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	missing := "agora-test-missing:" + computetest.RandomSuffix()
	if _, ok, err := e.ImageExists(ctx, missing); ok || err != nil {
		t.Errorf("ImageExists(missing) = %v, %v; want false, nil", ok, err)
	}
	if err := e.RemoveImage(ctx, missing); err != nil {
		t.Errorf("RemoveImage(missing) = %v, want nil", err)
	}

	// Nothing is ever pulled: a FROM naming a missing image fails the build.
	err := e.BuildImage(ctx, tarOf(t, map[string]string{"Dockerfile": "FROM " + missing + "\n"}), "agora-test-never:"+computetest.RandomSuffix(), nil)
	if err == nil {
		t.Fatal("BuildImage FROM a missing image succeeded")
	}

	tag := "agora-test-labels:" + computetest.RandomSuffix()
	t.Cleanup(func() {
		if err := e.RemoveImage(context.Background(), tag); err != nil {
			t.Errorf("remove %s: %v", tag, err)
		}
	})
	files := map[string]string{"Dockerfile": "FROM scratch\nCOPY hello /hello\n", "hello": "hi\n"}
	if err := e.BuildImage(ctx, tarOf(t, files), tag, map[string]string{"agora.test.key": "v1"}); err != nil {
		t.Fatalf("BuildImage: %v", err)
	}
	info, ok, err := e.ImageExists(ctx, tag)
	if err != nil || !ok {
		t.Fatalf("ImageExists(%s) = %v, %v; want true", tag, ok, err)
	}
	if !strings.HasPrefix(info.ID, "sha256:") || info.Labels["agora.test.key"] != "v1" {
		t.Errorf("ImageExists(%s) = %+v; want a sha256 id and label agora.test.key=v1", tag, info)
	}
}

func TestNewWithHost(t *testing.T) {
	t.Parallel()
	e, err := docker.New(docker.Config{Host: "unix:///nonexistent/docker.sock", CallTimeout: time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Ping(ctx); err == nil || !strings.Contains(err.Error(), "/nonexistent/docker.sock") {
		t.Errorf("Ping of a missing socket = %v, want an error naming it", err)
	}
	if _, err := e.List(ctx, nil); err == nil {
		t.Error("List on a missing socket succeeded")
	}
}

func tarOf(t *testing.T, files map[string]string) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

// TestBuildWhileOthersRemove builds images that share a cached layer while
// other builds of the same content are removed, the way parallel test packages
// (and operators running docker rmi) do. Every build must succeed.
func TestBuildWhileOthersRemove(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	files := map[string]string{"Dockerfile": "FROM scratch\nCOPY data /data\nCOPY more /more\n", "data": computetest.RandomSuffix(), "more": "x"}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 3 {
		wg.Go(func() {
			for i := range 2 {
				tag := fmt.Sprintf("agora-test-race:%d-%d-%s", w, i, computetest.RandomSuffix())
				if err := e.BuildImage(ctx, tarOf(t, files), tag, map[string]string{"agora.test.worker": fmt.Sprint(w)}); err != nil {
					errs <- err
					return
				}
				if err := e.RemoveImage(ctx, tag); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestScratchDirs: a scratch dir is a fresh volume holding what the image
// has there, owner and mode included (the runner on Fargate gives the
// worker image's /workspace, the agora user's, one: runner.TestFargate*),
// and it is removed with the container.
func TestScratchDirs(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	image := computetest.BusyboxImage(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := compute.ContainerSpec{
		Name:       "agora-test-scratch-" + computetest.RandomSuffix(),
		Image:      image,
		Entrypoint: []string{"/bin/sh", "-c"},
		// The test image's /etc holds the agora user's passwd line.
		Cmd:         []string{`grep -q ' /etc ' /proc/mounts && stat -c '%a %u' /etc && grep -q '^agora:' /etc/passwd && echo kept`},
		Labels:      computetest.Label(t, e),
		User:        "65532:65532",
		ScratchDirs: []string{"/etc"},
	}
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	info, err := e.InspectContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.HostConfig.Mounts) != 1 || info.HostConfig.Mounts[0].Type != "volume" || info.HostConfig.Mounts[0].Target != "/etc" {
		t.Fatalf("mounts = %+v, want one volume at /etc", info.HostConfig.Mounts)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := e.Logs(ctx, id, false, &out, &out); err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(out.String(), "755 0\nkept") {
		t.Errorf("exit %d, output %q; want the scratch dir mounted with the image's content, owner and mode", res.ExitCode, out.String())
	}
	info, err = e.InspectContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var volume string
	for _, m := range info.Mounts {
		if m.Destination == "/etc" {
			volume = m.Name
		}
	}
	if err := e.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if exists, err := e.VolumeExists(ctx, volume); volume == "" || err != nil || exists {
		t.Errorf("volume %q after Remove: exists %v, %v; want it removed with the container", volume, exists, err)
	}
}
