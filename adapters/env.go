package adapters

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agoradev/agora/schemas"
)

// The AGORA_* variables every runtime sees (DispatchEnv). The names live
// in schemas, the contract's one home; these keep the adapters' own names.
const (
	EnvDispatchID     = schemas.EnvDispatchID
	EnvTaskID         = schemas.EnvTaskID
	EnvRound          = schemas.EnvRound
	EnvWorkspace      = schemas.EnvWorkspace
	EnvInputFile      = schemas.EnvInputFile
	EnvNeedsInputFile = schemas.EnvNeedsInputFile
	EnvSubagent       = schemas.EnvSubagent
	// EnvAnswer and EnvResumeFile are set on resumed rounds only.
	EnvAnswer     = schemas.EnvAnswer
	EnvResumeFile = schemas.EnvResumeFile
)

// DispatchEnv is the AGORA_* environment a runtime gets for spec, with the
// contract's file paths made absolute under workspace. The worker writes
// those files before it calls the adapter; the variables only point at them.
func DispatchEnv(spec *schemas.DispatchSpec, workspace string) []string {
	env := []string{
		EnvDispatchID + "=" + spec.DispatchID,
	}
	if spec.TaskID != "" {
		env = append(env, EnvTaskID+"="+spec.TaskID)
	}
	env = append(env,
		EnvRound+"="+strconv.Itoa(spec.EffectiveRound()),
		EnvWorkspace+"="+workspace,
		EnvInputFile+"="+WorkspacePath(workspace, schemas.InputPath),
		EnvNeedsInputFile+"="+WorkspacePath(workspace, schemas.SentinelPath),
		EnvSubagent+"="+spec.Subagent.Name,
	)
	if spec.Resume != nil {
		env = append(env,
			EnvAnswer+"="+spec.Resume.Answer,
			EnvResumeFile+"="+WorkspacePath(workspace, schemas.ResumePath),
		)
	}
	return env
}

// WorkspacePath joins one of the contract's slash-separated relative paths
// (schemas.SentinelPath, …) to workspace.
func WorkspacePath(workspace, rel string) string {
	return filepath.Join(workspace, filepath.FromSlash(rel))
}

// MergeEnv returns base with overrides applied: for each variable the last
// value wins, and each name appears once, where it first appeared. Entries
// without "=" are kept as given, named by the whole entry.
func MergeEnv(base []string, overrides ...string) []string {
	out := make([]string, 0, len(base)+len(overrides))
	at := make(map[string]int, len(base)+len(overrides))
	for _, kv := range slices.Concat(base, overrides) {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := at[name]; ok {
			out[i] = kv
			continue
		}
		at[name] = len(out)
		out = append(out, kv)
	}
	return out
}

// Getenv returns the value of name in env, the last one if it appears more
// than once (as the kernel's execve leaves it to libc, and Go's os/exec keeps
// the last), or "" when it is absent.
func Getenv(env []string, name string) string {
	v, _ := LookupEnv(env, name)
	return v
}

// LookupEnv is Getenv that also reports whether name was present.
func LookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// ErrNotFound is wrapped by LookPath when no executable was found.
var ErrNotFound = errors.New("executable file not found")

// LookPath finds the executable file for a runtime the way a shell in that
// runtime would: a name with a slash is taken as a path (relative to dir, the
// runtime's working directory), any other name is searched in the PATH of
// env — the runtime's environment, not this process's. Relative PATH entries
// are skipped, as exec.LookPath refuses them (exec.ErrDot): they would make
// the result depend on the workspace contents. The result is absolute.
func LookPath(file, dir string, env []string) (string, error) {
	if file == "" {
		return "", fmt.Errorf("look up executable: empty name: %w", ErrNotFound)
	}
	if strings.Contains(file, "/") {
		path := file
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if err := checkExecutable(path); err != nil {
			return "", fmt.Errorf("look up executable %q: %w", file, err)
		}
		return path, nil
	}
	pathVar, ok := LookupEnv(env, "PATH")
	if !ok {
		return "", fmt.Errorf("look up executable %q: PATH is not set in the runtime environment: %w", file, ErrNotFound)
	}
	for _, d := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(d) {
			continue
		}
		path := filepath.Join(d, file)
		if checkExecutable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("look up executable %q in PATH=%s: %w", file, pathVar, ErrNotFound)
}

// checkExecutable reports whether path is a regular file (after symlinks)
// with an execute bit set.
func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: %w", path, fs.ErrPermission)
	}
	if info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable: %w", path, fs.ErrPermission)
	}
	return nil
}
