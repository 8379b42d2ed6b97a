package ecs

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agoradev/agora/internal/compute"
)

func testConfig(fargate bool) Config {
	c := Config{Cluster: "c", Region: "eu-west-1", LogGroup: "/agora", Subnets: []string{"subnet-1"},
		SecurityGroups: []string{"sg-out"}, IsolatedSecurityGroups: []string{"sg-none"}, ExecutionRoleARN: "arn:exec"}
	if !fargate {
		c.LaunchType = LaunchEC2
	}
	return c.WithDefaults()
}

func testSpec() compute.ContainerSpec {
	return compute.ContainerSpec{
		Name: "agora-d-1-abcd", Image: "123.dkr.ecr.eu-west-1.amazonaws.com/agora-worker:1", User: "65532:65532",
		WorkingDir: "/workspace", Env: []string{"AGORA_DISPATCH_ID=d-1", "EMPTY="}, Init: true,
		Labels:    map[string]string{compute.LabelDispatchID: "d-1", compute.LabelTaskID: "t-1"},
		Resources: compute.Resources{NanoCPUs: 1_500_000_000, MemoryBytes: 3000 << 20, PidsLimit: 64},
	}
}

func TestCompileFargate(t *testing.T) {
	l, err := compile(testConfig(true), testSpec())
	if err != nil {
		t.Fatal(err)
	}
	td, cd := l.taskDef, l.taskDef.ContainerDefinitions[0]
	check := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("network mode", td.NetworkMode, types.NetworkModeAwsvpc)
	check("compatibility", td.RequiresCompatibilities[0], types.CompatibilityFargate)
	check("user", aws.ToString(cd.User), "65532:65532")
	check("read-only root", aws.ToBool(cd.ReadonlyRootFilesystem), true)
	check("capabilities dropped", strings.Join(cd.LinuxParameters.Capabilities.Drop, ","), "ALL")
	check("init", aws.ToBool(cd.LinuxParameters.InitProcessEnabled), true)
	check("no tmpfs on Fargate", len(cd.LinuxParameters.Tmpfs), 0)
	check("/tmp volume", aws.ToString(cd.MountPoints[0].ContainerPath), "/tmp")
	check("log driver", cd.LogConfiguration.LogDriver, types.LogDriverAwslogs)
	check("log group", cd.LogConfiguration.Options["awslogs-group"], "/agora")
	check("stop timeout", aws.ToInt32(cd.StopTimeout), int32(30))
	check("env not in the definition", len(cd.Environment), 0)
	check("execution role", aws.ToString(td.ExecutionRoleArn), "arn:exec")
	check("task cpu", aws.ToString(l.overrides.Cpu), "2048")
	check("task memory", aws.ToString(l.overrides.Memory), "4096")
	co := l.overrides.ContainerOverrides[0]
	check("container memory", aws.ToInt32(co.Memory), int32(3000))
	check("container cpu", aws.ToInt32(co.Cpu), int32(1536))
	check("env", len(co.Environment), 2)
	check("subnets", l.network.AwsvpcConfiguration.Subnets[0], "subnet-1")
	check("groups of network none", l.network.AwsvpcConfiguration.SecurityGroups[0], "sg-none")
	check("public ip", l.network.AwsvpcConfiguration.AssignPublicIp, types.AssignPublicIpDisabled)
	tags := map[string]string{}
	for _, tg := range l.tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	check("managed tag", tags[compute.LabelManaged], "true")
	check("dispatch tag", tags[compute.LabelDispatchID], "d-1")
	check("name tag", tags[TagName], "agora-d-1-abcd")

	// Only the overrides differ between dispatches: the same family.
	other := testSpec()
	other.Env = []string{"AGORA_DISPATCH_ID=d-2"}
	other.Name, other.Labels = "agora-d-2-abcd", map[string]string{compute.LabelDispatchID: "d-2"}
	other.Resources.MemoryBytes = 512 << 20
	l2, err := compile(testConfig(true), other)
	if err != nil {
		t.Fatal(err)
	}
	check("family of another dispatch of the image", l2.family, l.family)
	bridged := testSpec()
	bridged.NetworkMode = compute.NetworkBridge
	l3, _ := compile(testConfig(true), bridged)
	check("family of the bridged spec", l3.family, l.family)
	check("groups of network bridge", l3.network.AwsvpcConfiguration.SecurityGroups[0], "sg-out")
	img := testSpec()
	img.Image += "-other"
	l4, _ := compile(testConfig(true), img)
	if l4.family == l.family {
		t.Errorf("another image has the same family %s", l.family)
	}
}

func TestCompileEC2(t *testing.T) {
	spec := testSpec()
	spec.Mounts = []compute.Mount{{Source: "/data/ws/d-1", Target: "/workspace"}, {Source: "/data/spec/d-1", Target: "/agora", ReadOnly: true}}
	spec.NetworkMode = compute.NetworkBridge
	l, err := compile(testConfig(false), spec)
	if err != nil {
		t.Fatal(err)
	}
	td, cd := l.taskDef, l.taskDef.ContainerDefinitions[0]
	if td.NetworkMode != types.NetworkModeBridge || l.network != nil {
		t.Errorf("EC2 bridge: network mode %s, configuration %v; want bridge and none", td.NetworkMode, l.network)
	}
	if !slices.Equal(cd.DockerSecurityOptions, []string{"no-new-privileges"}) {
		t.Errorf("docker security options = %v", cd.DockerSecurityOptions)
	}
	if len(cd.LinuxParameters.Tmpfs) != 1 || cd.LinuxParameters.Tmpfs[0].Size != 64 {
		t.Errorf("tmpfs = %+v, want /tmp of 64 MiB", cd.LinuxParameters.Tmpfs)
	}
	if len(td.Volumes) != 2 || aws.ToString(td.Volumes[0].Host.SourcePath) != "/data/ws/d-1" || !aws.ToBool(cd.MountPoints[1].ReadOnly) {
		t.Errorf("volumes %+v, mount points %+v", td.Volumes, cd.MountPoints)
	}
	if !strings.HasPrefix(l.family, "agora-once-") {
		t.Errorf("family with host volumes = %s, want agora-once-…", l.family)
	}
	if l.overrides.Cpu != nil || l.overrides.Memory != nil {
		t.Errorf("EC2 task size overrides = %v/%v, want none", l.overrides.Cpu, l.overrides.Memory)
	}
}

func TestCompileRefuses(t *testing.T) {
	big := testSpec()
	big.Env = append(big.Env, "BIG="+strings.Repeat("x", 9000))
	for _, tc := range []struct {
		name    string
		fargate bool
		mod     func(*compute.ContainerSpec)
		want    string
	}{
		{"mounts on Fargate", true, func(s *compute.ContainerSpec) { s.Mounts = []compute.Mount{{Source: "/a", Target: "/b"}} }, "no host bind mounts"},
		{"host network on Fargate", true, func(s *compute.ContainerSpec) { s.NetworkMode = compute.NetworkHost }, "no host network"},
		{"stop signal", false, func(s *compute.ContainerSpec) { s.StopSignal = "SIGINT" }, "SIGTERM"},
		{"host-gateway", false, func(s *compute.ContainerSpec) { s.ExtraHosts = []string{compute.HostGatewayExtraHost} }, "host:ip"},
		{"overrides over 8 KiB", true, func(s *compute.ContainerSpec) { s.Env = big.Env }, "over ECS's 8192"},
		{"root", true, func(s *compute.ContainerSpec) { s.User = "root" }, ""},
		{"too much memory", true, func(s *compute.ContainerSpec) { s.Resources.MemoryBytes = 200 << 30 }, "no Fargate task size"},
		{"memory below ECS's minimum", false, func(s *compute.ContainerSpec) { s.Resources.MemoryBytes = 4 << 20 }, "minimum of 6 MiB"},
		{"secret by name", true, func(s *compute.ContainerSpec) {
			s.Secrets = []compute.SecretRef{{Name: "DB", ValueFrom: "prod/db"}}
		}, `valueFrom "prod/db" is not an ARN`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec()
			tc.mod(&spec)
			_, err := compile(testConfig(tc.fargate), spec)
			if !errors.Is(err, compute.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("compile = %v, want ErrInvalidSpec saying %q", err, tc.want)
			}
		})
	}
}

// TestCompileMemoryReservation: on EC2 the definition reserves 64 MiB and
// ECS wants a container's memory above its reservation, so a request at or
// below 64 MiB reserves half of itself in the overrides; Fargate sets no
// reservation.
func TestCompileMemoryReservation(t *testing.T) {
	for _, tc := range []struct {
		fargate     bool
		memMiB      int64
		reservation int32 // in the overrides; 0: none
	}{
		{false, 6, 3},
		{false, 32, 16},
		{false, 64, 32},
		{false, 65, 0},
		{false, 3000, 0},
		{true, 32, 0},
	} {
		spec := testSpec()
		spec.Resources.MemoryBytes = tc.memMiB << 20
		l, err := compile(testConfig(tc.fargate), spec)
		if err != nil {
			t.Fatalf("compile %d MiB (Fargate %v): %v", tc.memMiB, tc.fargate, err)
		}
		co := l.overrides.ContainerOverrides[0]
		if got := aws.ToInt32(co.MemoryReservation); got != tc.reservation {
			t.Errorf("%d MiB (Fargate %v): override memoryReservation = %d, want %d", tc.memMiB, tc.fargate, got, tc.reservation)
		}
		reservation := aws.ToInt32(l.taskDef.ContainerDefinitions[0].MemoryReservation)
		if co.MemoryReservation != nil {
			reservation = *co.MemoryReservation
		}
		if mem := aws.ToInt32(co.Memory); reservation != 0 && mem <= reservation {
			t.Errorf("%d MiB (Fargate %v): memory %d is not above its reservation %d", tc.memMiB, tc.fargate, mem, reservation)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := testConfig(true).Validate(); err != nil {
		t.Errorf("valid Fargate config: %v", err)
	}
	err := (Config{StopTimeout: 5 * time.Minute}).WithDefaults().Validate()
	for _, want := range []string{"cluster", "region", "log group", "subnets", "isolated security groups", "execution role", "over Fargate's"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate of an empty Fargate config = %v; want it to name %s", err, want)
		}
	}
	ec2 := Config{Cluster: "c", Region: "r", LogGroup: "g", LaunchType: LaunchEC2}.WithDefaults()
	if err := ec2.Validate(); err != nil || ec2.Fargate() {
		t.Errorf("EC2 config: Validate = %v, Fargate = %v", err, ec2.Fargate())
	}
	spot := Config{CapacityProvider: CapacityFargateSpot}.WithDefaults()
	if !spot.Fargate() {
		t.Error("FARGATE_SPOT capacity provider is not Fargate")
	}
}

// TestCompileSecrets: secrets go in the container definition, by
// reference, never in the overrides; each distinct set has a definition of
// its own, whatever the order they are given in.
func TestCompileSecrets(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf"
	const apiARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/api-XyZ123"
	withSecrets := func(refs ...compute.SecretRef) compute.ContainerSpec {
		s := testSpec()
		s.Secrets = refs
		return s
	}
	db := compute.SecretRef{Name: "DB_PASSWORD", ValueFrom: arn + ":password::"}
	api := compute.SecretRef{Name: "API_KEY", ValueFrom: apiARN}
	for _, fargate := range []bool{true, false} {
		name := map[bool]string{true: "Fargate", false: "EC2"}[fargate]
		t.Run(name, func(t *testing.T) {
			family := func(spec compute.ContainerSpec) string {
				t.Helper()
				l, err := compile(testConfig(fargate), spec)
				if err != nil {
					t.Fatalf("compile: %v", err)
				}
				return l.family
			}
			l, err := compile(testConfig(fargate), withSecrets(db, api))
			if err != nil {
				t.Fatal(err)
			}
			got := l.taskDef.ContainerDefinitions[0].Secrets
			want := []types.Secret{{Name: aws.String("API_KEY"), ValueFrom: aws.String(apiARN)}, {Name: aws.String("DB_PASSWORD"), ValueFrom: aws.String(arn + ":password::")}}
			if len(got) != len(want) {
				t.Fatalf("definition's secrets = %d, want %d", len(got), len(want))
			}
			for i := range want {
				if aws.ToString(got[i].Name) != aws.ToString(want[i].Name) || aws.ToString(got[i].ValueFrom) != aws.ToString(want[i].ValueFrom) {
					t.Errorf("definition's secret %d = %s from %s, want %s from %s (sorted by name)", i,
						aws.ToString(got[i].Name), aws.ToString(got[i].ValueFrom), aws.ToString(want[i].Name), aws.ToString(want[i].ValueFrom))
				}
			}
			ov, err := json.Marshal(l.overrides)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"DB_PASSWORD", "API_KEY", apiARN, arn} {
				if strings.Contains(string(ov), s) {
					t.Errorf("overrides carry %q: %s", s, ov)
				}
			}
			for _, tc := range []struct {
				name string
				spec compute.ContainerSpec
				same bool
			}{
				{"reordered", withSecrets(api, db), true},
				{"none", withSecrets(), false},
				{"one of them", withSecrets(db), false},
				{"another secret", withSecrets(db, compute.SecretRef{Name: "API_KEY", ValueFrom: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:staging/api-QwErTy"}), false},
				{"another name", withSecrets(db, compute.SecretRef{Name: "KEY", ValueFrom: apiARN}), false},
			} {
				if got := family(tc.spec) == l.family; got != tc.same {
					t.Errorf("family of %s = family of the original: %v, want %v", tc.name, got, tc.same)
				}
			}
			if family(withSecrets(db, api)) != l.family {
				t.Error("family is not stable across compiles")
			}
		})
	}
	t.Run("no execution role", func(t *testing.T) {
		cfg := testConfig(false)
		cfg.ExecutionRoleARN = ""
		if _, err := compile(cfg, withSecrets(db)); err == nil || !strings.Contains(err.Error(), "execution role") {
			t.Errorf("compile with secrets and no execution role = %v, want an error naming the execution role", err)
		}
		if _, err := compile(cfg, withSecrets()); err != nil {
			t.Errorf("compile without secrets or execution role = %v", err)
		}
	})
}

// TestCompileScratchDirs: a scratch dir is a task volume without a host
// path, on both launch types, and does not make a definition per dispatch.
func TestCompileScratchDirs(t *testing.T) {
	for _, fargate := range []bool{true, false} {
		spec := testSpec()
		spec.ScratchDirs = []string{"/workspace"}
		l, err := compile(testConfig(fargate), spec)
		if err != nil {
			t.Fatal(err)
		}
		td, cd := l.taskDef, l.taskDef.ContainerDefinitions[0]
		var found bool
		for _, mp := range cd.MountPoints {
			if aws.ToString(mp.ContainerPath) != "/workspace" {
				continue
			}
			found = !aws.ToBool(mp.ReadOnly)
			for _, v := range td.Volumes {
				if aws.ToString(v.Name) == aws.ToString(mp.SourceVolume) && v.Host != nil {
					t.Errorf("fargate=%v: the scratch volume has a host path: %+v", fargate, v.Host)
				}
			}
		}
		if !found {
			t.Errorf("fargate=%v: no writable mount point at /workspace: %+v", fargate, cd.MountPoints)
		}
		if strings.Contains(aws.ToString(td.Family), "-once-") {
			t.Errorf("fargate=%v: family %s is per dispatch", fargate, aws.ToString(td.Family))
		}
	}
}
