package worker

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestRuntimeEnv(t *testing.T) {
	t.Parallel()
	const defaultPath = "/usr/local/bin:/usr/bin:/bin"
	tests := []struct {
		name    string
		environ []string
		bundles []string
		exeDir  string
		want    map[string]string // the whole environment, by name
	}{
		{
			name: "allow-listed names pass, others do not",
			environ: []string{
				"PATH=/usr/bin", "HOME=/home/w", "USER=w", "LOGNAME=w", "SHELL=/bin/sh", "LANG=C.UTF-8", "LANGUAGE=en",
				"TZ=UTC", "TERM=xterm", "TMPDIR=/tmp/w", "SSL_CERT_FILE=/etc/ca.pem", "SSL_CERT_DIR=/etc/ca",
				"HTTP_PROXY=http://p:3128", "HTTPS_PROXY=http://p:3128", "NO_PROXY=localhost",
				"http_proxy=http://p:3128", "https_proxy=http://p:3128", "no_proxy=localhost",
				"AGORA_CLAUDE_PERMISSION_MODE=plan",
				"SECRET_OF_WORKER=x", "GITHUB_TOKEN=ghp_x", "HOSTNAME=box", "Path=/wrong/case",
			},
			want: map[string]string{
				"PATH": "/usr/bin", "HOME": "/home/w", "USER": "w", "LOGNAME": "w", "SHELL": "/bin/sh", "LANG": "C.UTF-8", "LANGUAGE": "en",
				"TZ": "UTC", "TERM": "xterm", "TMPDIR": "/tmp/w", "SSL_CERT_FILE": "/etc/ca.pem", "SSL_CERT_DIR": "/etc/ca",
				"HTTP_PROXY": "http://p:3128", "HTTPS_PROXY": "http://p:3128", "NO_PROXY": "localhost",
				"http_proxy": "http://p:3128", "https_proxy": "http://p:3128", "no_proxy": "localhost",
				"AGORA_CLAUDE_PERMISSION_MODE": "plan",
			},
		},
		{
			name:    "LC_ variables pass",
			environ: []string{"PATH=/bin", "LC_ALL=C.UTF-8", "LC_CTYPE=en_US.UTF-8", "LC_=odd but a prefix match", "LCX=no"},
			want:    map[string]string{"PATH": "/bin", "LC_ALL": "C.UTF-8", "LC_CTYPE": "en_US.UTF-8", "LC_": "odd but a prefix match"},
		},
		{
			name: "AWS_, AGORA_ and NATS_ are dropped even when passed through",
			environ: []string{
				"PATH=/bin",
				"AGORA_PASSTHROUGH_ENV=AWS_SECRET_ACCESS_KEY,AWS_REGION,AGORA_NATS_URL,AGORA_STORAGE_URI,NATS_TOKEN,AGORA_PASSTHROUGH_ENV,TOOL_TOKEN",
				"AWS_SECRET_ACCESS_KEY=s", "AWS_ACCESS_KEY_ID=AKIA", "AWS_REGION=eu-west-1",
				"AGORA_NATS_URL=nats://n", "AGORA_STORAGE_URI=s3://b", "AGORA_DISPATCH_ID=d-1",
				"NATS_TOKEN=t", "TOOL_TOKEN=ok",
			},
			want: map[string]string{"PATH": "/bin", "TOOL_TOKEN": "ok"},
		},
		{
			name:    "passthrough names pass, however the list is spaced",
			environ: []string{"PATH=/bin", "AGORA_PASSTHROUGH_ENV= FOO , ,BAR,,NOT_SET", "FOO=1", "BAR=2=two", "BAZ=3"},
			want:    map[string]string{"PATH": "/bin", "FOO": "1", "BAR": "2=two"},
		},
		{
			name:    "bundle values override and add",
			environ: []string{"PATH=/bin", "HOME=/home/w", "LANG=C"},
			bundles: []string{"HOME=/home/agent", "GREETING=hello", "AWS_REGION=us-east-1", "GREETING=hi"},
			want:    map[string]string{"PATH": "/bin", "HOME": "/home/agent", "LANG": "C", "GREETING": "hi", "AWS_REGION": "us-east-1"},
		},
		{
			name:    "the worker's directory first on PATH",
			environ: []string{"PATH=/usr/bin:/bin"},
			exeDir:  "/opt/agora",
			want:    map[string]string{"PATH": "/opt/agora:/usr/bin:/bin"},
		},
		{
			name:    "a default PATH when the worker has none",
			environ: []string{"HOME=/home/w"},
			want:    map[string]string{"HOME": "/home/w", "PATH": defaultPath},
		},
		{
			name:   "a default PATH, the worker's directory first",
			exeDir: "/opt/agora",
			want:   map[string]string{"PATH": "/opt/agora:" + defaultPath},
		},
		{
			name:    "a bundle's PATH wins and still gets the worker's directory",
			environ: []string{"PATH=/usr/bin"},
			bundles: []string{"PATH=/tools/bin:/usr/bin"},
			exeDir:  "/opt/agora",
			want:    map[string]string{"PATH": "/opt/agora:/tools/bin:/usr/bin"},
		},
		{
			name:    "a name given twice appears once, with its last value",
			environ: []string{"PATH=/first", "HOME=/a", "PATH=/second", "HOME=/b"},
			want:    map[string]string{"PATH": "/second", "HOME": "/b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			environ := slices.Clone(tt.environ)
			env := runtimeEnv(environ, tt.bundles, tt.exeDir)
			if !slices.Equal(environ, tt.environ) {
				t.Errorf("runtimeEnv modified its environ argument: %q", environ)
			}
			got := map[string]string{}
			for _, kv := range env {
				name, value, ok := strings.Cut(kv, "=")
				if !ok {
					t.Errorf("runtimeEnv entry %q has no '='", kv)
				}
				if _, dup := got[name]; dup {
					t.Errorf("runtimeEnv has %s twice: %q", name, env)
				}
				got[name] = value
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("runtimeEnv(%q, %q, %q)\n got %v\nwant %v", tt.environ, tt.bundles, tt.exeDir, got, tt.want)
			}
		})
	}
}
