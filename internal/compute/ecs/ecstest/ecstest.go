// Package ecstest starts, for a test, the loopback ECS endpoint (ecsfake) on
// a compute.Engine and an ECS engine driven through the real AWS SDK
// clients against it: static credentials, SigV4 signing and the SDK's
// retries included. Everything is closed, and checked gone, in t.Cleanup.
//
// It is imported only by tests.
package ecstest

import (
	"cmp"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
)

// Names the tests' configuration uses.
const (
	Region        = "us-east-1"
	AccessKeyID   = "AKIDAGORATEST"
	Secret        = "agora-test-secret"
	Subnet        = "subnet-0agora"
	Group         = "sg-0agora-egress"
	IsolatedGroup = "sg-0agora-none"
)

// Options tune Start.
type Options struct {
	// EC2 runs tasks on the EC2 launch type (host volumes, network modes);
	// the default is Fargate.
	EC2 bool
	// CapacityProvider, when set, replaces the launch type (FARGATE_SPOT).
	CapacityProvider string
	// Secret replaces the client's secret key (to test refused signatures).
	Secret string
	// Cluster names the cluster; default a random one per call of Start.
	Cluster string
	// Fake and Engine adjust the two configurations before use.
	Fake   func(*ecsfake.Config)
	Engine func(*ecs.Config)
}

// Start returns an ECS engine on a new fake that runs its containers on
// docker, each test with its own cluster name.
func Start(t testing.TB, docker compute.Engine, o Options) (*ecs.Engine, *ecsfake.Server) {
	t.Helper()
	fake := StartFake(t, docker, o)
	return Engine(t, fake, o), fake
}

// StartFake starts the fake alone, closed in t.Cleanup.
func StartFake(t testing.TB, docker compute.Engine, o Options) *ecsfake.Server {
	t.Helper()
	fcfg := ecsfake.Config{
		Engine: docker, AccessKeyID: AccessKeyID, SecretAccessKey: Secret, Region: Region,
		ProvisionDelay: 100 * time.Millisecond, NoEgressSecurityGroups: []string{IsolatedGroup},
		Logger: computetest.Logger(t),
	}
	if o.Fake != nil {
		o.Fake(&fcfg)
	}
	fake, err := ecsfake.Start(fcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := fake.Close(ctx); err != nil {
			t.Errorf("close the ECS fake: %v", err)
		}
	})
	return fake
}

// Engine returns a new ECS engine on fake, as a runner process would make
// one (a second one on the same cluster stands for a restarted runner).
func Engine(t testing.TB, fake *ecsfake.Server, o Options) *ecs.Engine {
	t.Helper()
	cluster := o.Cluster
	if cluster == "" {
		cluster = "agora-test-" + computetest.RandomSuffix()
	}
	ecfg := ecs.Config{
		Cluster: cluster, Region: Region, LogGroup: "/agora/test",
		Subnets: []string{Subnet}, SecurityGroups: []string{Group}, IsolatedSecurityGroups: []string{IsolatedGroup},
		ExecutionRoleARN: "arn:aws:iam::000000000000:role/agora-task-execution",
		TaskRoleARN:      "arn:aws:iam::000000000000:role/agora-worker",
		CapacityProvider: o.CapacityProvider, PollInterval: 200 * time.Millisecond, StopTimeout: 5 * time.Second,
		Logger: computetest.Logger(t),
	}
	if o.EC2 {
		ecfg.LaunchType = ecs.LaunchEC2
	}
	if o.Engine != nil {
		o.Engine(&ecfg)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	awsCfg := aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKeyID, cmp.Or(o.Secret, Secret), ""),
		HTTPClient:  &http.Client{Transport: tr},
	}
	e, err := ecs.New(ecfg, awsCfg, ecs.Endpoints{ECS: fake.URL(), Logs: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Limits are the conformance suite's limits of the ECS engine.
func Limits(fargate bool) computetest.Limits {
	return computetest.Limits{MergedLogs: true, NoBindMounts: fargate, StopGraceAtCreate: true, ImageCheckedAtRun: true}
}
