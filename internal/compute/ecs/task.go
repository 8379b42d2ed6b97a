package ecs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
)

// pending is a created container: its launch, not run yet.
type pending struct {
	id      string
	spec    compute.ContainerSpec
	launch  *launch
	taskDef string
	created time.Time
}

// startedByRE is what ECS accepts as startedBy (and what container ids are).
var startedByRE = regexp.MustCompile(`^[A-Za-z0-9_/-]{1,128}$`)

// containerID is the id of a container named name: the name itself when ECS
// takes it as startedBy, else a hash of it, so a second Create of a name
// finds the first. Unnamed containers get a random id.
func containerID(name string) string {
	if name == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		return "agora-" + hex.EncodeToString(b[:])
	}
	if startedByRE.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "agora-" + hex.EncodeToString(sum[:16])
}

// clientToken is RunTask's idempotency token: the container id, which for
// a runner's container is its name, agora-<dispatch id>-<runner hash> — the
// dispatch id scoped by the runner, so a retried launch of a dispatch
// returns the task already launched, while two installations sharing a
// cluster (whose dispatch ids may repeat) never get each other's task.
// ECS takes 64 ASCII characters: a longer id is hashed.
func clientToken(p *pending) string {
	if len(p.id) <= 64 {
		return p.id
	}
	sum := sha256.Sum256([]byte(p.id))
	return hex.EncodeToString(sum[:])
}

// Create implements compute.Engine: it registers (or reuses) the task
// definition and keeps the launch until Start.
func (e *Engine) Create(ctx context.Context, spec compute.ContainerSpec) (string, error) {
	l, err := compile(e.cfg, spec)
	if err != nil {
		return "", fmt.Errorf("create task %s: %w", describe(spec), err)
	}
	id := containerID(spec.Name)
	if spec.Name != "" {
		if e.isCreated(id) {
			return "", fmt.Errorf("create task %s: %w", describe(spec), compute.ErrAlreadyExists)
		}
		t, err := e.find(ctx, id)
		if err != nil && !errors.Is(err, compute.ErrNotFound) {
			return "", fmt.Errorf("create task %s: %w", describe(spec), err)
		}
		if t != nil {
			return "", fmt.Errorf("create task %s: %w: task %s", describe(spec), compute.ErrAlreadyExists, aws.ToString(t.TaskArn))
		}
	}
	arn, err := e.taskDefinition(ctx, l)
	if err != nil {
		return "", fmt.Errorf("create task %s: %w", describe(spec), err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.created[id]; ok {
		return "", fmt.Errorf("create task %s: %w", describe(spec), compute.ErrAlreadyExists)
	}
	e.created[id] = &pending{id: id, spec: spec, launch: l, taskDef: arn, created: time.Now()}
	return id, nil
}

func (e *Engine) isCreated(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.created[id]
	return ok
}

func describe(spec compute.ContainerSpec) string {
	if spec.Name == "" {
		return "(" + spec.Image + ")"
	}
	return spec.Name + " (" + spec.Image + ")"
}

// taskDefinition returns the ARN of l's task definition: known to this
// process, found ACTIVE by its family (named by its content), or registered.
func (e *Engine) taskDefinition(ctx context.Context, l *launch) (string, error) {
	e.mu.Lock()
	arn, ok := e.families[l.family]
	e.mu.Unlock()
	if ok {
		return arn, nil
	}
	cctx, cancel := e.callContext(ctx)
	defer cancel()
	out, err := e.ecs.DescribeTaskDefinition(cctx, &awsecs.DescribeTaskDefinitionInput{TaskDefinition: aws.String(l.family)})
	if err == nil && out.TaskDefinition != nil && out.TaskDefinition.Status == types.TaskDefinitionStatusActive {
		arn = aws.ToString(out.TaskDefinition.TaskDefinitionArn)
		e.cfg.Logger.Debug("task definition reused", "family", l.family, "task_definition", arn)
	} else {
		var ce *types.ClientException
		if err != nil && !errors.As(err, &ce) {
			return "", fmt.Errorf("describe task definition %s: %w", l.family, err)
		}
		reg, err := e.ecs.RegisterTaskDefinition(cctx, l.taskDef)
		if err != nil {
			return "", fmt.Errorf("register task definition %s: %w", l.family, err)
		}
		arn = aws.ToString(reg.TaskDefinition.TaskDefinitionArn)
		e.cfg.Logger.Info("task definition registered", "family", l.family, "task_definition", arn)
	}
	e.mu.Lock()
	e.families[l.family] = arn
	e.mu.Unlock()
	return arn, nil
}

// Start implements compute.Engine: RunTask, with the dispatch id as the
// client token. Starting a started container is not an error.
func (e *Engine) Start(ctx context.Context, id string) error {
	e.mu.Lock()
	p := e.created[id]
	e.mu.Unlock()
	if p == nil {
		if _, err := e.find(ctx, id); err != nil {
			return fmt.Errorf("start task %s: %w", id, err)
		}
		return nil
	}
	in := &awsecs.RunTaskInput{
		Cluster:              aws.String(e.cfg.Cluster),
		TaskDefinition:       aws.String(p.taskDef),
		ClientToken:          aws.String(clientToken(p)),
		Count:                aws.Int32(1),
		StartedBy:            aws.String(id),
		Overrides:            p.launch.overrides,
		NetworkConfiguration: p.launch.network,
		Tags:                 p.launch.tags,
	}
	if e.cfg.TaskRoleARN != "" {
		in.Overrides.TaskRoleArn = aws.String(e.cfg.TaskRoleARN)
	}
	if e.cfg.Placement != "" {
		in.PlacementConstraints = []types.PlacementConstraint{{Type: types.PlacementConstraintTypeMemberOf, Expression: aws.String(e.cfg.Placement)}}
	}
	if e.cfg.CapacityProvider != "" {
		in.CapacityProviderStrategy = []types.CapacityProviderStrategyItem{{CapacityProvider: aws.String(e.cfg.CapacityProvider), Weight: 1}}
	} else {
		in.LaunchType = types.LaunchType(e.cfg.LaunchType)
	}
	cctx, cancel := e.callContext(ctx)
	defer cancel()
	out, err := e.ecs.RunTask(cctx, in)
	if err != nil {
		return fmt.Errorf("start task %s: run task: %w", id, err)
	}
	if len(out.Tasks) == 0 {
		var reasons []string
		for _, f := range out.Failures {
			reasons = append(reasons, aws.ToString(f.Reason)+" "+aws.ToString(f.Detail)+" "+aws.ToString(f.Arn))
		}
		return fmt.Errorf("start task %s: run task failed: %s", id, strings.Join(reasons, "; "))
	}
	arn := aws.ToString(out.Tasks[0].TaskArn)
	if aws.ToString(out.Tasks[0].LastStatus) == "STOPPED" {
		// The token may name a task launched and removed before (a name
		// reused after Remove): ECS returns that one.
		tasks, err := e.describe(cctx, []string{arn})
		if err != nil {
			return fmt.Errorf("start task %s: %w", id, err)
		}
		if t := tasks[arn]; t != nil && !managed(t) {
			return fmt.Errorf("start task %s: client token %s names task %s, removed before: use a new name", id, clientToken(p), arn)
		}
	}
	e.mu.Lock()
	delete(e.created, id)
	e.arns[id] = arn
	e.mu.Unlock()
	e.cfg.Logger.Info("task started", "container_id", id, "task_arn", arn, "client_token", clientToken(p))
	return nil
}

// find returns the managed task of container id, ErrNotFound when there is
// none (never run, removed, or forgotten by ECS).
func (e *Engine) find(ctx context.Context, id string) (*types.Task, error) {
	e.mu.Lock()
	arn := e.arns[id]
	e.mu.Unlock()
	known := arn != ""
	cctx, cancel := e.callContext(ctx)
	defer cancel()
	if arn == "" {
		for _, status := range []types.DesiredStatus{types.DesiredStatusRunning, types.DesiredStatusStopped} {
			out, err := e.ecs.ListTasks(cctx, &awsecs.ListTasksInput{Cluster: aws.String(e.cfg.Cluster), StartedBy: aws.String(id), DesiredStatus: status})
			if err != nil {
				return nil, fmt.Errorf("list tasks started by %s: %w", id, err)
			}
			if len(out.TaskArns) > 0 {
				arn = out.TaskArns[0]
				break
			}
		}
		if arn == "" {
			return nil, fmt.Errorf("task %s: %w", id, compute.ErrNotFound)
		}
	}
	tasks, err := e.describe(cctx, []string{arn})
	if err != nil {
		return nil, err
	}
	t, ok := tasks[arn]
	if !ok && known {
		// ECS is eventually consistent: a task this process just launched
		// may be MISSING from DescribeTasks for a while. It is pending; the
		// poller gives up on it only after missingPolls polls.
		return &types.Task{TaskArn: aws.String(arn), LastStatus: aws.String("PENDING"), DesiredStatus: aws.String("RUNNING"),
			Tags: []types.Tag{{Key: aws.String(compute.LabelManaged), Value: aws.String("true")}}}, nil
	}
	if !ok || !managed(t) {
		return nil, fmt.Errorf("task %s (%s): %w", id, arn, compute.ErrNotFound)
	}
	e.mu.Lock()
	e.arns[id] = arn
	e.mu.Unlock()
	return t, nil
}

// describe is DescribeTasks with tags for up to 100 ARNs. Missing tasks
// are absent from the map.
func (e *Engine) describe(ctx context.Context, arns []string) (map[string]*types.Task, error) {
	out, err := e.ecs.DescribeTasks(ctx, &awsecs.DescribeTasksInput{Cluster: aws.String(e.cfg.Cluster), Tasks: arns, Include: []types.TaskField{types.TaskFieldTags}})
	if err != nil {
		return nil, fmt.Errorf("describe %d tasks: %w", len(arns), err)
	}
	m := make(map[string]*types.Task, len(out.Tasks))
	for i := range out.Tasks {
		m[aws.ToString(out.Tasks[i].TaskArn)] = &out.Tasks[i]
	}
	return m, nil
}

func managed(t *types.Task) bool { return tag(t, compute.LabelManaged) == "true" }

func tag(t *types.Task, key string) string {
	for _, tg := range t.Tags {
		if aws.ToString(tg.Key) == key {
			return aws.ToString(tg.Value)
		}
	}
	return ""
}

// Wait implements compute.Engine through the shared poller.
func (e *Engine) Wait(ctx context.Context, id string) (exit.Result, error) {
	if e.isCreated(id) {
		return exit.Result{}, fmt.Errorf("wait for task %s: created, not started", id)
	}
	t, err := e.find(ctx, id)
	if err != nil {
		return exit.Result{}, fmt.Errorf("wait for task %s: %w", id, err)
	}
	if aws.ToString(t.LastStatus) != "STOPPED" {
		t, err = e.poller.wait(ctx, aws.ToString(t.TaskArn))
		if err != nil {
			return exit.Result{}, fmt.Errorf("wait for task %s: %w", id, err)
		}
	}
	return exitResult(t), nil
}

// exitResult maps a stopped task to how its container ended: the exit
// code, a signal above 128, OOM from the container's reason; the task's
// stoppedReason becomes Err only when the container has no exit code (it
// never ran) or the platform took it away (Spot interruption).
func exitResult(t *types.Task) exit.Result {
	var c *types.Container
	for i := range t.Containers {
		if aws.ToString(t.Containers[i].Name) == ContainerName {
			c = &t.Containers[i]
		}
	}
	reason := aws.ToString(t.StoppedReason)
	if c == nil || c.ExitCode == nil {
		msg := reason
		if c != nil && aws.ToString(c.Reason) != "" && aws.ToString(c.Reason) != reason {
			msg += ": " + aws.ToString(c.Reason)
		}
		err := fmt.Errorf("ecs task %s stopped (%s) without an exit code: %s", aws.ToString(t.TaskArn), t.StopCode, msg)
		if strings.Contains(msg, "CannotPullContainerError") {
			err = fmt.Errorf("%w: %w", compute.ErrImageNotFound, err)
		}
		return exit.Result{ExitCode: -1, Err: err}
	}
	res := exit.Result{ExitCode: int(*c.ExitCode)}
	res.Signal = signalName(res.ExitCode)
	res.OOMKilled = strings.HasPrefix(aws.ToString(c.Reason), "OutOfMemoryError")
	switch t.StopCode {
	case types.TaskStopCodeSpotInterruption, types.TaskStopCodeTerminationNotice, types.TaskStopCodeInfrastructureHealth:
		res.Err = fmt.Errorf("ecs task %s stopped by the platform (%s): %s", aws.ToString(t.TaskArn), t.StopCode, reason)
	}
	return res
}

var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
	13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}

func signalName(code int) string {
	if code <= 128 {
		return ""
	}
	return signalNames[code-128]
}

// Stop implements compute.Engine: StopTask, then wait until the task has
// stopped. ECS sends SIGTERM and, after the task definition's stopTimeout,
// SIGKILL: grace cannot change that (docs/ecs.md).
func (e *Engine) Stop(ctx context.Context, id string, _ time.Duration) error {
	if e.isCreated(id) {
		return nil
	}
	t, err := e.find(ctx, id)
	if err != nil {
		return fmt.Errorf("stop task %s: %w", id, err)
	}
	if aws.ToString(t.LastStatus) == "STOPPED" {
		return nil
	}
	arn := aws.ToString(t.TaskArn)
	if err := e.stopTask(ctx, arn, "agora: stop"); err != nil {
		return fmt.Errorf("stop task %s: %w", id, err)
	}
	// Bounded by the longest stopTimeout this engine registers (the task
	// may be another process's) and a call.
	wctx, cancel := context.WithTimeout(ctx, max(e.cfg.StopTimeout, MaxFargateStopTimeout)+e.cfg.CallTimeout)
	defer cancel()
	if _, err := e.poller.wait(wctx, arn); err != nil {
		return fmt.Errorf("stop task %s: wait until stopped: %w", id, err)
	}
	return nil
}

func (e *Engine) stopTask(ctx context.Context, arn, reason string) error {
	cctx, cancel := e.callContext(ctx)
	defer cancel()
	_, err := e.ecs.StopTask(cctx, &awsecs.StopTaskInput{Cluster: aws.String(e.cfg.Cluster), Task: aws.String(arn), Reason: aws.String(reason)})
	if err != nil {
		return fmt.Errorf("stop task %s: %w", arn, err)
	}
	return nil
}

// Remove implements compute.Engine: a running task is stopped (not waited
// for) and the task loses its agora.managed tag, so List and the other
// verbs no longer see it; a definition used once (host volumes) is
// deregistered.
func (e *Engine) Remove(ctx context.Context, id string) error {
	e.mu.Lock()
	p := e.created[id]
	delete(e.created, id)
	e.mu.Unlock()
	if p != nil {
		return e.deregisterOnce(ctx, p.launch.family, p.taskDef)
	}
	t, err := e.find(ctx, id)
	if errors.Is(err, compute.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove task %s: %w", id, err)
	}
	arn := aws.ToString(t.TaskArn)
	if aws.ToString(t.DesiredStatus) != "STOPPED" {
		if err := e.stopTask(ctx, arn, "agora: remove"); err != nil {
			return fmt.Errorf("remove task %s: %w", id, err)
		}
	}
	cctx, cancel := e.callContext(ctx)
	defer cancel()
	if _, err := e.ecs.UntagResource(cctx, &awsecs.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{compute.LabelManaged}}); err != nil {
		return fmt.Errorf("remove task %s: untag %s: %w", id, arn, err)
	}
	e.mu.Lock()
	delete(e.arns, id)
	e.mu.Unlock()
	td := aws.ToString(t.TaskDefinitionArn)
	return e.deregisterOnce(ctx, familyOf(td), td)
}

// familyOf is the family of a task definition ARN (…:task-definition/family:rev).
func familyOf(arn string) string {
	_, rest, _ := strings.Cut(arn, "task-definition/")
	family, _, _ := strings.Cut(rest, ":")
	return family
}

// deregisterOnce deregisters a task definition made for one container.
func (e *Engine) deregisterOnce(ctx context.Context, family, arn string) error {
	if !strings.HasPrefix(family, e.cfg.FamilyPrefix+"-once-") {
		return nil
	}
	e.mu.Lock()
	delete(e.families, family)
	e.mu.Unlock()
	cctx, cancel := e.callContext(ctx)
	defer cancel()
	_, err := e.ecs.DeregisterTaskDefinition(cctx, &awsecs.DeregisterTaskDefinitionInput{TaskDefinition: aws.String(arn)})
	var ce *types.ClientException
	if err != nil && !errors.As(err, &ce) {
		return fmt.Errorf("deregister task definition %s: %w", arn, err)
	}
	return nil
}

// List implements compute.Engine: this process's created containers and
// the cluster's managed tasks (running and stopped) that carry labels.
func (e *Engine) List(ctx context.Context, labels map[string]string) ([]compute.Container, error) {
	var out []compute.Container
	e.mu.Lock()
	for _, p := range e.created {
		if hasLabels(p.spec.Labels, labels) {
			l := map[string]string{compute.LabelManaged: "true"}
			for k, v := range p.spec.Labels {
				l[k] = v
			}
			out = append(out, compute.Container{ID: p.id, Name: p.spec.Name, Labels: l, State: "created", Created: p.created})
		}
	}
	e.mu.Unlock()
	cctx, cancel := e.callContext(ctx)
	defer cancel()
	var arns []string
	for _, status := range []types.DesiredStatus{types.DesiredStatusRunning, types.DesiredStatusStopped} {
		p := awsecs.NewListTasksPaginator(e.ecs, &awsecs.ListTasksInput{Cluster: aws.String(e.cfg.Cluster), DesiredStatus: status})
		for p.HasMorePages() {
			page, err := p.NextPage(cctx)
			if err != nil {
				return nil, fmt.Errorf("list tasks: %w", err)
			}
			arns = append(arns, page.TaskArns...)
		}
	}
	for batch := range slices.Chunk(arns, 100) {
		tasks, err := e.describe(cctx, batch)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		for _, arn := range batch {
			t := tasks[arn]
			if t == nil || !managed(t) {
				continue
			}
			l := map[string]string{}
			for _, tg := range t.Tags {
				l[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
			}
			if !hasLabels(l, labels) {
				continue
			}
			id := aws.ToString(t.StartedBy)
			e.mu.Lock()
			e.arns[id] = arn
			e.mu.Unlock()
			c := compute.Container{ID: id, Name: l[TagName], Labels: l, State: "running", Created: aws.ToTime(t.CreatedAt)}
			delete(l, TagName)
			if aws.ToString(t.LastStatus) == "STOPPED" {
				c.State = "exited"
				c.ExitCode = exitResult(t).ExitCode
			}
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b compute.Container) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
