package ecsfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
)

const account = "000000000000"

// taskDef is one registered revision.
type taskDef struct {
	arn      string
	family   string
	revision int
	status   string
	in       awsecs.RegisterTaskDefinitionInput
	raw      map[string]any
}

func (s *Server) ecs(op string, body []byte) (any, *apiError) {
	decode := func(v any) *apiError {
		if err := json.Unmarshal(body, v); err != nil {
			return &apiError{400, "SerializationException", err.Error()}
		}
		return nil
	}
	switch op {
	case "RegisterTaskDefinition":
		var in awsecs.RegisterTaskDefinitionInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		var raw map[string]any
		_ = json.Unmarshal(body, &raw)
		return s.register(in, raw)
	case "DescribeTaskDefinition":
		var in awsecs.DescribeTaskDefinitionInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		d := s.lookupDef(aws.ToString(in.TaskDefinition))
		if d == nil {
			return nil, clientErr("Unable to describe task definition.")
		}
		return map[string]any{"taskDefinition": d.wire()}, nil
	case "DeregisterTaskDefinition":
		var in awsecs.DeregisterTaskDefinitionInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		d := s.lookupDef(aws.ToString(in.TaskDefinition))
		if d == nil || !strings.Contains(aws.ToString(in.TaskDefinition), ":") {
			return nil, clientErr("The specified task definition does not exist.")
		}
		d.status = "INACTIVE"
		return map[string]any{"taskDefinition": d.wire()}, nil
	case "RunTask":
		var in awsecs.RunTaskInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		var raw struct {
			Overrides json.RawMessage `json:"overrides"`
		}
		_ = json.Unmarshal(body, &raw)
		return s.runTask(in, len(raw.Overrides))
	case "DescribeTasks":
		var in awsecs.DescribeTasksInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		if len(in.Tasks) == 0 || len(in.Tasks) > 100 {
			return nil, invalidParam("Tasks must hold 1 to 100 tasks, not %d", len(in.Tasks))
		}
		tags := slices.Contains(in.Include, types.TaskFieldTags)
		s.mu.Lock()
		defer s.mu.Unlock()
		tasks, failures := []any{}, []any{}
		for _, ref := range in.Tasks {
			t := s.lookupTask(aws.ToString(in.Cluster), ref)
			if t == nil || time.Since(t.createdAt) < s.cfg.InvisibleFor {
				failures = append(failures, map[string]string{"arn": ref, "reason": "MISSING"})
				continue
			}
			tasks = append(tasks, t.wire(tags))
		}
		return map[string]any{"tasks": tasks, "failures": failures}, nil
	case "ListTasks":
		var in awsecs.ListTasksInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return s.listTasks(in)
	case "StopTask":
		var in awsecs.StopTaskInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		t := s.lookupTask(aws.ToString(in.Cluster), aws.ToString(in.Task))
		if t == nil {
			return nil, invalidParam("The referenced task was not found.")
		}
		reason := aws.ToString(in.Reason)
		if reason == "" {
			reason = "Task stopped by user"
		}
		t.requestStop(types.TaskStopCodeUserInitiated, reason)
		return map[string]any{"task": t.wire(false)}, nil
	case "TagResource", "UntagResource":
		var in struct {
			ResourceArn string
			Tags        []types.Tag
			TagKeys     []string
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		if err := checkTags(in.Tags); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		t := s.tasks[in.ResourceArn]
		if t == nil {
			return nil, &apiError{400, "ResourceNotFoundException", "The specified resource could not be found."}
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, tg := range in.Tags {
			t.tags = slices.DeleteFunc(t.tags, func(x types.Tag) bool { return aws.ToString(x.Key) == aws.ToString(tg.Key) })
			t.tags = append(t.tags, tg)
		}
		t.tags = slices.DeleteFunc(t.tags, func(x types.Tag) bool { return slices.Contains(in.TagKeys, aws.ToString(x.Key)) })
		return map[string]any{}, nil
	}
	return nil, &apiError{400, "UnknownOperationException", "the fake does not implement " + op}
}

func (s *Server) register(in awsecs.RegisterTaskDefinitionInput, raw map[string]any) (any, *apiError) {
	family := aws.ToString(in.Family)
	if err := checkRegister(in); err != nil {
		return nil, err
	}
	fargate := slices.Contains(in.RequiresCompatibilities, types.CompatibilityFargate)
	if fargate {
		if in.NetworkMode != types.NetworkModeAwsvpc {
			return nil, clientErr("Fargate only supports network mode 'awsvpc'.")
		}
		for _, v := range in.Volumes {
			if v.Host != nil && v.Host.SourcePath != nil {
				return nil, clientErr("Invalid 'host.sourcePath' setting for volume '%s'. Remove 'host.sourcePath' from volume definition and try again.", aws.ToString(v.Name))
			}
		}
		for _, c := range in.ContainerDefinitions {
			if c.LinuxParameters != nil && len(c.LinuxParameters.Tmpfs) > 0 {
				return nil, clientErr("Tmpfs is not supported on Fargate.")
			}
			if len(c.DockerSecurityOptions) > 0 {
				return nil, clientErr("dockerSecurityOptions is not supported on Fargate.")
			}
			if c.StopTimeout != nil && *c.StopTimeout > 120 {
				return nil, clientErr("stopTimeout must be at most 120 seconds on Fargate.")
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rev := len(s.defs[family]) + 1
	d := &taskDef{
		arn:    fmt.Sprintf("arn:aws:ecs:%s:%s:task-definition/%s:%d", s.cfg.Region, account, family, rev),
		family: family, revision: rev, status: "ACTIVE", in: in, raw: raw,
	}
	s.defs[family] = append(s.defs[family], d)
	return map[string]any{"taskDefinition": d.wire(), "tags": raw["tags"]}, nil
}

// lookupDef finds "family" (latest ACTIVE), "family:rev" or an ARN.
func (s *Server) lookupDef(ref string) *taskDef {
	if i := strings.Index(ref, "task-definition/"); i >= 0 {
		ref = ref[i+len("task-definition/"):]
	}
	family, rev, hasRev := strings.Cut(ref, ":")
	revs := s.defs[family]
	if hasRev {
		n, err := strconv.Atoi(rev)
		if err != nil || n < 1 || n > len(revs) {
			return nil
		}
		return revs[n-1]
	}
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].status == "ACTIVE" {
			return revs[i]
		}
	}
	return nil
}

func (d *taskDef) wire() map[string]any {
	out := map[string]any{}
	for k, v := range d.raw {
		if k != "tags" {
			out[k] = v
		}
	}
	out["taskDefinitionArn"] = d.arn
	out["revision"] = d.revision
	out["status"] = d.status
	return out
}

func clusterName(c string) string {
	if c == "" {
		return "default"
	}
	if i := strings.LastIndex(c, "/"); i >= 0 {
		return c[i+1:]
	}
	return c
}

func (s *Server) lookupTask(cluster, ref string) *task {
	if t := s.tasks[ref]; t != nil && t.cluster == clusterName(cluster) {
		return t
	}
	for _, t := range s.tasks {
		if t.id == ref && t.cluster == clusterName(cluster) {
			return t
		}
	}
	return nil
}

func (s *Server) runTask(in awsecs.RunTaskInput, overrideBytes int) (any, *apiError) {
	if err := checkRunTask(in); err != nil {
		return nil, err
	}
	if aws.ToInt32(in.Count) > 1 {
		return nil, invalidParam("the fake runs one task per call")
	}
	if overrideBytes > 8192 {
		return nil, invalidParam("Container Overrides length must be at most 8192")
	}
	if tok := aws.ToString(in.ClientToken); len(tok) > 64 {
		return nil, invalidParam("clientToken is longer than 64 characters")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &apiError{503, "ServerException", "shutting down"}
	}
	cluster := clusterName(aws.ToString(in.Cluster))
	if tok := aws.ToString(in.ClientToken); tok != "" {
		if arn, ok := s.tokens[tok]; ok {
			// Idempotent: the same token gives the task it launched.
			return map[string]any{"tasks": []any{s.tasks[arn].wire(false)}, "failures": []any{}}, nil
		}
	}
	d := s.lookupDef(aws.ToString(in.TaskDefinition))
	if d == nil || d.status != "ACTIVE" {
		return nil, clientErr("TaskDefinition not found.")
	}
	if d.in.NetworkMode == types.NetworkModeAwsvpc && (in.NetworkConfiguration == nil || in.NetworkConfiguration.AwsvpcConfiguration == nil || len(in.NetworkConfiguration.AwsvpcConfiguration.Subnets) == 0) {
		return nil, invalidParam("Network Configuration must be provided when networkMode 'awsvpc' is specified.")
	}
	launchType, provider := string(in.LaunchType), ""
	if len(in.CapacityProviderStrategy) > 0 {
		provider = aws.ToString(in.CapacityProviderStrategy[0].CapacityProvider)
		launchType = "EC2"
		if provider == "FARGATE" || provider == "FARGATE_SPOT" {
			launchType = "FARGATE"
		}
	}
	if launchType == "" {
		launchType = "EC2"
	}
	fargateDef := slices.Contains(d.in.RequiresCompatibilities, types.CompatibilityFargate)
	if (launchType == "FARGATE") != fargateDef {
		return nil, invalidParam("Task definition does not support launch_type %s.", launchType)
	}
	if err := checkOverrides(d, in.Overrides, fargateDef); err != nil {
		return nil, err
	}
	if s.runFails > 0 {
		s.runFails--
		return map[string]any{"tasks": []any{}, "failures": []any{map[string]string{
			"arn": fmt.Sprintf("arn:aws:ecs:%s:%s:cluster/%s", s.cfg.Region, account, cluster), "reason": "Capacity is unavailable at this time. Please try again later or in a different availability zone",
		}}}, nil
	}
	t := s.newTask(cluster, d, in, launchType, provider)
	if tok := aws.ToString(in.ClientToken); tok != "" {
		s.tokens[tok] = t.arn
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(t)
	}()
	if s.loseResps > 0 {
		s.loseResps--
		return nil, &apiError{500, "ServerException", "injected: the response to a RunTask that launched " + t.arn + " is lost"}
	}
	return map[string]any{"tasks": []any{t.wire(false)}, "failures": []any{}}, nil
}

func (s *Server) listTasks(in awsecs.ListTasksInput) (any, *apiError) {
	desired := string(in.DesiredStatus)
	if desired == "" {
		desired = "RUNNING"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var arns []string
	for _, arn := range s.order {
		t := s.tasks[arn]
		t.mu.Lock()
		ok := t.cluster == clusterName(aws.ToString(in.Cluster)) && t.desired == desired && time.Since(t.createdAt) >= s.cfg.InvisibleFor &&
			(in.StartedBy == nil || t.startedBy == aws.ToString(in.StartedBy)) &&
			(in.Family == nil || t.def.family == aws.ToString(in.Family))
		t.mu.Unlock()
		if ok {
			arns = append(arns, arn)
		}
	}
	start := 0
	if in.NextToken != nil {
		n, err := strconv.Atoi(aws.ToString(in.NextToken))
		if err != nil || n < 0 || n > len(arns) {
			return nil, invalidParam("bad nextToken")
		}
		start = n
	}
	limit := int(aws.ToInt32(in.MaxResults))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	end := min(start+limit, len(arns))
	out := map[string]any{"taskArns": append([]string{}, arns[start:end]...)}
	if end < len(arns) {
		out["nextToken"] = strconv.Itoa(end)
	}
	return out, nil
}

// epoch is the JSON protocols' timestamp: seconds since 1970.
func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
