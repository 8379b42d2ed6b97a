package claudecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/schemas"
)

// Claude Code keeps a conversation (a session) on disk as a JSONL
// transcript, <config dir>/projects/<project>/<session id>.jsonl, with the
// session's own files (sub-agent transcripts, large tool results) in
// <session id>/ beside it, and continues it with `--resume <session id>`
// when run in the same working directory
// (https://code.claude.com/docs/en/agent-sdk/sessions,
// https://code.claude.com/docs/en/cli-reference). The config dir is
// $CLAUDE_CONFIG_DIR, else ~/.claude
// (https://code.claude.com/docs/en/claude-directory); in agora's containers
// HOME is /tmp, which does not outlive the container.
//
// So that the next round can resume, a round copies its session — the
// transcript and its directory, nothing else of the config dir — into the
// workspace at SessionDir, which agora snapshots when the round asks a
// question and restores for the next round; that round copies it back to
// where Claude Code looks. The config dir itself never enters the
// workspace: its credentials (.credentials.json), app state and caches
// stay out of every snapshot, and an image's own Claude Code settings keep
// working.

const (
	// SessionDir is where, relative to the workspace, a round leaves its
	// Claude Code session for the next one.
	SessionDir = ".agora/claude-session"
	// sessionRecord, sessionTranscript and sessionFiles are SessionDir's
	// entries: what the session is, its transcript, its own directory.
	sessionRecord     = "session.json"
	sessionTranscript = "transcript.jsonl"
	sessionFiles      = "files"
	// MaxSessionBytes bounds the session a round keeps (transcript and
	// files together): a longer one is not kept, and the next round starts
	// afresh with the prompt and resume.json.
	MaxSessionBytes = 64 << 20
	// maxSessionEntries bounds the files of a session's directory.
	maxSessionEntries = 10_000
	// maxRecordBytes bounds session.json, a few hundred bytes.
	maxRecordBytes = 64 << 10
	// EnvConfigDir is Claude Code's variable for its config dir.
	EnvConfigDir = "CLAUDE_CONFIG_DIR"
	// configPerm is the mode of what goes back into the config dir;
	// workspacePerm that of the workspace's copy, which the runner must
	// read to snapshot it whatever user it runs as (as .agora/resume.json).
	configPerm    = 0o600
	workspacePerm = 0o644
)

// savedSession is SessionDir/session.json.
type savedSession struct {
	// SessionID is Claude Code's session_id.
	SessionID string `json:"session_id"`
	// Workspace is the working directory Claude Code ran in: it finds a
	// session only from the same one.
	Workspace string `json:"workspace"`
	// ProjectDir is the name of the directory under <config dir>/projects
	// the transcript was found in (Claude Code's encoding of Workspace),
	// where it goes back.
	ProjectDir string `json:"project_dir"`
	// Round is the round that left it.
	Round int `json:"round"`
}

// sessionIDChars matches the session ids agora passes to --resume: Claude
// Code's are UUIDs; anything that could leave a directory is refused. Their
// length (at most maxSessionIDLen) is checked apart: a counted repetition
// such as {0,127} compiles to one instruction per count, and this is
// compiled in every worker's start, where memory touched is time
// (docs/benchmarks.md).
var sessionIDChars = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// maxSessionIDLen is the longest session id taken.
const maxSessionIDLen = 128

// validSessionID reports whether id is a session id agora passes on.
func validSessionID(id string) bool {
	return len(id) <= maxSessionIDLen && sessionIDChars.MatchString(id)
}

// configDir is Claude Code's config dir in the runtime environment env,
// or "" when neither CLAUDE_CONFIG_DIR nor HOME says.
func configDir(env []string) string {
	if d := adapters.Getenv(env, EnvConfigDir); d != "" {
		return d
	}
	if home := adapters.Getenv(env, "HOME"); home != "" {
		return filepath.Join(home, ".claude")
	}
	return ""
}

// restoreSession puts the session the previous round left in the
// workspace back where Claude Code will look for it, and returns its id.
// The error says why it cannot be resumed; the round then starts afresh.
func restoreSession(ws, cfgDir string) (string, error) {
	if cfgDir == "" {
		return "", errors.New("no config dir: neither CLAUDE_CONFIG_DIR nor HOME is set")
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	data, err := readRegular(root, path.Join(SessionDir, sessionRecord), maxRecordBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the previous round left no session in %s", SessionDir)
	}
	if err != nil {
		return "", err
	}
	// Read exactly: the sub-agent could have written it.
	var s savedSession
	if err := schemas.DecodeKnown(SessionDir+"/"+sessionRecord, data, &s); err != nil {
		return "", err
	}
	switch {
	case !validSessionID(s.SessionID):
		return "", fmt.Errorf("%s/%s: session_id %q is not a session id", SessionDir, sessionRecord, s.SessionID)
	case !validName(s.ProjectDir):
		return "", fmt.Errorf("%s/%s: project_dir %q is not one directory name", SessionDir, sessionRecord, s.ProjectDir)
	case s.Workspace != ws:
		return "", fmt.Errorf("the session was left in workspace %s, this round runs in %s: Claude Code resumes a session only from the directory it ran in", s.Workspace, ws)
	}
	transcript, err := readRegular(root, path.Join(SessionDir, sessionTranscript), MaxSessionBytes)
	if err != nil {
		return "", fmt.Errorf("session transcript: %w", err)
	}
	project := filepath.Join(cfgDir, "projects", s.ProjectDir)
	if err := os.MkdirAll(project, 0o700); err != nil { // as private as Claude Code's own
		return "", fmt.Errorf("restore session: %w", err)
	}
	dst, err := os.OpenRoot(project)
	if err != nil {
		return "", fmt.Errorf("restore session: %w", err)
	}
	defer dst.Close()
	if err := dst.WriteFile(s.SessionID+".jsonl", transcript, configPerm); err != nil {
		return "", fmt.Errorf("restore session: %w", err)
	}
	files := path.Join(SessionDir, sessionFiles)
	if fi, err := root.Lstat(files); err == nil && fi.IsDir() {
		sub, err := root.OpenRoot(files)
		if err != nil {
			return "", fmt.Errorf("restore session files: %w", err)
		}
		defer sub.Close()
		if err := copyTree(sub.FS(), dst, s.SessionID, MaxSessionBytes-int64(len(transcript)), configPerm); err != nil {
			return "", fmt.Errorf("restore session files: %w", err)
		}
	}
	return s.SessionID, nil
}

// saveSession copies session id's transcript and directory from the config
// dir into the workspace's SessionDir, replacing what an earlier round
// left there. With no session (id ""), or none on disk (claude ran with
// --no-session-persistence, or failed before it began), SessionDir is
// emptied: a later round must not resume an older conversation that lacks
// this round. The error says why nothing was kept.
func saveSession(ws, cfgDir, id string, round int) error {
	// Everything in the workspace goes through a root: the sub-agent may
	// have put links there, and none may lead the worker out.
	root, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	if err := root.RemoveAll(SessionDir); err != nil {
		return fmt.Errorf("remove the earlier session: %w", err)
	}
	switch {
	case id == "":
		return errors.New("claude reported no session_id")
	case !validSessionID(id):
		return fmt.Errorf("claude reported session_id %q, which is not a session id", id)
	case cfgDir == "":
		return errors.New("no config dir: neither CLAUDE_CONFIG_DIR nor HOME is set")
	}
	// Found where it is rather than where Claude Code's encoding of the
	// working directory should put it: the name goes back unchanged.
	matches, err := filepath.Glob(filepath.Join(cfgDir, "projects", "*", id+".jsonl"))
	if err != nil || len(matches) == 0 {
		return fmt.Errorf("no transcript of session %s under %s", id, filepath.Join(cfgDir, "projects"))
	}
	transcript := matches[0]
	data, err := readFileNoFollow(transcript, MaxSessionBytes)
	if err != nil {
		return fmt.Errorf("session transcript: %w", err)
	}
	// Written aside and renamed, so SessionDir holds a whole session or
	// none.
	tmp := SessionDir + ".tmp"
	if err := root.RemoveAll(tmp); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := root.MkdirAll(tmp, workspacePerm|0o111); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	defer root.RemoveAll(tmp)
	if err := root.WriteFile(path.Join(tmp, sessionTranscript), data, workspacePerm); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	own := strings.TrimSuffix(transcript, ".jsonl")
	if fi, err := os.Lstat(own); err == nil && fi.IsDir() {
		if err := copyTree(os.DirFS(own), root, path.Join(tmp, sessionFiles), MaxSessionBytes-int64(len(data)), workspacePerm); err != nil {
			return fmt.Errorf("save session files: %w", err)
		}
	}
	rec, err := json.Marshal(savedSession{SessionID: id, Workspace: ws, ProjectDir: filepath.Base(filepath.Dir(transcript)), Round: round})
	if err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := root.WriteFile(path.Join(tmp, sessionRecord), append(rec, '\n'), workspacePerm); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := root.Rename(tmp, SessionDir); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// copyTree copies the regular files and directories of src into dir
// (created) inside dst, at most budget bytes and maxSessionEntries
// entries; a symlink or any other kind of file is an error. Files get mode
// perm, directories perm with the execute bits of its read bits.
func copyTree(src fs.FS, dst *os.Root, dir string, budget int64, perm fs.FileMode) error {
	dirPerm := perm | (perm&0o444)>>2
	entries := 0
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entries++; entries > maxSessionEntries {
			return fmt.Errorf("more than %d entries", maxSessionEntries)
		}
		target := path.Join(dir, p)
		switch {
		case d.IsDir():
			return dst.MkdirAll(target, dirPerm)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		f, err := src.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		out, err := dst.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, perm)
		if err != nil {
			return err
		}
		n, err := io.Copy(out, io.LimitReader(f, budget+1))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if budget -= n; budget < 0 {
			return fmt.Errorf("the session is larger than %d bytes", MaxSessionBytes)
		}
		return nil
	})
}

// readRegular reads name inside root when it is a regular file (a symlink
// is not followed) of at most limit bytes.
func readRegular(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name, limit)
}

// readFileNoFollow is readRegular for a path outside any root.
func readFileNoFollow(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name, limit)
}

func readLimited(f *os.File, name string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}

// validName reports whether s is one directory name, nothing that could
// leave the directory it is joined to.
func validName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00") && len(s) <= 255
}
