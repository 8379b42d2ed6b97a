package roleflags

import (
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/internal/compute/ecs"
)

// ecsFlags are the --ecs-… flags of agora runner --compute ecs.
type ecsFlags struct {
	cluster          string
	region           string
	launchType       string
	capacityProvider string
	subnets          []string
	groups           []string
	isolatedGroups   []string
	publicIP         bool
	taskRole         string
	executionRole    string
	logGroup         string
	logPrefix        string
	placement        string
	endpoint         string
	logsEndpoint     string
	poll             time.Duration
}

func (f *ecsFlags) register(fl *Flags) {
	fs := fl.fs
	fs.StringVar(&f.cluster, "ecs-cluster", "", "with --compute ecs: run tasks in the ECS cluster `NAME` (or ARN); required")
	fs.StringVar(&f.region, "ecs-region", "", "with --compute ecs: the AWS `REGION` (default $AWS_REGION)")
	fl.env("ecs-region", "AWS_REGION", "AWS_DEFAULT_REGION")
	fs.StringVar(&f.launchType, "ecs-launch-type", ecs.LaunchEC2, "with --compute ecs: the launch `TYPE`, EC2 (host volumes, the runner on the container instance) or FARGATE (dispatches get no host files: the worker reads them from --storage s3:// with --ecs-task-role)")
	fs.StringVar(&f.capacityProvider, "ecs-capacity-provider", "", "with --compute ecs: place tasks with the capacity provider `NAME` instead of the launch type (an EC2 Auto Scaling group provider; FARGATE and FARGATE_SPOT are Fargate)")
	fs.StringArrayVar(&f.subnets, "ecs-subnet", nil, "with --compute ecs: an awsvpc subnet `ID` (repeatable; Fargate)")
	fs.StringArrayVar(&f.groups, "ecs-security-group", nil, "with --compute ecs: a security group `ID` of awsvpc tasks with network (repeatable; Fargate)")
	fs.StringArrayVar(&f.isolatedGroups, "ecs-isolated-security-group", nil, "with --compute ecs: a security group `ID` without egress rules, for awsvpc tasks without network (repeatable; Fargate)")
	fs.BoolVar(&f.publicIP, "ecs-public-ip", false, "with --compute ecs: give awsvpc tasks with network a public IP (default: none; use a NAT gateway or VPC endpoints)")
	fs.StringVar(&f.taskRole, "ecs-task-role", "", "with --compute ecs: the IAM role `ARN` the worker runs with (required on Fargate: it reads and writes the dispatch's files in S3)")
	fs.StringVar(&f.executionRole, "ecs-execution-role", "", "with --compute ecs: the task execution role `ARN` (image pull, CloudWatch Logs; required on Fargate)")
	fs.StringVar(&f.logGroup, "ecs-log-group", "", "with --compute ecs: the CloudWatch Logs `GROUP` of the awslogs driver; required")
	fs.StringVar(&f.logPrefix, "ecs-log-prefix", ecs.DefaultLogStreamPrefix, "with --compute ecs: the awslogs stream `PREFIX`")
	fs.StringVar(&f.placement, "ecs-placement", "", "with --compute ecs: a memberOf placement constraint `EXPRESSION` for EC2 tasks, e.g. 'ec2InstanceId == i-0123456789abcdef0' (the runner's own instance)")
	fs.StringVar(&f.endpoint, "ecs-endpoint", "", "with --compute ecs: the ECS endpoint `URL` (a VPC endpoint; default the SDK's)")
	fs.StringVar(&f.logsEndpoint, "ecs-logs-endpoint", "", "with --compute ecs: the CloudWatch Logs endpoint `URL` (default the SDK's)")
	fs.DurationVar(&f.poll, "ecs-poll", ecs.DefaultPollInterval, "with --compute ecs: describe running tasks (one DescribeTasks call for all of them) every `DURATION`")
}

// config is the roles' ECS configuration of the flags (the region filled
// from the environment already); grace is the runner's --grace.
func (f *ecsFlags) config(grace time.Duration) *roles.ECSConfig {
	cfg := ecs.Config{
		Cluster: f.cluster, Region: f.region, LaunchType: f.launchType, CapacityProvider: f.capacityProvider,
		Subnets: f.subnets, SecurityGroups: f.groups, IsolatedSecurityGroups: f.isolatedGroups, AssignPublicIP: f.publicIP,
		TaskRoleARN: f.taskRole, ExecutionRoleARN: f.executionRole, LogGroup: f.logGroup, LogStreamPrefix: f.logPrefix,
		Placement: f.placement, PollInterval: f.poll, StopTimeout: grace,
	}
	if f.capacityProvider != "" {
		cfg.LaunchType = ""
		cfg.EC2 = f.capacityProvider != ecs.CapacityFargate && f.capacityProvider != ecs.CapacityFargateSpot
	}
	return &roles.ECSConfig{Engine: cfg, Endpoints: ecs.Endpoints{ECS: f.endpoint, Logs: f.logsEndpoint}}
}
