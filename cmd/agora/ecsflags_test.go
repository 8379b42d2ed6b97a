package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute/ecs"
)

func TestRunnerComputeFlags(t *testing.T) {
	home := []string{"HOME=" + t.TempDir(), "AWS_REGION=eu-west-1"}
	base := []string{"--nats", "nats://127.0.0.1:4222"}
	ec2 := append(append([]string{}, base...), "--compute", "ecs", "--image", "123.dkr.ecr.eu-west-1.amazonaws.com/agora-worker:1",
		"--ecs-cluster", "agora", "--ecs-log-group", "/agora/dispatches", "--ecs-placement", "ec2InstanceId == i-0abc", "--grace", "20s")
	f, err := parseRunnerFlags(ec2, home, io.Discard)
	if err != nil {
		t.Fatalf("parseRunnerFlags(%v) = %v", ec2, err)
	}
	cfg := f.ecs.config(home, f.grace).Engine.WithDefaults()
	if cfg.Cluster != "agora" || cfg.Region != "eu-west-1" || cfg.Fargate() || cfg.Placement != "ec2InstanceId == i-0abc" || cfg.StopTimeout != 20*time.Second || cfg.PollInterval != ecs.DefaultPollInterval {
		t.Errorf("ECS config of %v = %+v", ec2, cfg)
	}
	if f, err := parseRunnerFlags(base, home, io.Discard); err != nil || f.compute != computeDocker {
		t.Errorf("default compute = %q, %v; want docker", f.compute, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--compute", "k8s"}, `--compute "k8s"`},
		{[]string{"--compute", "ecs", "--ecs-cluster", "c", "--ecs-log-group", "g"}, "needs --image"},
		{[]string{"--compute", "ecs", "--image", "i", "--ecs-log-group", "g"}, "cluster is required"},
		{[]string{"--compute", "ecs", "--image", "i", "--ecs-cluster", "c", "--ecs-log-group", "g", "--ecs-launch-type", "FARGATE",
			"--ecs-subnet", "s", "--ecs-isolated-security-group", "sg", "--ecs-execution-role", "r", "--ecs-task-role", "w"}, "on Fargate needs S3 storage"},
		{[]string{"--compute", "ecs", "--image", "i", "--ecs-cluster", "c", "--ecs-log-group", "g", "--ecs-capacity-provider", "FARGATE_SPOT",
			"--ecs-subnet", "s", "--ecs-isolated-security-group", "sg", "--ecs-execution-role", "r", "--storage", "s3://b/p"}, "on Fargate needs --ecs-task-role"},
	} {
		args := append(append([]string{}, base...), tc.args...)
		if _, err := parseRunnerFlags(args, home, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseRunnerFlags(%v) = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
