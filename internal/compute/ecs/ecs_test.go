package ecs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/internal/testutil"
)

// TestConformance runs the compute conformance suite on Fargate through the
// real SDK against the loopback fake, whose tasks run on the local Docker
// engine.
func TestConformance(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, _ := ecstest.Start(t, docker, ecstest.Options{})
	computetest.RunConformanceWith(t, e, image, ecstest.Limits(true))
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func shSpec(image string, labels map[string]string, script string) compute.ContainerSpec {
	return compute.ContainerSpec{Image: image, Entrypoint: []string{"/bin/sh", "-c", script}, User: computetest.User, Labels: labels, Init: true}
}

// TestRetriedLaunchRunsOnce: the response to the RunTask that launched the
// task is lost; the SDK retries with the same clientToken (the container
// id: a runner names it after the dispatch) and the fake, like ECS, answers
// with the task it launched.
func TestRetriedLaunchRunsOnce(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{Fake: func(c *ecsfake.Config) { c.LoseRunTaskResponses = 1 }})
	ctx := ctxFor(t, time.Minute)
	labels := computetest.Label(t, e)
	labels[compute.LabelDispatchID] = "d-retried-" + computetest.RandomSuffix()
	spec := shSpec(image, labels, "echo ran")
	spec.Name = "agora-" + labels[compute.LabelDispatchID] + "-0123abcd"
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatalf("Start through a lost response = %v, want the SDK's retry to succeed", err)
	}
	if res, err := e.Wait(ctx, id); err != nil || !res.Successful() {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	runs := fake.Calls("RunTask")
	if len(runs) != 2 {
		t.Errorf("RunTask calls = %d, want 2 (the lost one and the SDK's retry)", len(runs))
	}
	for _, c := range runs {
		if !strings.Contains(string(c.Body), `"clientToken":"`+spec.Name+`"`) {
			t.Errorf("RunTask body lacks clientToken = the container's name %s: %s", spec.Name, c.Body)
		}
	}
	if got, err := e.List(ctx, labels); err != nil || len(got) != 1 {
		t.Errorf("List after a retried launch = %d tasks, %v; want 1", len(got), err)
	}
}

// TestRunTaskFailures: failures[] without a task is Start's error, and the
// created container can be started again.
func TestRunTaskFailures(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, _ := ecstest.Start(t, docker, ecstest.Options{CapacityProvider: ecs.CapacityFargateSpot, Fake: func(c *ecsfake.Config) { c.RunTaskFailures = 1 }})
	ctx := ctxFor(t, time.Minute)
	id, err := e.Create(ctx, shSpec(image, computetest.Label(t, e), "exit 0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err == nil || !strings.Contains(err.Error(), "Capacity is unavailable") {
		t.Fatalf("Start with a capacity failure = %v, want the failure's reason", err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatalf("second Start = %v", err)
	}
	if res, err := e.Wait(ctx, id); err != nil || !res.Successful() {
		t.Errorf("Wait = %+v, %v", res, err)
	}
}

// TestTaskDefinitionReused: one registration per content; a new engine
// process finds it by its family instead of registering again.
func TestTaskDefinitionReused(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	o := ecstest.Options{Cluster: "agora-test-" + computetest.RandomSuffix()}
	e, fake := ecstest.Start(t, docker, o)
	ctx := ctxFor(t, time.Minute)
	labels := computetest.Label(t, e)
	for i := range 3 {
		spec := shSpec(image, labels, "exit 0")
		spec.Entrypoint, spec.Cmd = []string{"/bin/sh", "-c"}, []string{fmt.Sprintf("exit %d", i)}
		spec.Env = []string{fmt.Sprintf("N=%d", i)}
		if _, err := e.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	e2 := ecstest.Engine(t, fake, o)
	spec := shSpec(image, labels, "exit 0")
	spec.Entrypoint, spec.Cmd = []string{"/bin/sh", "-c"}, []string{"exit 9"}
	if _, err := e2.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		left, _ := e2.List(context.Background(), labels)
		for _, c := range left {
			_ = e2.Remove(context.Background(), c.ID)
		}
	})
	if n := len(fake.Calls("RegisterTaskDefinition")); n != 1 {
		t.Errorf("RegisterTaskDefinition calls for 4 containers of one content = %d, want 1", n)
	}
}

// TestWaitsShareDescribeTasks: many Waits cost one DescribeTasks per poll,
// not one per task.
func TestWaitsShareDescribeTasks(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{})
	ctx := ctxFor(t, 2*time.Minute)
	labels := computetest.Label(t, e)
	const n = 6
	ids := make([]string, n)
	for i := range ids {
		id, err := e.Create(ctx, shSpec(image, labels, "sleep 1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx, id); err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	before := len(fake.Calls("DescribeTasks"))
	begin := time.Now()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if res, err := e.Wait(ctx, id); err != nil || !res.Successful() {
				t.Errorf("Wait(%s) = %+v, %v", id, res, err)
			}
		})
	}
	wg.Wait()
	took := time.Since(begin)
	calls := fake.Calls("DescribeTasks")[before:]
	most := 0
	for _, c := range calls {
		var in struct{ Tasks []string }
		if err := json.Unmarshal(c.Body, &in); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(in.Tasks))
	}
	// Each Wait describes its task once to find it; the rest is the poller.
	polls := len(calls) - n
	t.Logf("%d Waits over %v: %d DescribeTasks calls (%d to find the tasks, %d polls at 200ms), up to %d tasks per call", n, took.Round(time.Millisecond), len(calls), n, polls, most)
	if most < 2 {
		t.Errorf("no DescribeTasks call described more than one task")
	}
	if limit := int(took/(200*time.Millisecond)) + 2; polls > limit {
		t.Errorf("%d polling DescribeTasks calls in %v, want at most %d (one per interval)", polls, took, limit)
	}
}

// TestStopWhileProvisioning: a task stopped before its container exists
// never runs one, and Wait reports that it had no exit code.
func TestStopWhileProvisioning(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	const provisioning = time.Minute
	e, fake := ecstest.Start(t, docker, ecstest.Options{Fake: func(c *ecsfake.Config) { c.ProvisionDelay = provisioning }})
	ctx := ctxFor(t, time.Minute)
	id, err := e.Create(ctx, shSpec(image, computetest.Label(t, e), "echo should-not-run"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := e.Stop(ctx, id, time.Second); err != nil {
		t.Fatalf("Stop while provisioning = %v", err)
	}
	// Not a speed check: a Stop that waited for the task to provision
	// would take the whole provisioning time.
	if took := time.Since(begin); took >= provisioning/2 {
		t.Errorf("Stop while provisioning took %v, as if it waited for the %v of provisioning", took, provisioning)
	}
	res, err := e.Wait(ctx, id)
	if err != nil || res.Err == nil || res.ExitCode != -1 {
		t.Errorf("Wait after a stop while provisioning = %+v, %v; want exit -1 and an error", res, err)
	}
	var out strings.Builder
	if err := e.Logs(ctx, id, true, &out, nil); err != nil || out.Len() != 0 {
		t.Errorf("Logs of a task that never ran = %q, %v; want nothing", out.String(), err)
	}
	if left, err := docker.List(ctx, map[string]string{ecsfake.LabelFake: fake.ID()}); err != nil || len(left) != 0 {
		t.Errorf("Docker containers of the fake = %d, %v; want none", len(left), err)
	}
}

// TestAdoptedByAnotherProcess: a second engine (a restarted runner) on the
// same cluster finds the task by its tags and follows it to the end.
func TestAdoptedByAnotherProcess(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	o := ecstest.Options{Cluster: "agora-test-" + computetest.RandomSuffix()}
	e1, fake := ecstest.Start(t, docker, o)
	ctx := ctxFor(t, time.Minute)
	labels := computetest.Label(t, e1)
	labels[compute.LabelDispatchID] = "d-adopt-" + computetest.RandomSuffix()
	spec := shSpec(image, labels, "echo before; sleep 1; echo after; exit 5")
	spec.Name = "agora-adopt-" + computetest.RandomSuffix()
	id, err := e1.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e1.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	e2 := ecstest.Engine(t, fake, o)
	found, err := e2.List(ctx, map[string]string{compute.LabelDispatchID: labels[compute.LabelDispatchID]})
	if err != nil || len(found) != 1 || found[0].ID != id || !found[0].Running() || found[0].Name != spec.Name {
		t.Fatalf("List by the dispatch tag from another engine = %+v, %v; want the running task %s", found, err, id)
	}
	if _, err := e2.Create(ctx, spec); !errors.Is(err, compute.ErrAlreadyExists) {
		t.Errorf("Create of the same name from another engine = %v, want ErrAlreadyExists", err)
	}
	var out strings.Builder
	if err := e2.Logs(ctx, id, true, &out, nil); err != nil || out.String() != "before\nafter\n" {
		t.Errorf("Logs(follow) from another engine = %q, %v", out.String(), err)
	}
	if res, err := e2.Wait(ctx, id); err != nil || res.ExitCode != 5 {
		t.Errorf("Wait from another engine = %+v, %v; want exit 5", res, err)
	}
	if err := e2.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e1.Wait(ctx, id); !errors.Is(err, compute.ErrNotFound) {
		t.Errorf("Wait on the first engine after the second removed it = %v, want ErrNotFound", err)
	}
}

// TestEC2HostVolumes: on the EC2 launch type the spec's mounts are host
// volumes, and their task definition is deregistered with the task.
func TestEC2HostVolumes(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{EC2: true})
	ctx := ctxFor(t, time.Minute)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(image, computetest.Label(t, e), "echo hi > /out/f")
	spec.Mounts = []compute.Mount{{Source: dir, Target: "/out"}}
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Wait(ctx, id); err != nil || !res.Successful() {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "hi\n" {
		t.Errorf("file written through the host volume = %q, %v", b, err)
	}
	if err := e.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Calls("DeregisterTaskDefinition")); n != 1 {
		t.Errorf("DeregisterTaskDefinition calls = %d, want 1 (a definition with host paths is used once)", n)
	}
}

// TestSignatureChecked: a client with the wrong secret is refused.
func TestSignatureChecked(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	e, _ := ecstest.Start(t, docker, ecstest.Options{Secret: "wrong"})
	ctx := ctxFor(t, time.Minute)
	if _, err := e.List(ctx, nil); err == nil || !strings.Contains(err.Error(), "InvalidSignatureException") {
		t.Errorf("List with a wrong secret = %v, want InvalidSignatureException", err)
	}
}

// TestEventualConsistency: a task launched a moment ago is MISSING from
// DescribeTasks and absent from ListTasks for a while, as on ECS; Wait and
// Logs of this process still follow it to its end.
func TestEventualConsistency(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{Fake: func(c *ecsfake.Config) { c.InvisibleFor = 600 * time.Millisecond }})
	ctx := ctxFor(t, time.Minute)
	id, err := e.Create(ctx, shSpec(image, computetest.Label(t, e), "echo visible; exit 2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := e.Logs(ctx, id, true, &out, nil); err != nil || out.String() != "visible\n" {
		t.Errorf("Logs(follow) of a task not yet visible = %q, %v", out.String(), err)
	}
	if res, err := e.Wait(ctx, id); err != nil || res.ExitCode != 2 {
		t.Errorf("Wait = %+v, %v; want exit 2", res, err)
	}
	// The engine described the task while the fake still hid it.
	launched := fake.Calls("RunTask")[0].Time
	if d := fake.Calls("DescribeTasks"); len(d) == 0 || d[0].Time.Sub(launched) >= 600*time.Millisecond {
		t.Errorf("no DescribeTasks call while the task was invisible; the case was not exercised")
	}
}

// TestNameReusedAfterRemove: ECS keeps a client token's task; a name
// reused after Remove cannot start it again unnoticed.
func TestNameReusedAfterRemove(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{})
	ctx := ctxFor(t, time.Minute)
	spec := shSpec(image, computetest.Label(t, e), "exit 0")
	spec.Name = "agora-reused-" + computetest.RandomSuffix()
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := e.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	id, err = e.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create of a removed name = %v", err)
	}
	if err := e.Start(ctx, id); err == nil || !strings.Contains(err.Error(), "removed before") {
		t.Errorf("Start of a reused name = %v, want an error naming the removed task", err)
	}
	if n := len(fake.Calls("RunTask")); n != 2 {
		t.Errorf("RunTask calls = %d, want 2", n)
	}
	if err := e.Remove(ctx, id); err != nil {
		t.Error(err)
	}
}

// TestSpotInterruption: a task the platform takes away ends with its
// container's exit code and an Err naming the interruption.
func TestSpotInterruption(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{CapacityProvider: ecs.CapacityFargateSpot})
	ctx := ctxFor(t, time.Minute)
	id, err := e.Create(ctx, shSpec(image, computetest.Label(t, e), `trap 'echo got-term; exit 143' TERM; echo ready; sleep 600 & wait`))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the task to run", func() bool {
		var out strings.Builder
		_ = e.Logs(ctx, id, false, &out, nil)
		return strings.Contains(out.String(), "ready")
	})
	if err := fake.Interrupt(id); err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil || res.ExitCode != 143 || res.Err == nil || !strings.Contains(res.Err.Error(), "SpotInterruption") || res.Successful() {
		t.Errorf("Wait after a Spot interruption = %+v, %v; want exit 143 and an Err naming SpotInterruption", res, err)
	}
}

// TestSmallMemoryOnEC2: a 32 MiB container on the EC2 launch type, below
// the definition's 64 MiB reservation, is accepted by the fake (which
// refuses memory at or below its reservation, as ECS does) and runs.
func TestSmallMemoryOnEC2(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{EC2: true})
	ctx := ctxFor(t, time.Minute)
	spec := shSpec(image, computetest.Label(t, e), "echo small")
	spec.Resources.MemoryBytes = 32 << 20
	res, out := runECS(t, ctx, e, spec)
	if !res.Successful() || out != "small\n" {
		t.Fatalf("32 MiB task on EC2 = %+v, output %q; want success and \"small\"", res, out)
	}
	calls := fake.Calls("RunTask")
	if len(calls) != 1 || !strings.Contains(string(calls[0].Body), `"memoryReservation":16`) {
		t.Errorf("RunTask calls = %d, want one overriding memoryReservation to 16: %s", len(calls), calls)
	}
}
