package worker

import (
	"os"
	"strings"

	"github.com/agoradev/agora/schemas"
)

// allowedEnv are the worker's own variables a runtime may see: what programs
// need to behave (locale, time zone, certificates, proxies), nothing that
// authenticates the worker.
var allowedEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true, "TMPDIR": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true,
	// Claude Code's permission mode is operator configuration, not a secret.
	schemas.EnvClaudePermissionMode: true,
}

// deniedPrefixes never reach a runtime, even when AGORA_PASSTHROUGH_ENV names
// them: they are the worker's own credentials and wiring. A sub-agent that
// needs AWS access gets it from an env bundle.
var deniedPrefixes = []string{"AWS_", "AGORA_", "NATS_"}

// runtimeEnv builds the runtime's base environment: the allow-list and the
// names in AGORA_PASSTHROUGH_ENV (comma-separated) from the worker's own
// environment, then the env bundles' values, with exeDir first on PATH.
func runtimeEnv(environ []string, bundles []string, exeDir string) []string {
	pass := map[string]bool{}
	for _, kv := range environ {
		if name, value, _ := strings.Cut(kv, "="); name == schemas.EnvPassthroughEnv {
			for _, n := range strings.Split(value, ",") {
				if n = strings.TrimSpace(n); n != "" {
					pass[n] = true
				}
			}
		}
	}
	var env []string
	hasPath := false
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		explicit := allowedEnv[name] || strings.HasPrefix(name, "LC_")
		if !explicit && !(pass[name] && !denied(name)) {
			continue
		}
		env = append(env, kv)
		hasPath = hasPath || name == "PATH"
	}
	if !hasPath {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	env = append(env, bundles...)
	if exeDir != "" {
		for i, kv := range env {
			if strings.HasPrefix(kv, "PATH=") {
				env[i] = "PATH=" + exeDir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
			}
		}
	}
	return dedupeEnv(env)
}

func denied(name string) bool {
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// dedupeEnv keeps the last value of each name, in first-seen order.
func dedupeEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := env[:0:0]
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}
