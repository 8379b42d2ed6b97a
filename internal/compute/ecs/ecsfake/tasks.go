package ecsfake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
)

// task is one ECS task of one container.
type task struct {
	arn, id, cluster string
	def              *taskDef
	in               awsecs.RunTaskInput
	launchType       string
	provider         string
	startedBy        string
	createdAt        time.Time
	// stopReq is closed by the first StopTask; killReq by Close.
	stopReq  chan struct{}
	killReq  chan struct{}
	stopOnce sync.Once
	killOnce sync.Once

	mu         sync.Mutex
	last       string
	desired    string
	stopCode   types.TaskStopCode
	reason     string
	exitCode   *int
	ctrReason  string
	ctrStatus  string
	startedAt  time.Time
	stoppedAt  time.Time
	tags       []types.Tag
	dockerID   string
	logsStream string
	// roleARN and credToken are set when the task gets role credentials;
	// credFetches counts those served.
	roleARN     string
	credToken   string
	credFetches int
}

func (s *Server) newTask(cluster string, d *taskDef, in awsecs.RunTaskInput, launchType, provider string) *task {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	t := &task{
		arn: fmt.Sprintf("arn:aws:ecs:%s:%s:task/%s/%s", s.cfg.Region, account, cluster, id), id: id, cluster: cluster,
		def: d, in: in, launchType: launchType, provider: provider, startedBy: aws.ToString(in.StartedBy),
		createdAt: time.Now(), stopReq: make(chan struct{}), killReq: make(chan struct{}),
		last: "PROVISIONING", desired: "RUNNING", ctrStatus: "PENDING", tags: slices.Clone(in.Tags),
	}
	s.tasks[t.arn] = t
	s.order = append(s.order, t.arn)
	return t
}

func (t *task) requestStop(code types.TaskStopCode, reason string) {
	t.mu.Lock()
	if t.desired != "STOPPED" {
		t.desired, t.stopCode, t.reason = "STOPPED", code, reason
	}
	t.mu.Unlock()
	t.stopOnce.Do(func() { close(t.stopReq) })
}

func (t *task) kill() {
	t.requestStop(types.TaskStopCodeUserInitiated, "ecsfake shut down")
	t.killOnce.Do(func() { close(t.killReq) })
}

func (t *task) set(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}

// stopped settles the task: STOPPED, with the container's exit code (nil
// when it never ran).
func (t *task) stopped(code types.TaskStopCode, reason string, exit *int, ctrReason string) {
	t.set(func() {
		if t.stopCode == "" {
			t.stopCode, t.reason = code, reason
		}
		t.exitCode, t.ctrReason = exit, ctrReason
		t.last, t.desired, t.ctrStatus, t.stoppedAt = "STOPPED", "STOPPED", "STOPPED", time.Now()
	})
}

// container is the task definition's one container.
func (t *task) container() types.ContainerDefinition { return t.def.in.ContainerDefinitions[0] }

// run is the task's life: provisioning, pulling (a local image), running
// its container on the engine until it exits, and stopping.
func (s *Server) run(t *task) {
	ctx := context.Background()
	log := s.cfg.Logger.With("task_arn", t.arn)
	select {
	case <-time.After(s.cfg.ProvisionDelay):
	case <-t.stopReq:
		t.stopped("", "", nil, "")
		log.Info("ecsfake: task stopped while provisioning")
		return
	}
	t.set(func() { t.last = "PENDING" })
	cd := t.container()
	image := aws.ToString(cd.Image)
	if ib, ok := s.cfg.Engine.(compute.ImageBuilder); ok {
		if _, found, err := ib.ImageExists(ctx, image); err == nil && !found {
			msg := "CannotPullContainerError: pull image manifest has been retried 5 time(s): failed to resolve ref " + image + ": not found"
			t.stopped(types.TaskStopCodeTaskFailedToStart, msg, nil, msg)
			return
		}
	}
	added, order, reason := s.startEnv(t)
	if reason != "" {
		t.stopped(types.TaskStopCodeTaskFailedToStart, reason, nil, "")
		log.Info("ecsfake: task failed to start", "reason", reason)
		return
	}
	spec, err := s.containerSpec(t)
	if err != nil {
		msg := "CannotCreateContainerError: " + err.Error()
		t.stopped(types.TaskStopCodeTaskFailedToStart, msg, nil, msg)
		return
	}
	spec.Env = withEnv(spec.Env, added, order)
	if t.launchType == "FARGATE" {
		// Fargate sets the region for the SDKs, unless the task does.
		for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
			if !slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }) {
				spec.Env = append(spec.Env, k+"="+s.cfg.Region)
			}
		}
	}
	select {
	case <-t.stopReq:
		t.stopped("", "", nil, "")
		return
	default:
	}
	cid, err := s.cfg.Engine.Create(ctx, spec)
	if err != nil {
		msg := "CannotCreateContainerError: " + err.Error()
		t.stopped(types.TaskStopCodeTaskFailedToStart, msg, nil, msg)
		return
	}
	defer func() {
		if err := s.cfg.Engine.Remove(context.WithoutCancel(ctx), cid); err != nil {
			log.Error("ecsfake: remove container", "container_id", cid, "error", err)
		}
	}()
	stream := s.createStream(t)
	if err := s.cfg.Engine.Start(ctx, cid); err != nil {
		msg := "CannotStartContainerError: " + err.Error()
		t.stopped(types.TaskStopCodeTaskFailedToStart, msg, nil, msg)
		return
	}
	t.set(func() { t.last, t.ctrStatus, t.startedAt, t.dockerID = "RUNNING", "RUNNING", time.Now(), cid })
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		w := stream.writer()
		if err := s.cfg.Engine.Logs(ctx, cid, true, w, w); err != nil {
			log.Warn("ecsfake: follow container output", "error", err)
		}
		w.flush()
	}()
	waited := make(chan exit.Result, 1)
	go func() {
		res, err := s.cfg.Engine.Wait(ctx, cid)
		if err != nil {
			res = exit.Result{ExitCode: 137, Err: err}
		}
		waited <- res
	}()
	grace := time.Duration(aws.ToInt32(cd.StopTimeout)) * time.Second
	if cd.StopTimeout == nil {
		grace = 30 * time.Second
	}
	stopReq, killReq := t.stopReq, t.killReq
	var res exit.Result
	for done := false; !done; {
		select {
		case <-stopReq:
			stopReq = nil
			t.set(func() { t.last = "DEACTIVATING" })
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if err := s.cfg.Engine.Stop(context.WithoutCancel(ctx), cid, grace); err != nil {
					log.Warn("ecsfake: stop container", "error", err)
				}
			}()
		case <-killReq:
			killReq = nil
			_ = s.cfg.Engine.Stop(context.WithoutCancel(ctx), cid, 0)
		case res = <-waited:
			done = true
		}
	}
	<-logsDone
	code := res.ExitCode
	ctrReason := ""
	if res.OOMKilled {
		ctrReason = "OutOfMemoryError: Container killed due to memory usage"
	}
	t.stopped(types.TaskStopCodeEssentialContainerExited, "Essential container in task exited", &code, ctrReason)
	log.Info("ecsfake: task stopped", "exit_code", code)
}

// containerSpec is what the engine runs for the task: the task
// definition's container with the RunTask overrides. The engine adds its
// own hardening whatever the definition says.
func (s *Server) containerSpec(t *task) (compute.ContainerSpec, error) {
	cd := t.container()
	spec := compute.ContainerSpec{
		Image:          aws.ToString(cd.Image),
		Entrypoint:     cd.EntryPoint,
		Cmd:            cd.Command,
		User:           aws.ToString(cd.User),
		WorkingDir:     aws.ToString(cd.WorkingDirectory),
		WritableRootfs: !aws.ToBool(cd.ReadonlyRootFilesystem),
		Labels:         map[string]string{LabelFake: s.id, LabelFake + ".task": t.id},
		StopTimeout:    time.Duration(aws.ToInt32(cd.StopTimeout)) * time.Second,
	}
	for _, kv := range cd.Environment {
		spec.Env = append(spec.Env, aws.ToString(kv.Name)+"="+aws.ToString(kv.Value))
	}
	memMiB := int64(aws.ToInt32(cd.Memory))
	cpu := int64(cd.Cpu)
	if lp := cd.LinuxParameters; lp != nil {
		spec.Init = aws.ToBool(lp.InitProcessEnabled)
		for _, tm := range lp.Tmpfs {
			if aws.ToString(tm.ContainerPath) == "/tmp" {
				spec.TmpfsBytes = int64(tm.Size) << 20
			}
		}
	}
	if ov := t.in.Overrides; ov != nil {
		for _, co := range ov.ContainerOverrides {
			if aws.ToString(co.Name) != aws.ToString(cd.Name) {
				return spec, fmt.Errorf("override for unknown container %s", aws.ToString(co.Name))
			}
			if co.Command != nil {
				spec.Cmd = co.Command
			}
			for _, kv := range co.Environment {
				spec.Env = append(spec.Env, aws.ToString(kv.Name)+"="+aws.ToString(kv.Value))
			}
			if co.Memory != nil {
				memMiB = int64(*co.Memory)
			}
			if co.Cpu != nil {
				cpu = int64(*co.Cpu)
			}
		}
		if ov.Memory != nil && memMiB == 0 {
			memMiB, _ = strconv.ParseInt(aws.ToString(ov.Memory), 10, 64)
		}
		if ov.Cpu != nil {
			cpu, _ = strconv.ParseInt(aws.ToString(ov.Cpu), 10, 64)
		}
	}
	spec.Resources.MemoryBytes = memMiB << 20
	spec.Resources.NanoCPUs = cpu * 1e9 / 1024
	switch t.def.in.NetworkMode {
	case types.NetworkModeAwsvpc:
		// The host's network, not the bridge: an awsvpc task reaches its
		// VPC's endpoints, which here are loopback services (the
		// credentials endpoint, the test's S3 and NATS).
		spec.NetworkMode = compute.NetworkHost
		groups := t.in.NetworkConfiguration.AwsvpcConfiguration.SecurityGroups
		if len(groups) > 0 && !slices.ContainsFunc(groups, func(g string) bool { return !slices.Contains(s.cfg.NoEgressSecurityGroups, g) }) {
			spec.NetworkMode = compute.NetworkNone
		}
	case types.NetworkModeNone, "":
		spec.NetworkMode = compute.NetworkNone
	default:
		spec.NetworkMode = string(t.def.in.NetworkMode)
	}
	for _, h := range cd.ExtraHosts {
		spec.ExtraHosts = append(spec.ExtraHosts, aws.ToString(h.Hostname)+":"+aws.ToString(h.IpAddress))
	}
	vols := map[string]string{}
	for _, v := range t.def.in.Volumes {
		if v.Host != nil && v.Host.SourcePath != nil {
			vols[aws.ToString(v.Name)] = aws.ToString(v.Host.SourcePath)
		}
	}
	for _, mp := range cd.MountPoints {
		src, ok := vols[aws.ToString(mp.SourceVolume)]
		if !ok {
			if aws.ToString(mp.ContainerPath) == "/tmp" {
				continue // task storage at /tmp: the engine's /tmp tmpfs
			}
			// Any other volume without a host path is task storage: a
			// scratch volume of the container's own.
			spec.ScratchDirs = append(spec.ScratchDirs, aws.ToString(mp.ContainerPath))
			continue
		}
		spec.Mounts = append(spec.Mounts, compute.Mount{Source: src, Target: aws.ToString(mp.ContainerPath), ReadOnly: aws.ToBool(mp.ReadOnly)})
	}
	return spec, nil
}

// wire is the task as DescribeTasks, RunTask and StopTask return it.
func (t *task) wire(withTags bool) map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	ctr := map[string]any{
		"containerArn": strings.Replace(t.arn, ":task/", ":container/", 1) + "/" + t.containerName(),
		"taskArn":      t.arn, "name": t.containerName(), "image": aws.ToString(t.container().Image),
		"lastStatus": t.ctrStatus,
	}
	if t.exitCode != nil {
		ctr["exitCode"] = *t.exitCode
	}
	if t.ctrReason != "" {
		ctr["reason"] = t.ctrReason
	}
	out := map[string]any{
		"taskArn": t.arn, "clusterArn": fmt.Sprintf("arn:aws:ecs:%s:%s:cluster/%s", strings.Split(t.arn, ":")[3], account, t.cluster),
		"taskDefinitionArn": t.def.arn, "lastStatus": t.last, "desiredStatus": t.desired,
		"launchType": t.launchType, "createdAt": epoch(t.createdAt), "containers": []any{ctr},
	}
	if t.provider != "" {
		out["capacityProviderName"] = t.provider
	}
	if t.startedBy != "" {
		out["startedBy"] = t.startedBy
	}
	if ov := t.in.Overrides; ov != nil {
		out["cpu"], out["memory"] = aws.ToString(ov.Cpu), aws.ToString(ov.Memory)
	}
	if !t.startedAt.IsZero() {
		out["startedAt"] = epoch(t.startedAt)
	}
	if !t.stoppedAt.IsZero() {
		out["stoppedAt"] = epoch(t.stoppedAt)
	}
	if t.stopCode != "" {
		out["stopCode"] = string(t.stopCode)
		out["stoppedReason"] = t.reason
	}
	if withTags {
		tags := []any{}
		for _, tg := range t.tags {
			tags = append(tags, map[string]string{"key": aws.ToString(tg.Key), "value": aws.ToString(tg.Value)})
		}
		out["tags"] = tags
	}
	return out
}

// containerName is the name of the task's container.
func (t *task) containerName() string { return aws.ToString(t.container().Name) }

// Interrupt stops the task started by startedBy as a Fargate Spot
// interruption does: SIGTERM, then SIGKILL after the stop timeout, stop
// code SpotInterruption.
func (s *Server) Interrupt(startedBy string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		if t.startedBy == startedBy {
			t.requestStop(types.TaskStopCodeSpotInterruption, "Your Spot Task was interrupted.")
			return nil
		}
	}
	return fmt.Errorf("ecsfake: no task started by %s", startedBy)
}

// withEnv sets the variables of added (in order) in env, replacing the
// definition's or the overrides' own: what ECS adds at start wins.
func withEnv(env []string, added map[string]string, order []string) []string {
	if len(added) == 0 {
		return env
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := added[k]
		return ok
	})
	for _, k := range order {
		out = append(out, k+"="+added[k])
	}
	return out
}
