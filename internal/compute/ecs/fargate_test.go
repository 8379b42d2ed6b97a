package ecs_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/internal/secrets/awssm/awssmtest"
)

// smResolver reads secrets from the loopback Secrets Manager through the
// real SDK client, as ECS reads them with the execution role.
func smResolver(t *testing.T, sm *awssmtest.Server) func(context.Context, string) (string, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := secretsmanager.NewFromConfig(aws.Config{
		Region:      awssmtest.Region,
		Credentials: credentials.NewStaticCredentialsProvider(awssmtest.AccessKey, awssmtest.SecretKey, ""),
		HTTPClient:  &http.Client{Transport: tr},
	}, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(sm.URL()) })
	return func(ctx context.Context, id string) (string, error) {
		out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.SecretString), nil
	}
}

// TestSecretsResolvedAtStart: a definition's secrets reach the container's
// environment, read when the task starts; a task whose secrets cannot be
// read stops before its container runs, with ECS's
// ResourceInitializationError.
func TestSecretsResolvedAtStart(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	sm := awssmtest.New(t, map[string]awssmtest.Secret{
		"prod/db":  {String: awssmtest.Str(`{"password":"db-pass","port":5432}`)},
		"prod/api": {String: awssmtest.Str("api-key-value")},
	})
	dbARN, apiARN := awssmtest.ARN("prod/db"), awssmtest.ARN("prod/api")
	resolver := smResolver(t, sm)
	failing := func(context.Context, string) (string, error) { return "", errors.New("injected: store unreachable") }
	for _, tc := range []struct {
		name    string
		resolve func(context.Context, string) (string, error)
		secrets []compute.SecretRef
		// want is the output of a task that ran, reason the stoppedReason
		// (a part of it) of one that did not.
		want, reason string
		resolved     int
	}{
		{"by ARN and by JSON key", resolver, []compute.SecretRef{
			{Name: "API_KEY", ValueFrom: apiARN},
			{Name: "DB_PASSWORD", ValueFrom: dbARN + ":password::"},
			{Name: "DB_PORT", ValueFrom: dbARN + ":port::"},
		}, "api-key-value|db-pass|5432|none\n", "", 3},
		{"missing secret", resolver, []compute.SecretRef{{Name: "X", ValueFrom: awssmtest.ARN("prod/missing")}},
			"", ecsfake.ResourceInitError + "execution resource retrieval failed: unable to retrieve secret from asm: fetch secret " + awssmtest.ARN("prod/missing") + ": ", 1},
		{"missing JSON key", resolver, []compute.SecretRef{{Name: "X", ValueFrom: dbARN + ":user::"}}, "", "has no key user", 1},
		{"resolver error", failing, []compute.SecretRef{{Name: "X", ValueFrom: apiARN}}, "", "injected: store unreachable", 1},
		{"no resolver", nil, []compute.SecretRef{{Name: "X", ValueFrom: apiARN}}, "", "ResolveSecret is nil", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, fake := ecstest.Start(t, docker, ecstest.Options{Fake: func(c *ecsfake.Config) { c.ResolveSecret = tc.resolve }})
			ctx := ctxFor(t, time.Minute)
			spec := shSpec(image, computetest.Label(t, e), `echo "$API_KEY$X|$DB_PASSWORD|$DB_PORT|${AWS_CONTAINER_CREDENTIALS_FULL_URI:-none}"`)
			spec.Secrets = tc.secrets
			res, stdout := runECS(t, ctx, e, spec)
			if tc.reason == "" {
				if !res.Successful() || stdout != tc.want {
					t.Errorf("task with secrets = %+v, output %q; want success and %q", res, stdout, tc.want)
				}
			} else if res.ExitCode != -1 || res.Err == nil || !strings.Contains(res.Err.Error(), tc.reason) || stdout != "" {
				t.Errorf("task whose secrets cannot be read = %+v, output %q; want exit -1, no output and an error with %q", res, stdout, tc.reason)
			}
			if got := fake.SecretsResolved(); len(got) != tc.resolved {
				t.Errorf("secrets read = %q, want %d", got, tc.resolved)
			}
			for _, c := range fake.Calls("RunTask") {
				for _, v := range []string{"db-pass", "api-key-value", "prod/api", "DB_PASSWORD"} {
					if strings.Contains(string(c.Body), v) {
						t.Errorf("RunTask carries %q: %s", v, c.Body)
					}
				}
			}
		})
	}
}

// TestSecretsNeedExecutionRole: a definition with secrets and no
// execution role (which the engine never registers: Create refuses it) is
// refused when registered, as ECS refuses it ("When you are specifying
// container secrets, you must also specify a value for 'executionRoleArn'").
func TestSecretsNeedExecutionRole(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	fake := ecstest.StartFake(t, docker, ecstest.Options{Fake: func(c *ecsfake.Config) {
		c.ResolveSecret = func(context.Context, string) (string, error) { return "value", nil }
	}})
	ctx := ctxFor(t, time.Minute)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := awsecs.NewFromConfig(aws.Config{
		Region: ecstest.Region, HTTPClient: &http.Client{Transport: tr},
		Credentials: credentials.NewStaticCredentialsProvider(ecstest.AccessKeyID, ecstest.Secret, ""),
	}, func(o *awsecs.Options) { o.BaseEndpoint = aws.String(fake.URL()) })
	family := "agora-test-noexec-" + computetest.RandomSuffix()
	_, err := client.RegisterTaskDefinition(ctx, &awsecs.RegisterTaskDefinitionInput{
		Family: aws.String(family), NetworkMode: types.NetworkModeAwsvpc, Cpu: aws.String("256"), Memory: aws.String("512"),
		RequiresCompatibilities: []types.Compatibility{types.CompatibilityFargate},
		ContainerDefinitions: []types.ContainerDefinition{{
			Name: aws.String(ecs.ContainerName), Image: aws.String(image), User: aws.String(computetest.User),
			EntryPoint: []string{"/bin/sh", "-c", "echo should-not-run"},
			Secrets:    []types.Secret{{Name: aws.String("X"), ValueFrom: aws.String("arn:aws:secretsmanager:us-east-1:000000000000:secret:prod/api-AbCdEf")}},
		}},
	})
	// ECS refuses such a definition when it is registered.
	var ce *types.ClientException
	if !errors.As(err, &ce) || !strings.Contains(ce.ErrorMessage(), "executionRoleArn") {
		t.Fatalf("register a definition with secrets and no execution role = %v, want a ClientException naming executionRoleArn", err)
	}
	if got := fake.SecretsResolved(); len(got) != 0 {
		t.Errorf("secrets read without an execution role: %q", got)
	}
}

// TestTaskRoleCredentials: a Fargate task with a task role gets the
// container credentials variables; from inside the container (wget, on the
// host network) and from an SDK client outside it, the endpoint serves the
// role's credentials to the task's token only, and only while the task
// runs.
func TestTaskRoleCredentials(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	creds := aws.Credentials{AccessKeyID: "AKIDTASKROLE", SecretAccessKey: "task-role-secret", SessionToken: "task-role-session"}
	e, fake := ecstest.Start(t, docker, ecstest.Options{Fake: func(c *ecsfake.Config) { c.TaskRoleCredentials = creds }})
	ctx := ctxFor(t, time.Minute)
	spec := shSpec(image, computetest.Label(t, e), `echo "region=$AWS_REGION/$AWS_DEFAULT_REGION"
wget -q -O - --header "Authorization: $AWS_CONTAINER_AUTHORIZATION_TOKEN" "$AWS_CONTAINER_CREDENTIALS_FULL_URI" && echo
echo "uri=$AWS_CONTAINER_CREDENTIALS_FULL_URI"
echo "token=$AWS_CONTAINER_AUTHORIZATION_TOKEN"
exec sleep 120`)
	spec.NetworkMode = compute.NetworkBridge // egress: Fargate's credentials endpoint is reachable regardless, the fake's only so
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Remove(context.Background(), id) })
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	lines := followLines(t, ctx, e, id)
	got := map[string]string{}
	var fetched string
	for len(got) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the task's output ended after %q", got)
			}
			if k, v, ok := strings.Cut(l, "="); ok && (k == "region" || k == "uri" || k == "token") {
				got[k] = v
			} else if strings.HasPrefix(l, "{") {
				fetched = l
			}
		case <-ctx.Done():
			t.Fatalf("the task's output so far: %q", got)
		}
	}
	if want := ecstest.Region + "/" + ecstest.Region; got["region"] != want {
		t.Errorf("AWS_REGION/AWS_DEFAULT_REGION in a Fargate task = %q, want %q", got["region"], want)
	}
	for _, want := range []string{`"AccessKeyId":"AKIDTASKROLE"`, `"Token":"task-role-session"`, `"RoleArn":"arn:aws:iam::000000000000:role/agora-worker"`, `"Expiration":"`} {
		if !strings.Contains(fetched, want) {
			t.Errorf("credentials fetched with wget in the container = %q, want %s", fetched, want)
		}
	}
	uri, token := got["uri"], got["token"]
	if !strings.HasPrefix(uri, fake.URL()+ecsfake.CredentialsPath) || token == "" {
		t.Fatalf("AWS_CONTAINER_CREDENTIALS_FULL_URI = %q, token %q; want the fake's loopback endpoint and a token", uri, token)
	}

	// The SDK's container credentials provider, as the config package
	// makes it from the two variables.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	provider := func(token string) *endpointcreds.Provider {
		return endpointcreds.New(uri, func(o *endpointcreds.Options) {
			o.AuthorizationToken, o.HTTPClient = token, &http.Client{Transport: tr}
		})
	}
	c, err := provider(token).Retrieve(ctx)
	if err != nil {
		t.Fatalf("SDK container credentials provider: %v", err)
	}
	if c.AccessKeyID != creds.AccessKeyID || c.SecretAccessKey != creds.SecretAccessKey || c.SessionToken != creds.SessionToken || !c.CanExpire || time.Until(c.Expires) < 30*time.Minute {
		t.Errorf("SDK got %+v, want the task role's credentials expiring in about an hour", c)
	}
	if _, err := provider("not-the-token").Retrieve(ctx); err == nil {
		t.Error("credentials served with another token")
	}
	if n := fake.CredentialFetches(id); n != 2 {
		t.Errorf("credential fetches = %d, want 2 (wget and the SDK)", n)
	}
	if err := e.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := provider(token).Retrieve(ctx); err == nil {
		t.Error("credentials served after the task stopped")
	}
}

// TestIsolatedTaskNoNetwork: an awsvpc task whose groups have no egress
// still runs with no network but loopback, while others share the host's.
func TestIsolatedTaskNoNetwork(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, fake := ecstest.Start(t, docker, ecstest.Options{})
	ctx := ctxFor(t, time.Minute)
	probe := "wget -q -O /dev/null " + fake.URL() + ecsfake.CredentialsPath + "none 2>&1 | grep -q 404 && echo reached || echo unreachable"
	for _, tc := range []struct{ network, want string }{
		{compute.NetworkNone, "unreachable\n"},
		{compute.NetworkBridge, "reached\n"},
	} {
		spec := shSpec(image, computetest.Label(t, e), probe)
		spec.NetworkMode = tc.network
		if res, out := runECS(t, ctx, e, spec); !res.Successful() || out != tc.want {
			t.Errorf("task of network %s reaching the fake on loopback = %+v, %q; want %q", tc.network, res, out, tc.want)
		}
	}
}

// runECS runs spec to its end and returns how it ended and its output.
func runECS(t *testing.T, ctx context.Context, e *ecs.Engine, spec compute.ContainerSpec) (exit.Result, string) {
	t.Helper()
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = e.Remove(context.Background(), id) })
	if err := e.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	var out strings.Builder
	if err := e.Logs(ctx, id, false, &out, &out); err != nil {
		t.Fatalf("Logs: %v", err)
	}
	return res, out.String()
}

// followLines follows the task's output, one line per value, until it
// ends or the test does.
func followLines(t *testing.T, ctx context.Context, e *ecs.Engine, id string) <-chan string {
	pr, pw := io.Pipe()
	lines := make(chan string)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); _ = pr.Close(); wg.Wait() })
	wg.Go(func() { _ = pw.CloseWithError(e.Logs(ctx, id, true, pw, pw)) })
	wg.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	})
	return lines
}
