package roleflags

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/internal/compute/ecs"
)

// parse is a role verb's command line as cmd/agora reads it.
func parse(v Verb, args, environ []string) (roles.Config, error) {
	fs := flagSet(v)
	f := Register(fs, v)
	if err := fs.Parse(args); err != nil {
		return roles.Config{}, err
	}
	return f.Config(environ)
}

func flagSet(v Verb) *flag.FlagSet {
	fs := flag.NewFlagSet([]string{"serve", "runner", "orchestrator", "demo"}[v], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

var nats = []string{"--nats", "nats://127.0.0.1:4222"}

// TestNATSAuthFlags: the roles take the usual NATS credentials for --nats,
// one kind at a time, the password preferably from the environment; the
// embedded server takes none (it has its own identities).
func TestNATSAuthFlags(t *testing.T) {
	t.Parallel()
	home := []string{"HOME=" + t.TempDir()}
	cfg, err := parse(Runner, append(nats, "--nats-user", "runner"), append(home, "AGORA_NATS_PASSWORD=pw"))
	if err != nil || cfg.NATSAuth.User != "runner" || cfg.NATSAuth.Password != "pw" {
		t.Fatalf("runner --nats-user runner = %+v, %v; want user runner, password from $AGORA_NATS_PASSWORD", cfg.NATSAuth, err)
	}
	cfg, err = parse(Runner, append(nats, "--nats-creds", "r.creds", "--nats-tls-ca", "ca.pem", "--worker-nats", "nats://10.0.0.1:4222",
		"--worker-nats-signer", "w.nk"), home)
	if err != nil || cfg.NATSAuth.CredsFile != "r.creds" || cfg.NATSAuth.TLSCA != "ca.pem" || cfg.WorkerNATSSignerFile != "w.nk" || cfg.WorkerNATSURL != "nats://10.0.0.1:4222" {
		t.Fatalf("runner --nats-creds, --nats-tls-ca, --worker-nats-signer = %+v, %v", cfg, err)
	}
	for _, v := range []Verb{Serve, Runner, Orchestrator} {
		cfg, err = parse(v, append(nats, "--nats-replicas", "3", "--nats-allow-anonymous"), home)
		if err != nil || cfg.NATSReplicas != 3 || !cfg.NATSAllowAnonymous {
			t.Errorf("%v --nats-replicas 3 --nats-allow-anonymous = %d, %v, %v; want 3 and allowed", v, cfg.NATSReplicas, cfg.NATSAllowAnonymous, err)
		}
	}
	// A password in the environment means nothing without --nats-user.
	if cfg, err = parse(Serve, nil, append(home, "AGORA_NATS_PASSWORD=pw")); err != nil || cfg.NATSAuth.Password != "" {
		t.Errorf("serve with $AGORA_NATS_PASSWORD only = %+v, %v; want no credentials and no error", cfg.NATSAuth, err)
	}
	for _, tc := range []struct {
		verb    Verb
		args    []string
		wantErr string
	}{
		{Runner, append(nats, "--nats-creds", "a.creds", "--nats-user", "u"), "use one of a creds file, an nkey seed or a user and password"},
		{Runner, append(nats, "--nats-password", "p"), "a password needs a user"},
		{Runner, append(nats, "--nats-tls-cert", "c.pem"), "needs both the cert and the key"},
		{Runner, append(nats, "--nats-creds", "a.creds", "--worker-nats-signer", "w.nk"), "--worker-nats-signer mints credentials for --worker-nats"},
		{Runner, append(nats, "--worker-nats", "nats://10.0.0.1:4222", "--worker-nats-signer", "w.nk"), "needs --nats-creds"},
		{Serve, []string{"--nats-creds", "a.creds"}, "are for the server at --nats"},
		{Serve, []string{"--nats-tls-ca", "ca.pem"}, "are for the server at --nats"},
		{Runner, append(nats, "--nats-replicas", "0"), "--nats-replicas 0: want 1-5"},
		{Orchestrator, append(nats, "--nats-replicas", "7"), "--nats-replicas 7: want 1-5"},
		{Serve, []string{"--nats-replicas", "3"}, "needs --nats: the embedded server is one node"},
	} {
		if _, err := parse(tc.verb, tc.args, home); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v %q: error %v, want one containing %q", tc.verb, tc.args, err, tc.wantErr)
		}
	}
}

// TestRunnerComputeFlags: --compute ecs and the --ecs-… flags become the
// runner's ECS engine, checked before anything is contacted.
func TestRunnerComputeFlags(t *testing.T) {
	t.Parallel()
	home := []string{"HOME=" + t.TempDir(), "AWS_DEFAULT_REGION=us-east-1", "AWS_REGION=eu-west-1"}
	ec2 := append(slices.Clone(nats), "--compute", "ecs", "--image", "123.dkr.ecr.eu-west-1.amazonaws.com/agora-worker:1",
		"--ecs-cluster", "agora", "--ecs-log-group", "/agora/dispatches", "--ecs-placement", "ec2InstanceId == i-0abc", "--grace", "20s")
	cfg, err := parse(Runner, ec2, home)
	if err != nil || cfg.ECS == nil {
		t.Fatalf("runner %v = %+v, %v", ec2, cfg.ECS, err)
	}
	e := cfg.ECS.Engine.WithDefaults()
	if e.Cluster != "agora" || e.Region != "eu-west-1" || e.Fargate() || e.Placement != "ec2InstanceId == i-0abc" || e.StopTimeout != 20*time.Second || e.PollInterval != ecs.DefaultPollInterval {
		t.Errorf("ECS config of %v = %+v", ec2, e)
	}
	if cfg, err := parse(Runner, append(slices.Clone(ec2), "--ecs-region", "ap-south-1"), home); err != nil || cfg.ECS.Engine.Region != "ap-south-1" {
		t.Errorf("--ecs-region ap-south-1 with $AWS_REGION = %+v, %v; want the flag's", cfg.ECS, err)
	}
	if cfg, err := parse(Runner, ec2, []string{"HOME=/h", "AWS_DEFAULT_REGION=us-east-1"}); err != nil || cfg.ECS.Engine.Region != "us-east-1" {
		t.Errorf("region with $AWS_DEFAULT_REGION only = %+v, %v; want it", cfg.ECS, err)
	}
	fargate := append(slices.Clone(ec2[:len(ec2)-4]), "--ecs-capacity-provider", "FARGATE_SPOT", "--ecs-subnet", "s1", "--ecs-subnet", "s2",
		"--ecs-isolated-security-group", "sg", "--ecs-execution-role", "r", "--ecs-task-role", "w", "--storage", "s3://b/p")
	if cfg, err := parse(Runner, fargate, home); err != nil || !cfg.ECS.Engine.WithDefaults().Fargate() || !slices.Equal(cfg.ECS.Engine.Subnets, []string{"s1", "s2"}) {
		t.Errorf("runner on Fargate = %+v, %v; want Fargate with two subnets", cfg.ECS, err)
	}
	if cfg, err := parse(Runner, nats, home); err != nil || cfg.ECS != nil {
		t.Errorf("default compute = %+v, %v; want docker (no ECS)", cfg.ECS, err)
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
		if _, err := parse(Runner, append(slices.Clone(nats), tc.args...), home); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runner %v = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestEnvironmentFillsFlags: a flag's environment variable fills it when
// the command line does not, and only on the verbs that read it.
func TestEnvironmentFillsFlags(t *testing.T) {
	t.Parallel()
	home := "HOME=" + t.TempDir()
	slack := []string{home, "AGORA_SLACK_TOKEN=xoxb-1", "AGORA_SLACK_SIGNING_SECRET=sig", "AGORA_SLACK_APP_TOKEN=xapp-1", "AGORA_PUBLIC_URL=https://agora.example.com"}
	for _, tc := range []struct {
		name    string
		verb    Verb
		args    []string
		environ []string
		check   func(roles.Config) bool
	}{
		{"serve reads $AGORA_LISTEN", Serve, nil, []string{home, "AGORA_LISTEN=127.0.0.1:7171"},
			func(c roles.Config) bool { return c.Listen == "127.0.0.1:7171" }},
		{"serve --listen wins over $AGORA_LISTEN", Serve, []string{"--listen", "127.0.0.1:7272"}, []string{home, "AGORA_LISTEN=127.0.0.1:7171"},
			func(c roles.Config) bool { return c.Listen == "127.0.0.1:7272" }},
		{"orchestrator keeps its own default", Orchestrator, nats, []string{home, "AGORA_LISTEN=127.0.0.1:7171"},
			func(c roles.Config) bool { return c.Listen == roles.DefaultListen }},
		{"runner serves no metrics by default", Runner, nats, []string{home, "AGORA_LISTEN=127.0.0.1:7171"},
			func(c roles.Config) bool { return c.Listen == "" && !c.Metrics }},
		{"$AGORA_TOKENS adds to --token", Orchestrator, append(slices.Clone(nats), "--token", "a:s3cret-a"), []string{home, "AGORA_TOKENS=b:s3cret-b c:s3cret-c"},
			func(c roles.Config) bool {
				return slices.Equal(c.Tokens, []string{"a:s3cret-a", "b:s3cret-b", "c:s3cret-c"})
			}},
		{"slack from the environment", Serve, []string{"--slack-socket-mode"}, slack,
			func(c roles.Config) bool {
				return c.Slack != nil && c.Slack.Token == "xoxb-1" && c.Slack.SigningSecret == "sig" && c.Slack.AppToken == "xapp-1" && c.Slack.PublicURL == "https://agora.example.com"
			}},
		{"slack flags win over the environment", Orchestrator, append(slices.Clone(nats), "--slack-token", "xoxb-2", "--public-url", "https://b.example.com"), slack,
			func(c roles.Config) bool {
				return c.Slack.Token == "xoxb-2" && c.Slack.PublicURL == "https://b.example.com"
			}},
		{"no slack on a runner-only serve", Serve, append(slices.Clone(nats), "--runner-only"), slack,
			func(c roles.Config) bool { return c.Slack == nil && !c.Orchestrator }},
		{"a signing secret in the environment alone is no mistake", Serve, nil, []string{home, "AGORA_SLACK_SIGNING_SECRET=sig"},
			func(c roles.Config) bool { return c.Slack == nil }},
		{"the AWS variables go to the roles", Runner, nats, []string{home, "AWS_REGION=eu-west-1", "AGORA_X=1", "AWS_ACCESS_KEY_ID=AKID"},
			func(c roles.Config) bool {
				return slices.Equal(c.AWSEnv, []string{"AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=AKID"})
			}},
		{"DOCKER_HOST words the engine's error", Serve, nil, []string{home, "DOCKER_HOST=tcp://10.0.0.1:2375"},
			func(c roles.Config) bool { return c.DockerHost == "tcp://10.0.0.1:2375" }},
	} {
		cfg, err := parse(tc.verb, tc.args, tc.environ)
		if err != nil || !tc.check(cfg) {
			t.Errorf("%s: %+v, %v", tc.name, cfg, err)
		}
	}
	if _, err := parse(Serve, []string{"--slack-signing-secret", "sig"}, []string{home}); err == nil || !strings.Contains(err.Error(), "need a bot token") {
		t.Errorf("serve --slack-signing-secret without a token = %v; want the bot token asked for", err)
	}
}

// TestRoleDefaults: each verb's configuration of the same command line.
func TestRoleDefaults(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := []string{"HOME=" + home}
	serve, err := parse(Serve, nil, env)
	if err != nil || serve.DataDir != home+"/.agora" || serve.StorageURI != "file://"+home+"/.agora/storage" || !serve.Runner || !serve.Orchestrator ||
		serve.Slots != 4 || serve.Answerers == nil || !serve.Metrics || serve.Max.CPUs <= 0 {
		t.Errorf("serve = %+v, %v", serve, err)
	}
	noRunner, err := parse(Serve, []string{"--no-runner"}, env)
	if err != nil || noRunner.Runner || noRunner.Max.CPUs != 16 {
		t.Errorf("serve --no-runner = runner %v, max CPUs %g, %v; want no runner and the orchestrator's 16", noRunner.Runner, noRunner.Max.CPUs, err)
	}
	r, err := parse(Runner, append(slices.Clone(nats), "--cpus", "64", "--max-cpus", "3", "--memory-mb", "0"), env)
	if err != nil || r.DataDir != home+"/.agora/runner" || r.RunnerDataDir != r.DataDir || r.SecretsDir != home+"/.agora/secrets" ||
		r.Orchestrator || r.Resources.NanoCPUs != 3e9 || r.Resources.MemoryBytes != 0 || r.MaxWorkspaceBytes != 1024<<20 {
		t.Errorf("runner = %+v (resources %+v), %v", r, r.Resources, err)
	}
	o, err := parse(Orchestrator, nats, env)
	if err != nil || o.Runner || !o.NoStorage || o.DataDir != home+"/.agora" || o.Answerers == nil {
		t.Errorf("orchestrator = %+v, %v", o, err)
	}
	if o, err := parse(Orchestrator, append(slices.Clone(nats), "--storage", "s3://b/p"), nil); err != nil || o.NoStorage || o.DataDir != "" {
		t.Errorf("orchestrator --storage s3://b/p without HOME = %+v, %v; want storage and no data dir", o, err)
	}
	d, err := parse(Demo, []string{"--worker", "/w", "--busybox", "/b"}, env)
	if err != nil || d.DataDir != "" || d.WorkerBinary != "/w" || d.Busybox != "/b" || !d.Runner || !d.Orchestrator || d.Listen != "127.0.0.1:0" {
		t.Errorf("demo = %+v, %v", d, err)
	}
	for _, tc := range []struct {
		verb Verb
		args []string
		want string
	}{
		{Serve, []string{"--storage", "ftp://x"}, `--storage "ftp://x": want file:///abs/dir or s3://bucket/prefix`},
		{Runner, append(slices.Clone(nats), "--worker-env", "=x"), `--worker-env "=x": want KEY=VALUE`},
		{Serve, []string{"--slots", "0"}, "--slots must be at least 1"},
		{Serve, []string{"--no-runner", "--slots", "2", "--image", "i"}, "--image, --slots configure the runner, which --no-runner leaves out"},
		{Serve, append(slices.Clone(nats), "--runner-only", "--rules", "r", "--slack-token", "x"), "--rules, --slack-token configure the orchestrator"},
		{Orchestrator, append(slices.Clone(nats), "--listen", "0.0.0.0:7070"), "refusing to listen on 0.0.0.0:7070 without --token"},
		{Orchestrator, append(slices.Clone(nats), "--ci-route", "human=-1m"), `--ci-route "human=-1m"`},
		{Runner, nil, "--nats is required"},
		{Serve, nil, "HOME is not set"},
	} {
		environ := env
		if tc.want == "HOME is not set" {
			environ = nil
		}
		if _, err := parse(tc.verb, tc.args, environ); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %q = %v; want an error saying %q", tc.verb, tc.args, err, tc.want)
		}
	}
}

// TestDeclaredOnce: a flag several verbs take is one declaration — the
// same type and, but where a verb documents its own, the same default —
// and agora serve knows which role each of its flags configures, as
// --no-runner and --runner-only need: a flag only agora runner (or the
// demo) takes besides serve is the runner's, one only agora orchestrator
// takes is the orchestrator's.
func TestDeclaredOnce(t *testing.T) {
	t.Parallel()
	sets := map[Verb]*flag.FlagSet{}
	for _, v := range []Verb{Serve, Runner, Orchestrator, Demo} {
		sets[v] = flagSet(v)
		Register(sets[v], v)
	}
	ownDefault := map[string]bool{"listen": true, "max-cpus": true} // documented per verb
	for _, a := range []Verb{Serve, Runner, Orchestrator, Demo} {
		sets[a].VisitAll(func(fa *flag.Flag) {
			for _, b := range []Verb{Serve, Runner, Orchestrator, Demo} {
				fb := sets[b].Lookup(fa.Name)
				if fb == nil || a == b {
					continue
				}
				if fa.Value.Type() != fb.Value.Type() || (!ownDefault[fa.Name] && fa.DefValue != fb.DefValue) {
					t.Errorf("--%s: %v has %s %q, %v has %s %q", fa.Name, a, fa.Value.Type(), fa.DefValue, b, fb.Value.Type(), fb.DefValue)
				}
			}
		})
	}
	shared := map[string]bool{"data-dir": true, "local-secrets": true} // both roles' in serve
	sets[Serve].VisitAll(func(fl *flag.Flag) {
		inRunner := sets[Runner].Lookup(fl.Name) != nil || sets[Demo].Lookup(fl.Name) != nil
		inOrch := sets[Orchestrator].Lookup(fl.Name) != nil
		want := ""
		switch {
		case shared[fl.Name] || inRunner == inOrch:
		case inRunner:
			want = roleRunner
		case inOrch:
			want = roleOrch
		}
		if got := strings.Join(fl.Annotations[roleAnnotation], ","); got != want {
			t.Errorf("serve --%s configures %q, want %q", fl.Name, got, want)
		}
	})
}

// TestAnnotatingAnUndeclaredFlag: a mistake in Register's annotations
// fails every Config, naming the flag, instead of being lost.
func TestAnnotatingAnUndeclaredFlag(t *testing.T) {
	t.Parallel()
	f := Register(flagSet(Orchestrator), Orchestrator)
	f.env("no-such-flag", "AGORA_NOTHING")
	if _, err := f.Config([]string{"HOME=/h"}); err == nil || !strings.Contains(err.Error(), "declare --no-such-flag") {
		t.Errorf("Config after annotating an undeclared flag = %v; want the mistake named", err)
	}
}
