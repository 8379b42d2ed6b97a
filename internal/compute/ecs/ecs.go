// Package ecs implements compute.Engine on AWS ECS (Fargate, or the EC2
// launch type) through github.com/aws/aws-sdk-go-v2/service/ecs, with the
// containers' output read back from CloudWatch Logs (the awslogs driver,
// github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs).
//
// A compute "container" is one ECS task of one container ("worker"):
//
//   - Create compiles the spec into a task definition whose family is named
//     by the hash of its content (registered once, reused by every later
//     spec with the same content) and the per-dispatch overrides (command,
//     environment, cpu, memory), and keeps them in this process: ECS has no
//     created-but-not-started task. The spec's Secrets are in the
//     definition (ECS cannot override them), so each distinct set of
//     references has a definition of its own.
//   - Start is RunTask, with clientToken and startedBy = the container id
//     (for a runner's container, its name: the dispatch id and the runner),
//     so a retried launch never runs twice, and the labels as tags.
//     failures[] is an error.
//   - Wait, Stop and Logs(follow) share one poller: one DescribeTasks call
//     (up to 100 tasks) per poll interval, however many tasks are waited for.
//   - Stop is StopTask: ECS sends SIGTERM, then SIGKILL after the task
//     definition's stopTimeout (the spec's StopTimeout). The grace given to
//     Stop cannot change it.
//   - Remove stops the task and removes its agora.managed tag: a stopped ECS
//     task cannot be deleted (ECS forgets it after about an hour), but List
//     never returns it again.
//   - List is ListTasks (running and stopped) and DescribeTasks with tags,
//     filtered by tag.
//
// What ECS cannot do: bind mounts on Fargate (Create refuses Mounts there,
// ErrInvalidSpec), a stop signal other than SIGTERM, a pids limit, separate
// stdout and stderr (awslogs keeps one stream: Logs writes both to stdout,
// in order). See docs/ecs.md.
//
// What it may import: docs/architecture.md.
package ecs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/agoradev/agora/internal/compute"
)

// Launch types and the Fargate capacity providers.
const (
	LaunchFargate       = "FARGATE"
	LaunchEC2           = "EC2"
	CapacityFargate     = "FARGATE"
	CapacityFargateSpot = "FARGATE_SPOT"
)

// ContainerName is the name of the one container of every agora task
// definition; the awslogs stream of a task is
// <LogStreamPrefix>/worker/<task id>.
const ContainerName = "worker"

// Defaults used by Config.WithDefaults.
const (
	DefaultPollInterval    = 5 * time.Second
	DefaultCallTimeout     = 30 * time.Second
	DefaultStopTimeout     = 30 * time.Second
	DefaultLogStreamPrefix = "agora"
	DefaultFamilyPrefix    = "agora"
	// MaxOverrideBytes is ECS's limit on a RunTask's overrides (JSON).
	MaxOverrideBytes = 8192
	// MaxFargateStopTimeout is the longest stopTimeout Fargate accepts.
	MaxFargateStopTimeout = 120 * time.Second
)

// TagName holds the container's name (ContainerSpec.Name) on its task.
const TagName = "agora.name"

// Config configures an Engine.
type Config struct {
	// Cluster is the ECS cluster's name or ARN. Required.
	Cluster string
	// Region is the AWS region, used in the awslogs options. Required.
	Region string
	// LaunchType is LaunchFargate (the default) or LaunchEC2. It is
	// ignored when CapacityProvider is set.
	LaunchType string
	// CapacityProvider places tasks through a capacity provider strategy
	// of that one provider: CapacityFargate, CapacityFargateSpot or an EC2
	// Auto Scaling group provider (then set EC2).
	CapacityProvider string
	// EC2 says that CapacityProvider is an EC2 one (host volumes, network
	// modes none, bridge and host).
	EC2 bool
	// Subnets and SecurityGroups are the awsvpc configuration of a task
	// whose network is bridge (Fargate: every task is awsvpc). Subnets are
	// required on Fargate.
	Subnets        []string
	SecurityGroups []string
	// IsolatedSecurityGroups are the security groups of a Fargate task
	// whose network is none: groups without egress rules. Required on
	// Fargate.
	IsolatedSecurityGroups []string
	// AssignPublicIP gives awsvpc tasks a public IP (off by default: use a
	// NAT gateway or VPC endpoints).
	AssignPublicIP bool
	// Placement is a memberOf placement constraint expression for EC2
	// tasks, e.g. "ec2InstanceId == i-0123456789abcdef0": a runner whose
	// dispatches use host volumes pins them to its own instance.
	Placement string
	// TaskRoleARN is the IAM role the task's processes get (the worker's
	// S3 and Secrets Manager access); ExecutionRoleARN is the role ECS
	// uses to pull the image and write the logs (required on Fargate).
	TaskRoleARN      string
	ExecutionRoleARN string
	// LogGroup is the CloudWatch Logs group of the awslogs driver. Required.
	LogGroup string
	// LogStreamPrefix is the awslogs stream prefix; default "agora".
	LogStreamPrefix string
	// FamilyPrefix starts every task definition family; default "agora".
	FamilyPrefix string
	// PollInterval is how often waited-for tasks are described (one
	// DescribeTasks for all of them) and followed logs are read.
	PollInterval time.Duration
	// CallTimeout bounds each short call. Wait and Logs(follow) have none.
	CallTimeout time.Duration
	// StopTimeout is the stopTimeout of a task definition whose spec sets
	// none: the time between SIGTERM and SIGKILL.
	StopTimeout time.Duration
	Logger      *slog.Logger
}

// WithDefaults returns c with its zero fields filled in.
func (c Config) WithDefaults() Config {
	if c.LaunchType == "" && c.CapacityProvider == "" {
		c.LaunchType = LaunchFargate
	}
	if c.LogStreamPrefix == "" {
		c.LogStreamPrefix = DefaultLogStreamPrefix
	}
	if c.FamilyPrefix == "" {
		c.FamilyPrefix = DefaultFamilyPrefix
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Fargate reports whether tasks run on Fargate.
func (c Config) Fargate() bool {
	if c.CapacityProvider != "" {
		return !c.EC2
	}
	return c.LaunchType == LaunchFargate
}

// Validate names every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Cluster == "" {
		errs = append(errs, errors.New("ecs: cluster is required"))
	}
	if c.Region == "" {
		errs = append(errs, errors.New("ecs: region is required"))
	}
	if c.LogGroup == "" {
		errs = append(errs, errors.New("ecs: log group is required"))
	}
	if c.CapacityProvider == "" && c.LaunchType != LaunchFargate && c.LaunchType != LaunchEC2 {
		errs = append(errs, fmt.Errorf("ecs: launch type %q: want FARGATE or EC2", c.LaunchType))
	}
	if c.Fargate() {
		if len(c.Subnets) == 0 {
			errs = append(errs, errors.New("ecs: Fargate needs subnets"))
		}
		if len(c.IsolatedSecurityGroups) == 0 {
			errs = append(errs, errors.New("ecs: Fargate needs isolated security groups (no egress) for tasks without network"))
		}
		if c.ExecutionRoleARN == "" {
			errs = append(errs, errors.New("ecs: Fargate needs an execution role (image pull, awslogs)"))
		}
		if c.Placement != "" {
			errs = append(errs, errors.New("ecs: placement constraints are for EC2 tasks, not Fargate"))
		}
		if c.StopTimeout > MaxFargateStopTimeout {
			errs = append(errs, fmt.Errorf("ecs: stop timeout %s is over Fargate's %s", c.StopTimeout, MaxFargateStopTimeout))
		}
	}
	return errors.Join(errs...)
}

// ecsAPI is the part of the ECS client the engine calls.
type ecsAPI interface {
	RegisterTaskDefinition(context.Context, *awsecs.RegisterTaskDefinitionInput, ...func(*awsecs.Options)) (*awsecs.RegisterTaskDefinitionOutput, error)
	DescribeTaskDefinition(context.Context, *awsecs.DescribeTaskDefinitionInput, ...func(*awsecs.Options)) (*awsecs.DescribeTaskDefinitionOutput, error)
	DeregisterTaskDefinition(context.Context, *awsecs.DeregisterTaskDefinitionInput, ...func(*awsecs.Options)) (*awsecs.DeregisterTaskDefinitionOutput, error)
	RunTask(context.Context, *awsecs.RunTaskInput, ...func(*awsecs.Options)) (*awsecs.RunTaskOutput, error)
	DescribeTasks(context.Context, *awsecs.DescribeTasksInput, ...func(*awsecs.Options)) (*awsecs.DescribeTasksOutput, error)
	StopTask(context.Context, *awsecs.StopTaskInput, ...func(*awsecs.Options)) (*awsecs.StopTaskOutput, error)
	ListTasks(context.Context, *awsecs.ListTasksInput, ...func(*awsecs.Options)) (*awsecs.ListTasksOutput, error)
	UntagResource(context.Context, *awsecs.UntagResourceInput, ...func(*awsecs.Options)) (*awsecs.UntagResourceOutput, error)
}

// logsAPI is the part of the CloudWatch Logs client the engine calls.
type logsAPI interface {
	GetLogEvents(context.Context, *cloudwatchlogs.GetLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetLogEventsOutput, error)
}

// Engine is the ECS implementation of compute.Engine.
type Engine struct {
	cfg    Config
	ecs    ecsAPI
	logs   logsAPI
	poller *poller

	mu sync.Mutex
	// created holds the containers created and not started yet.
	created map[string]*pending
	// arns maps container ids to task ARNs once known.
	arns map[string]string
	// families holds the task definition ARN registered (or found) per
	// family.
	families map[string]string
}

var _ compute.Engine = (*Engine)(nil)

// New returns an Engine on the ECS and CloudWatch Logs clients made from
// awsCfg, at endpoints when they are set.
func New(cfg Config, awsCfg aws.Config, endpoints Endpoints) (*Engine, error) {
	e := awsecs.NewFromConfig(awsCfg, func(o *awsecs.Options) {
		if endpoints.ECS != "" {
			o.BaseEndpoint = aws.String(endpoints.ECS)
		}
	})
	l := cloudwatchlogs.NewFromConfig(awsCfg, func(o *cloudwatchlogs.Options) {
		if endpoints.Logs != "" {
			o.BaseEndpoint = aws.String(endpoints.Logs)
		}
	})
	return newEngine(cfg, e, l)
}

func newEngine(cfg Config, e ecsAPI, l logsAPI) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	eng := &Engine{cfg: cfg, ecs: e, logs: l, created: map[string]*pending{}, arns: map[string]string{}, families: map[string]string{}}
	eng.poller = newPoller(eng)
	return eng, nil
}

// callContext bounds one short call.
func (e *Engine) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.CallTimeout)
}

// Endpoints replace the services' endpoints (VPC endpoints; the loopback
// fake); empty means the SDK's own resolution (AWS_ENDPOINT_URL_ECS, …).
type Endpoints struct {
	ECS  string
	Logs string
}

// Open returns an Engine with the AWS configuration of environ (its AWS_*
// variables: region, static credentials) on top of the SDK's default chain
// (shared config, the instance's or task's role).
func Open(ctx context.Context, cfg Config, environ []string, endpoints Endpoints) (*Engine, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "AWS_") {
			env[k] = v
		}
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(cfg.Region)}
	if env["AWS_ACCESS_KEY_ID"] != "" && env["AWS_SECRET_ACCESS_KEY"] != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"])))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("ecs: load the AWS configuration: %w", err)
	}
	return New(cfg, awsCfg, endpoints)
}
