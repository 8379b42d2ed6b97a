package ecs

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/fargate"
)

// launch is what Start needs besides the task definition: a pure function
// of the spec and the configuration.
type launch struct {
	family    string
	taskDef   *awsecs.RegisterTaskDefinitionInput
	overrides *types.TaskOverride
	network   *types.NetworkConfiguration
	tags      []types.Tag
}

// compile turns a spec into the task definition (content-named family) and
// the RunTask overrides, tags and network. Pure. Errors wrap
// compute.ErrInvalidSpec.
func compile(cfg Config, spec compute.ContainerSpec) (*launch, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	onFargate := cfg.Fargate()
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", compute.ErrInvalidSpec, fmt.Sprintf(format, args...))
	}
	if spec.StopSignal != "" && spec.StopSignal != "SIGTERM" {
		return nil, invalid("ECS always stops with SIGTERM, not %s", spec.StopSignal)
	}
	if onFargate && len(spec.Mounts) > 0 {
		return nil, invalid("Fargate has no host bind mounts (%d given): pass files through storage", len(spec.Mounts))
	}
	stop := cfg.StopTimeout
	if spec.StopTimeout > 0 {
		stop = spec.StopTimeout
	}
	if onFargate && stop > MaxFargateStopTimeout {
		stop = MaxFargateStopTimeout
	}
	network := spec.NetworkMode
	if network == "" {
		network = compute.NetworkNone
	}

	tmpfs := spec.TmpfsBytes
	if tmpfs == 0 {
		tmpfs = compute.DefaultTmpfsBytes
	}
	cd := types.ContainerDefinition{
		Name:                   aws.String(ContainerName),
		Image:                  aws.String(spec.Image),
		Essential:              aws.Bool(true),
		EntryPoint:             spec.Entrypoint,
		User:                   aws.String(spec.User),
		ReadonlyRootFilesystem: aws.Bool(!spec.WritableRootfs),
		StopTimeout:            aws.Int32(int32((stop + time.Second - 1) / time.Second)),
		LinuxParameters: &types.LinuxParameters{
			Capabilities:       &types.KernelCapabilities{Drop: []string{"ALL"}},
			InitProcessEnabled: aws.Bool(spec.Init),
		},
		LogConfiguration: &types.LogConfiguration{
			LogDriver: types.LogDriverAwslogs,
			Options: map[string]string{
				"awslogs-group":         cfg.LogGroup,
				"awslogs-region":        cfg.Region,
				"awslogs-stream-prefix": cfg.LogStreamPrefix,
			},
		},
	}
	if spec.WorkingDir != "" {
		cd.WorkingDirectory = aws.String(spec.WorkingDir)
	}
	if len(spec.Secrets) > 0 {
		// ECS resolves secrets with the execution role when the task
		// starts; without one the task would only fail then, a poll later.
		if cfg.ExecutionRoleARN == "" {
			return nil, fmt.Errorf("%d secrets need an execution role (Config.ExecutionRoleARN): ECS reads them from Secrets Manager with it when the task starts", len(spec.Secrets))
		}
		// In the definition, never the overrides (which have no secrets and
		// would carry values in plain text): part of the content hash, so
		// one definition per distinct set, sorted so the order the caller
		// gives them in does not make another.
		refs := slices.Clone(spec.Secrets)
		slices.SortFunc(refs, func(a, b compute.SecretRef) int {
			return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.ValueFrom, b.ValueFrom))
		})
		for _, r := range refs {
			if !strings.HasPrefix(r.ValueFrom, "arn:") {
				return nil, invalid("secret %s: valueFrom %q is not an ARN; ECS reads a bare name as an SSM parameter's, so give the Secrets Manager secret's full ARN", r.Name, r.ValueFrom)
			}
			cd.Secrets = append(cd.Secrets, types.Secret{Name: aws.String(r.Name), ValueFrom: aws.String(r.ValueFrom)})
		}
	}
	td := &awsecs.RegisterTaskDefinitionInput{}
	if onFargate {
		// Fargate has neither tmpfs nor docker security options: /tmp is a
		// volume of the task's ephemeral storage; no-new-privileges is
		// Fargate's own (no setuid binaries in the image do the rest).
		td.RequiresCompatibilities = []types.Compatibility{types.CompatibilityFargate}
		td.NetworkMode = types.NetworkModeAwsvpc
		td.Cpu, td.Memory = aws.String("256"), aws.String("512")
		td.Volumes = []types.Volume{{Name: aws.String("tmp")}}
		cd.MountPoints = []types.MountPoint{{SourceVolume: aws.String("tmp"), ContainerPath: aws.String("/tmp"), ReadOnly: aws.Bool(false)}}
		if network == compute.NetworkHost {
			return nil, invalid("Fargate has no host network")
		}
		if len(spec.ExtraHosts) > 0 {
			return nil, invalid("awsvpc tasks take no extra hosts")
		}
	} else {
		td.RequiresCompatibilities = []types.Compatibility{types.CompatibilityEc2}
		td.NetworkMode = types.NetworkMode(network)
		cd.DockerSecurityOptions = []string{"no-new-privileges"}
		cd.MemoryReservation = aws.Int32(ec2MemoryReservationMiB)
		cd.LinuxParameters.Tmpfs = []types.Tmpfs{{ContainerPath: aws.String("/tmp"), Size: int32(fargate.MiB(tmpfs)), MountOptions: []string{"rw", "nosuid", "nodev", "mode=1777"}}}
		for _, h := range spec.ExtraHosts {
			name, ip, ok := strings.Cut(h, ":")
			if _, err := netip.ParseAddr(ip); !ok || err != nil {
				return nil, invalid("extra host %q: ECS needs host:ip (no host-gateway)", h)
			}
			cd.ExtraHosts = append(cd.ExtraHosts, types.HostEntry{Hostname: aws.String(name), IpAddress: aws.String(ip)})
		}
		for i, m := range spec.Mounts {
			name := "m" + strconv.Itoa(i)
			td.Volumes = append(td.Volumes, types.Volume{Name: aws.String(name), Host: &types.HostVolumeProperties{SourcePath: aws.String(m.Source)}})
			cd.MountPoints = append(cd.MountPoints, types.MountPoint{SourceVolume: aws.String(name), ContainerPath: aws.String(m.Target), ReadOnly: aws.Bool(m.ReadOnly)})
		}
	}
	for i, dir := range spec.ScratchDirs {
		// A volume without a host path: the task's own storage (Fargate's
		// ephemeral storage), gone with the task.
		name := "scratch" + strconv.Itoa(i)
		td.Volumes = append(td.Volumes, types.Volume{Name: aws.String(name)})
		cd.MountPoints = append(cd.MountPoints, types.MountPoint{SourceVolume: aws.String(name), ContainerPath: aws.String(dir), ReadOnly: aws.Bool(false)})
	}
	if cfg.TaskRoleARN != "" {
		td.TaskRoleArn = aws.String(cfg.TaskRoleARN)
	}
	if cfg.ExecutionRoleARN != "" {
		td.ExecutionRoleArn = aws.String(cfg.ExecutionRoleARN)
	}
	td.ContainerDefinitions = []types.ContainerDefinition{cd}
	content, err := json.Marshal(td)
	if err != nil {
		return nil, fmt.Errorf("task definition of %s: %w", spec.Image, err)
	}
	sum := sha256.Sum256(content)
	family := cfg.FamilyPrefix + "-" + hex.EncodeToString(sum[:10])
	if len(spec.Mounts) > 0 {
		// Host paths are per dispatch: such a definition is used once and
		// deregistered by Remove.
		family = cfg.FamilyPrefix + "-once-" + hex.EncodeToString(sum[:10])
	}
	td.Family = aws.String(family)
	td.Tags = []types.Tag{{Key: aws.String(compute.LabelManaged), Value: aws.String("true")}}

	co := types.ContainerOverride{Name: aws.String(ContainerName), Command: spec.Cmd}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		co.Environment = append(co.Environment, types.KeyValuePair{Name: aws.String(k), Value: aws.String(v)})
	}
	ov := &types.TaskOverride{}
	cpuUnits := fargate.CPUUnits(spec.Resources.NanoCPUs)
	memMiB := fargate.MiB(spec.Resources.MemoryBytes)
	if memMiB > 0 {
		// At least 6 MiB, as ECS wants: spec.Validate refuses less.
		co.Memory = aws.Int32(int32(memMiB))
		if !onFargate && memMiB <= ec2MemoryReservationMiB {
			// ECS wants the hard limit above the definition's reservation:
			// a small request reserves half of itself instead.
			co.MemoryReservation = aws.Int32(int32(memMiB / 2))
		}
	}
	if cpuUnits > 0 {
		co.Cpu = aws.Int32(int32(cpuUnits))
	}
	if onFargate {
		size, err := fargate.Fit(cpuUnits, memMiB)
		if err != nil {
			return nil, invalid("%v", err)
		}
		ov.Cpu, ov.Memory = aws.String(strconv.FormatInt(size.CPU, 10)), aws.String(strconv.FormatInt(size.MemoryMiB, 10))
	}
	ov.ContainerOverrides = []types.ContainerOverride{co}
	if b, err := json.Marshal(overridesWire(ov)); err != nil {
		return nil, fmt.Errorf("overrides: %w", err)
	} else if len(b) > MaxOverrideBytes {
		return nil, invalid("the task's overrides are %d bytes, over ECS's %d: pass large values through storage", len(b), MaxOverrideBytes)
	}

	tags := []types.Tag{{Key: aws.String(compute.LabelManaged), Value: aws.String("true")}}
	if spec.Name != "" {
		tags = append(tags, types.Tag{Key: aws.String(TagName), Value: aws.String(spec.Name)})
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Labels)) {
		if k == compute.LabelManaged || k == TagName {
			continue
		}
		if len(k) > 128 || len(spec.Labels[k]) > 256 {
			return nil, invalid("label %s: ECS tags allow keys of 128 and values of 256 characters", k)
		}
		tags = append(tags, types.Tag{Key: aws.String(k), Value: aws.String(spec.Labels[k])})
	}
	if len(tags) > 50 {
		return nil, invalid("%d labels: ECS allows 50 tags", len(tags))
	}

	var nc *types.NetworkConfiguration
	if onFargate {
		groups := cfg.SecurityGroups
		if network == compute.NetworkNone {
			groups = cfg.IsolatedSecurityGroups
		}
		public := types.AssignPublicIpDisabled
		if cfg.AssignPublicIP && network != compute.NetworkNone {
			public = types.AssignPublicIpEnabled
		}
		nc = &types.NetworkConfiguration{AwsvpcConfiguration: &types.AwsVpcConfiguration{
			Subnets: cfg.Subnets, SecurityGroups: groups, AssignPublicIp: public,
		}}
	}
	return &launch{family: family, taskDef: td, overrides: ov, network: nc, tags: tags}, nil
}

// overridesWire is the overrides as the JSON protocol carries them, to
// measure them against MaxOverrideBytes.
func overridesWire(ov *types.TaskOverride) any {
	type kv struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	type co struct {
		Name        string   `json:"name"`
		Command     []string `json:"command,omitempty"`
		Environment []kv     `json:"environment,omitempty"`
		Cpu         *int32   `json:"cpu,omitempty"`
		Memory      *int32   `json:"memory,omitempty"`
		Reservation *int32   `json:"memoryReservation,omitempty"`
	}
	var out struct {
		ContainerOverrides []co    `json:"containerOverrides"`
		Cpu                *string `json:"cpu,omitempty"`
		Memory             *string `json:"memory,omitempty"`
	}
	out.Cpu, out.Memory = ov.Cpu, ov.Memory
	for _, c := range ov.ContainerOverrides {
		w := co{Name: aws.ToString(c.Name), Command: c.Command, Cpu: c.Cpu, Memory: c.Memory, Reservation: c.MemoryReservation}
		for _, e := range c.Environment {
			w.Environment = append(w.Environment, kv{aws.ToString(e.Name), aws.ToString(e.Value)})
		}
		out.ContainerOverrides = append(out.ContainerOverrides, w)
	}
	return out
}

// ec2MemoryReservationMiB is the soft limit an EC2 task definition
// reserves for its container; a request at or below it reserves half of
// itself in the overrides, since ECS wants memory above memoryReservation.
const ec2MemoryReservationMiB = 64

// CheckResources refuses, on Fargate, resources no Fargate task size
// holds, naming the nearest size; on the EC2 launch type every request
// passes (the instance's capacity decides). The runner calls it when it
// claims a dispatch, before anything of the dispatch is written.
func (e *Engine) CheckResources(r compute.Resources) error {
	if !e.cfg.Fargate() {
		return nil
	}
	_, err := fargate.FitResources(r.NanoCPUs, r.MemoryBytes)
	return err
}
