package ecs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
)

// call is one request to the fake, signed as the SDK signs it: its error
// type (the __type of the answer; "" when it succeeded) and message.
func call(t *testing.T, fake *ecsfake.Server, service, op string, body any) (typ, msg string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	target := ecsfake.ECSPrefix + op
	if service == "logs" {
		target = ecsfake.LogsPrefix + op
	}
	req, err := http.NewRequest(http.MethodPost, fake.URL()+"/", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", target)
	sum := sha256.Sum256(b)
	creds := aws.Credentials{AccessKeyID: ecstest.AccessKeyID, SecretAccessKey: ecstest.Secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, ecstest.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		return "", ""
	}
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatalf("%s answered %d %s: not ECS's error shape: %v", op, resp.StatusCode, out, err)
	}
	return e.Type, e.Message
}

// fromJSON is a fresh copy of a JSON object, to change one member of.
func fromJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

// TestFakeRefusesWhatECSRefuses: each request is one ECS (or CloudWatch
// Logs) refuses — by its published model (types, required members, enums,
// lengths, ranges, patterns) or by a rule its documentation states — and
// the fake refuses it with ECS's error type and message; the valid request
// each was made from is accepted. Run against the fake as it was before it
// read the model, 45 of these 47 cases fail: accepted, or refused with
// another message (issue 21).
func TestFakeRefusesWhatECSRefuses(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	fake := ecstest.StartFake(t, docker, ecstest.Options{})
	family := "agora-test-model-" + computetest.RandomSuffix()
	cluster := "agora-test-" + computetest.RandomSuffix()
	const execRole = "arn:aws:iam::000000000000:role/exec"
	// The valid requests the cases change.
	fargateDef := `{"family":"` + family + `","networkMode":"awsvpc","cpu":"256","memory":"512",
		"requiresCompatibilities":["FARGATE"],"executionRoleArn":"` + execRole + `",
		"containerDefinitions":[{"name":"worker","image":"` + image + `","essential":true,
		"logConfiguration":{"logDriver":"awslogs","options":{"awslogs-group":"/agora","awslogs-region":"us-east-1","awslogs-stream-prefix":"agora"}},
		"secrets":[{"name":"X","valueFrom":"arn:aws:secretsmanager:us-east-1:000000000000:secret:prod/db-AbCdEf"}]}],
		"tags":[{"key":"agora.managed","value":"true"}]}`
	ec2Def := `{"family":"` + family + `-ec2","networkMode":"none","requiresCompatibilities":["EC2"],
		"containerDefinitions":[{"name":"worker","image":"` + image + `","memoryReservation":64}]}`
	runTask := `{"cluster":"` + cluster + `","taskDefinition":"` + family + `","launchType":"FARGATE","count":1,
		"startedBy":"agora-test","clientToken":"tok-` + computetest.RandomSuffix() + `",
		"networkConfiguration":{"awsvpcConfiguration":{"subnets":["` + ecstest.Subnet + `"],"assignPublicIp":"DISABLED"}},
		"overrides":{"containerOverrides":[{"name":"worker","command":["true"],"memory":512}],"cpu":"256","memory":"512"},
		"tags":[{"key":"agora.dispatch_id","value":"d-1"}]}`
	ec2Run := `{"cluster":"` + cluster + `","taskDefinition":"` + family + `-ec2","launchType":"EC2",
		"overrides":{"containerOverrides":[{"name":"worker","memory":128}]}}`

	for _, base := range []struct{ op, body string }{
		{"RegisterTaskDefinition", fargateDef}, {"RegisterTaskDefinition", ec2Def}, {"RunTask", runTask}, {"RunTask", ec2Run},
	} {
		if typ, msg := call(t, fake, "ecs", base.op, fromJSON(t, base.body)); typ != "" {
			t.Fatalf("the valid %s was refused: %s: %s", base.op, typ, msg)
		}
	}

	container := func(m map[string]any) map[string]any { return m["containerDefinitions"].([]any)[0].(map[string]any) }
	override := func(m map[string]any) map[string]any {
		return m["overrides"].(map[string]any)["containerOverrides"].([]any)[0].(map[string]any)
	}
	strategy := func(weight, base float64) []any {
		return []any{map[string]any{"capacityProvider": "FARGATE_SPOT", "weight": weight, "base": base}}
	}
	for _, tc := range []struct {
		name, op, base string
		change         func(m map[string]any)
		typ, msg       string
	}{
		// RegisterTaskDefinition: the model.
		{"networkMode bridged", "RegisterTaskDefinition", ec2Def, func(m map[string]any) { m["networkMode"] = "bridged" },
			"InvalidParameterException", "Value 'bridged' at 'networkMode' failed to satisfy constraint: Member must satisfy enum value set: [bridge, host, awsvpc, none]"},
		{"logDriver awslog", "RegisterTaskDefinition", fargateDef, func(m map[string]any) {
			container(m)["logConfiguration"].(map[string]any)["logDriver"] = "awslog"
		}, "InvalidParameterException", "Value 'awslog' at 'containerDefinitions.1.member.logConfiguration.logDriver' failed to satisfy constraint: Member must satisfy enum value set"},
		{"compatibility FARGATEX", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["requiresCompatibilities"] = []any{"FARGATEX"} },
			"InvalidParameterException", "Value 'FARGATEX' at 'requiresCompatibilities.1.member'"},
		{"no family", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { delete(m, "family") },
			"InvalidParameterException", "Value null at 'family' failed to satisfy constraint: Member must not be null"},
		{"no containerDefinitions", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { delete(m, "containerDefinitions") },
			"InvalidParameterException", "Value null at 'containerDefinitions'"},
		{"secret without valueFrom", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { container(m)["secrets"] = []any{map[string]any{"name": "X"}} },
			"InvalidParameterException", "at 'containerDefinitions.1.member.secrets.1.member.valueFrom' failed to satisfy constraint: Member must not be null"},
		{"tag key of 129", "RegisterTaskDefinition", fargateDef, func(m map[string]any) {
			m["tags"] = []any{map[string]any{"key": strings.Repeat("k", 129), "value": "v"}}
		},
			"InvalidParameterException", "Member must have length less than or equal to 128"},
		{"tag value of 257", "RegisterTaskDefinition", fargateDef, func(m map[string]any) {
			m["tags"] = []any{map[string]any{"key": "k", "value": strings.Repeat("v", 257)}}
		},
			"InvalidParameterException", "Member must have length less than or equal to 256"},
		{"tag key with a comma", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["tags"] = []any{map[string]any{"key": "a,b", "value": "v"}} },
			"InvalidParameterException", "Member must satisfy regular expression pattern"},
		{"memory as a string", "RegisterTaskDefinition", ec2Def, func(m map[string]any) { container(m)["memory"] = "128" },
			"SerializationException", "containerDefinitions.1.member.memory: expected a number, got a string"},
		{"essential as a string", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { container(m)["essential"] = "true" },
			"SerializationException", "expected a boolean"},
		{"an unknown member", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["Family"] = family },
			"SerializationException", `unknown member "Family"`},
		// RegisterTaskDefinition: the documented rules.
		{"Fargate cpu 256 with 4096", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["memory"] = "4096" },
			"ClientException", "No Fargate configuration exists for given values: 256 CPU, 4096 memory."},
		{"Fargate cpu 300", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["cpu"] = "300" },
			"ClientException", "No Fargate configuration exists for given values: 300 CPU, 512 memory."},
		{"Fargate 8192 off its 4 GB steps", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["cpu"], m["memory"] = "8192", "17408" },
			"ClientException", "No Fargate configuration exists"},
		{"Fargate 16384 off its 8 GB steps", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["cpu"], m["memory"] = "16384", "36864" },
			"ClientException", "No Fargate configuration exists"},
		{"secrets without an execution role", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { delete(m, "executionRoleArn") },
			"ClientException", "When you are specifying container secrets, you must also specify a value for 'executionRoleArn'."},
		{"tag key aws:", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["tags"] = []any{map[string]any{"key": "AWS:owner", "value": "v"}} },
			"InvalidParameterException", "reserved prefix 'aws:'"},
		{"51 tags", "RegisterTaskDefinition", fargateDef, func(m map[string]any) {
			var tags []any
			for i := range 51 {
				tags = append(tags, map[string]any{"key": "k" + strings.Repeat("x", i), "value": "v"})
			}
			m["tags"] = tags
		}, "InvalidParameterException", "Value '[51 items]' at 'tags' failed to satisfy constraint: Member must have length less than or equal to 50"},
		{"family with a space", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { m["family"] = "agora family" },
			"ClientException", "Up to 255 letters"},
		{"container name with a dot", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { container(m)["name"] = "agora.worker" },
			"ClientException", `Container name "agora.worker" is invalid`},
		{"memory below its reservation", "RegisterTaskDefinition", ec2Def, func(m map[string]any) { container(m)["memory"] = 32 },
			"ClientException", "The memory limit (32 MiB) must be greater than memoryReservation (64 MiB)."},
		{"memory of 4 MiB", "RegisterTaskDefinition", ec2Def, func(m map[string]any) { delete(container(m), "memoryReservation"); container(m)["memory"] = 4 },
			"ClientException", "at least 6 MiB"},
		{"EC2 without memory", "RegisterTaskDefinition", ec2Def, func(m map[string]any) { delete(container(m), "memoryReservation") },
			"ClientException", "At least one of 'memory' or 'memoryReservation' must be specified."},
		{"Fargate stopTimeout 121", "RegisterTaskDefinition", fargateDef, func(m map[string]any) { container(m)["stopTimeout"] = 121 },
			"ClientException", "stopTimeout must be at most 120 seconds"},
		// RunTask: the model.
		{"launchType FARGATEX", "RunTask", runTask, func(m map[string]any) { m["launchType"] = "FARGATEX" },
			"InvalidParameterException", "Value 'FARGATEX' at 'launchType' failed to satisfy constraint: Member must satisfy enum value set: [EC2, FARGATE, EXTERNAL, MANAGED_INSTANCES]"},
		{"assignPublicIp YES", "RunTask", runTask, func(m map[string]any) {
			m["networkConfiguration"].(map[string]any)["awsvpcConfiguration"].(map[string]any)["assignPublicIp"] = "YES"
		}, "InvalidParameterException", "Value 'YES' at 'networkConfiguration.awsvpcConfiguration.assignPublicIp' failed to satisfy constraint: Member must satisfy enum value set: [ENABLED, DISABLED]"},
		{"capacity provider weight 1001", "RunTask", runTask, func(m map[string]any) { delete(m, "launchType"); m["capacityProviderStrategy"] = strategy(1001, 0) },
			"InvalidParameterException", "Value '1001' at 'capacityProviderStrategy.1.member.weight' failed to satisfy constraint: Member must have value less than or equal to 1000"},
		{"capacity provider base -1", "RunTask", runTask, func(m map[string]any) { delete(m, "launchType"); m["capacityProviderStrategy"] = strategy(1, -1) },
			"InvalidParameterException", "Member must have value greater than or equal to 0"},
		{"no taskDefinition", "RunTask", runTask, func(m map[string]any) { delete(m, "taskDefinition") },
			"InvalidParameterException", "Value null at 'taskDefinition'"},
		{"count as a string", "RunTask", runTask, func(m map[string]any) { m["count"] = "1" },
			"SerializationException", "count: expected a number, got a string"},
		{"count 1.5", "RunTask", runTask, func(m map[string]any) { m["count"] = 1.5 },
			"SerializationException", "count: expected an integer"},
		{"task cpu as a number", "RunTask", runTask, func(m map[string]any) { m["overrides"].(map[string]any)["cpu"] = 256 },
			"SerializationException", "overrides.cpu: expected a string, got a number"},
		// RunTask: the documented rules.
		{"count 0", "RunTask", runTask, func(m map[string]any) { m["count"] = 0 }, "InvalidParameterException", "count must be between 1 and 10, not 0."},
		{"count 11", "RunTask", runTask, func(m map[string]any) { m["count"] = 11 }, "InvalidParameterException", "count must be between 1 and 10, not 11."},
		{"seven capacity providers", "RunTask", runTask, func(m map[string]any) {
			delete(m, "launchType")
			var s []any
			for range 7 {
				s = append(s, strategy(1, 0)[0])
			}
			m["capacityProviderStrategy"] = s
		}, "InvalidParameterException", "at most 6 capacity providers"},
		{"launch type and capacity provider", "RunTask", runTask, func(m map[string]any) { m["capacityProviderStrategy"] = strategy(1, 0) },
			"InvalidParameterException", "Specifying both a launch type and capacity provider strategy is not supported."},
		{"tag key aws:", "RunTask", runTask, func(m map[string]any) { m["tags"] = []any{map[string]any{"key": "aws:cloudformation", "value": "x"}} },
			"InvalidParameterException", "reserved prefix 'aws:'"},
		{"startedBy of 129", "RunTask", runTask, func(m map[string]any) { m["startedBy"] = strings.Repeat("s", 129) },
			"InvalidParameterException", "up to 128 letters"},
		{"override of an unknown container", "RunTask", runTask, func(m map[string]any) { override(m)["name"] = "sidecar" },
			"InvalidParameterException", "Override for container named sidecar is not a container in the TaskDefinition."},
		{"Fargate override 256 with 4096", "RunTask", runTask, func(m map[string]any) { m["overrides"].(map[string]any)["memory"] = "4096" },
			"ClientException", "No Fargate configuration exists for given values: 256 CPU, 4096 memory."},
		{"EC2 override memory below the reservation", "RunTask", ec2Run, func(m map[string]any) { override(m)["memory"] = 32 },
			"ClientException", "The memory limit (32 MiB) must be greater than memoryReservation (64 MiB)."},
		// The other operations.
		{"DescribeTasks include TAGSX", "DescribeTasks", `{"cluster":"c","tasks":["t"]}`, func(m map[string]any) { m["include"] = []any{"TAGSX"} },
			"InvalidParameterException", "Member must satisfy enum value set: [TAGS]"},
		{"ListTasks desiredStatus RUNNINGX", "ListTasks", `{"cluster":"c"}`, func(m map[string]any) { m["desiredStatus"] = "RUNNINGX" },
			"InvalidParameterException", "Value 'RUNNINGX' at 'desiredStatus'"},
		{"TagResource aws: key", "TagResource", `{"resourceArn":"arn:aws:ecs:us-east-1:000000000000:task/c/t"}`, func(m map[string]any) {
			m["tags"] = []any{map[string]any{"key": "aws:x", "value": "y"}}
		}, "InvalidParameterException", "reserved prefix 'aws:'"},
		{"GetLogEvents limit 0", "GetLogEvents", `{"logGroupName":"/agora","logStreamName":"s","startFromHead":true}`, func(m map[string]any) { m["limit"] = 0 },
			"InvalidParameterException", "Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"},
		{"GetLogEvents stream name with a colon", "GetLogEvents", `{"logGroupName":"/agora","logStreamName":"s","startFromHead":true}`, func(m map[string]any) { m["logStreamName"] = "a:b" },
			"InvalidParameterException", "at 'logStreamName' failed to satisfy constraint: Member must satisfy regular expression pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			service := "ecs"
			if tc.op == "GetLogEvents" {
				service = "logs"
			}
			m := fromJSON(t, tc.base)
			if _, ok := m["clientToken"]; ok {
				m["clientToken"] = "tok-" + computetest.RandomSuffix() // not the base's task again
			}
			tc.change(m)
			typ, msg := call(t, fake, service, tc.op, m)
			if typ != tc.typ || !strings.Contains(msg, tc.msg) {
				t.Errorf("%s answered %s: %s\nwant %s: …%s…", tc.op, typ, msg, tc.typ, tc.msg)
			}
		})
	}
}

// TestSDKRequestRefusedByModel: the real SDK sends an unknown enum value
// as it is; the fake refuses it as ECS would, and the SDK reports ECS's
// error type.
func TestSDKRequestRefusedByModel(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	fake := ecstest.StartFake(t, docker, ecstest.Options{})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := awsecs.NewFromConfig(aws.Config{
		Region: ecstest.Region, HTTPClient: &http.Client{Transport: tr},
		Credentials: credentials.NewStaticCredentialsProvider(ecstest.AccessKeyID, ecstest.Secret, ""),
	}, func(o *awsecs.Options) { o.BaseEndpoint = aws.String(fake.URL()) })
	_, err := client.RunTask(ctxFor(t, 30*time.Second), &awsecs.RunTaskInput{
		TaskDefinition: aws.String("agora-x"), LaunchType: types.LaunchType("FARGATEX"),
	})
	var ipe *types.InvalidParameterException
	if !errors.As(err, &ipe) || !strings.Contains(ipe.ErrorMessage(), "Value 'FARGATEX' at 'launchType'") {
		t.Fatalf("RunTask with launchType FARGATEX = %v, want InvalidParameterException naming launchType", err)
	}
}
