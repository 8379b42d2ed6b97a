package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/secrets/awssm"
	"github.com/agoradev/agora/internal/secrets/awssm/awssmtest"
	"github.com/agoradev/agora/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// compileCase is one testdata/compile/<case>.json: a request and the
// runner settings that shape its container.
type compileCase struct {
	Request       schemas.DispatchRequest `json:"request"`
	WorkerNATSURL string                  `json:"worker_nats_url"`
	Resources     compute.Resources       `json:"default_resources"`
	StageDir      string                  `json:"stage_dir"`
	Secrets       dispatchSecrets         `json:"secrets"`
	KeyDir        string                  `json:"key_dir"`
	NATSCreds     bool                    `json:"nats_creds"`
	CancelDir     string                  `json:"cancel_dir"`
	AWSEnv        []string                `json:"runner_aws_env"`
	WorkerEnv     []string                `json:"worker_env"`
	MaxMemoryMB   int64                   `json:"max_memory_mb"`
	MaxCPUs       float64                 `json:"max_cpus"`
	MaxPids       int64                   `json:"max_pids"`
	// Remote is set for a runner without host mounts (Fargate), whose
	// storage is StorageURI.
	Remote            *remoteFiles `json:"remote"`
	StorageURI        string       `json:"storage_uri"`
	MaxWorkspaceBytes int64        `json:"max_workspace_bytes"`
}

// TestCompileGolden: request in, container spec out, compared with
// testdata/compile/<case>.golden.json (go test -update rewrites them).
func TestCompileGolden(t *testing.T) {
	t.Parallel()
	cases, err := filepath.Glob("testdata/compile/*.json")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range cases {
		if strings.HasSuffix(path, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var c compileCase
			if err := json.Unmarshal(data, &c); err != nil {
				t.Fatal(err)
			}
			cfg := Config{ID: "runner-1", Image: "agora-worker:test", StorageURI: "file:///var/lib/agora/storage",
				WorkerNATSURL: c.WorkerNATSURL, Resources: c.Resources, Grace: 10 * time.Second, AWSEnv: c.AWSEnv, WorkerEnv: c.WorkerEnv,
				MaxMemoryMB: c.MaxMemoryMB, MaxCPUs: c.MaxCPUs, MaxPids: c.MaxPids, MaxWorkspaceBytes: c.MaxWorkspaceBytes}
			paths := hostPaths{SpecDir: "/data/dispatches/x", Workspace: "/data/workspaces/x", StageDir: c.StageDir, Secrets: c.Secrets, KeyDir: c.KeyDir, NATSCreds: c.NATSCreds, CancelDir: c.CancelDir}
			if c.Remote != nil {
				cfg.StorageURI, cfg.NoHostMounts, paths = c.StorageURI, true, hostPaths{Remote: c.Remote}
			}
			got := compileContainer(&c.Request, cfg, paths)
			if err := got.Validate(); err != nil {
				t.Errorf("compiled spec does not validate: %v", err)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			golden := strings.TrimSuffix(path, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("compileContainer(%s) =\n%s\nwant\n%s", name, out, want)
			}
		})
	}
}

// TestValueFrom: an aws-sm ref becomes ECS's valueFrom, always a full ARN
// (a name is an SSM parameter's to ECS): a name is looked up with
// DescribeSecret through the real SDK, once; a JSON key works on a name
// too (ARN:KEY::); a secret that is not there is refused naming it.
func TestValueFrom(t *testing.T) {
	t.Parallel()
	sm := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db": {String: awssmtest.Str(`{"password":"x"}`)}})
	arnOf := awssm.New(awssm.Options{Environ: sm.Environ()}).ARN
	arn := awssmtest.ARN("prod/db")
	other := "arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/api-XyZ123"
	for _, tc := range []struct {
		ref, want, err string
	}{
		{ref: "aws-sm:prod/db", want: arn},
		{ref: "aws-sm:prod/db#password", want: arn + ":password::"},
		{ref: "aws-sm:" + arn, want: arn},
		{ref: "aws-sm:" + other + "#token", want: other + ":token::"},
		{ref: "aws-sm:prod/missing", err: "has no secret prod/missing"},
		{ref: "aws-sm:" + arn + "#", err: "empty JSON key"},
		{ref: "aws-sm:", err: "names no secret"},
	} {
		got, err := valueFrom(context.Background(), arnOf, tc.ref)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("valueFrom(%q) = %q, %v; want an error containing %q", tc.ref, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("valueFrom(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
	if got := sm.Described(); len(got) != 2 || got[0] != "prod/db" {
		t.Errorf("DescribeSecret calls = %q, want prod/db once and prod/missing once", got)
	}
}
