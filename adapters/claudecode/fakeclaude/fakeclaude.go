// Package fakeclaude is a stand-in for the Claude Code CLI, for tests. The
// real Anthropic API cannot be reached where agora's tests run, so tests
// start this instead: a test binary whose TestMain calls Main when it was
// started under the name "claude", reached through a symlink that Install
// puts on the runtime's PATH:
//
//	func TestMain(m *testing.M) {
//		if filepath.Base(os.Args[0]) == fakeclaude.Executable {
//			os.Exit(fakeclaude.Main())
//		}
//		goleak.VerifyTestMain(m)
//	}
//
// or a static binary of ./cmd/claude, for a container image.
//
// It models what Claude Code documents, and nothing it does not:
//
//   - Headless mode (https://code.claude.com/docs/en/headless): `claude
//     --print` reads the prompt from stdin and, with --output-format
//     stream-json (which needs --verbose with --print), writes one JSON
//     object per line: a system/init message carrying the session_id, the
//     assistant's messages, and a result message with session_id,
//     num_turns, total_cost_usd and usage (input_tokens, output_tokens,
//     cache_creation_input_tokens, cache_read_input_tokens) last, as the
//     Agent SDK reference types SDKResultMessage
//     (https://code.claude.com/docs/en/agent-sdk/typescript). An error
//     result has is_error true and its messages in errors.
//   - Sessions (https://code.claude.com/docs/en/agent-sdk/sessions): every
//     run is a session with a new id unless `--resume <id>` continues one
//     (CLI reference, https://code.claude.com/docs/en/cli-reference); the
//     resumed session keeps its id; with --fork-session it is a new session
//     with a copy of the history, and the original is left untouched.
//     A session is a JSONL transcript at
//     <config dir>/projects/<encoded cwd>/<session id>.jsonl, where the
//     encoded cwd is the absolute working directory with every character
//     that is not an ASCII letter or digit replaced by "-"; resume finds
//     it only there, so only from the same working directory, and
//     otherwise fails with "No conversation found with session ID: <id>"
//     (anthropics/claude-code issue 58591). --no-session-persistence keeps
//     the session off the disk.
//   - The config dir (https://code.claude.com/docs/en/claude-directory) is
//     ~/.claude, or $CLAUDE_CONFIG_DIR when set; its app state
//     (.claude.json) is written beside it in $HOME, or inside
//     $CLAUDE_CONFIG_DIR.
//   - --permission-mode takes default, acceptEdits, plan, auto, dontAsk or
//     bypassPermissions (https://code.claude.com/docs/en/permission-modes).
//
// It insists on the arguments the claude-code adapter must pass (--print,
// --output-format stream-json, --verbose, --permission-mode) and fails like
// a usage error otherwise. What it does is chosen by $FAKE_CLAUDE_MODE (the
// Mode constants); with $FAKE_CLAUDE_RECORD set it also reports what it
// received as a Record, to that file or ("stderr") on stderr.
//
// Under -race a child binary sleeps a second before exiting 0; put
// GORACE=atexit_sleep_ms=0 in its environment to keep tests fast.
package fakeclaude

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"

	"github.com/agoradev/agora/schemas"
)

const (
	// Executable is the name the fake must be started under.
	Executable = "claude"
	// ModeEnv selects the behaviour; empty means ModeOK.
	ModeEnv = "FAKE_CLAUDE_MODE"
	// RecordEnv, when set, names a file the fake writes its Record to
	// before doing anything else, or is RecordToStderr.
	RecordEnv = "FAKE_CLAUDE_RECORD"
	// RecordToStderr as $FAKE_CLAUDE_RECORD writes the Record on stderr,
	// one line starting with RecordPrefix: in a container, where the test
	// reads only the output.
	RecordToStderr = "stderr"
	// RecordPrefix starts the stderr line of RecordToStderr.
	RecordPrefix = "fake claude record: "
	// DefaultModel is reported when no --model was given.
	DefaultModel = "claude-fake-1"
	// FailExitCode is the exit code of ModeFail.
	FailExitCode = 3
	// UsageExitCode is the exit code for bad arguments or an empty prompt.
	UsageExitCode = 2
	// NoSessionExitCode is the exit code when --resume names a session
	// that is not on disk.
	NoSessionExitCode = 1
	// ResultText is the final result text of ModeOK, ModeAsk and
	// ModeGarbage: what their result message carries, and so a round's
	// result when the sub-agent wrote no .agora/result.json.
	ResultText = "Done: the change is in place.\nTwo files changed: a.go, \"b.go\"."
	// EnvConfigDir is Claude Code's variable for its config dir.
	EnvConfigDir = "CLAUDE_CONFIG_DIR"
)

// Modes of the fake.
const (
	// ModeOK streams init, assistant and result messages and exits 0.
	ModeOK = "ok"
	// ModeAsk writes AskSentinel to $AGORA_NEEDS_INPUT_FILE (temp file, then
	// rename), streams as ModeOK does, and exits 0.
	ModeAsk = "ask"
	// ModeAskOnce is ModeAsk on a first round ($AGORA_ANSWER unset) and
	// ModeOK once answered.
	ModeAskOnce = "ask-once"
	// ModeFail streams an init message and an error result, writes to
	// stderr and exits FailExitCode.
	ModeFail = "fail"
	// ModeHang ignores SIGTERM, streams an init message and sleeps for an
	// hour: only SIGKILL ends it.
	ModeHang = "hang"
	// ModeGarbage mixes lines that are not stream-json messages into the
	// ModeOK stream.
	ModeGarbage = "garbage"
)

// Record is what the fake received.
type Record struct {
	Args   []string `json:"args"`
	Prompt string   `json:"prompt"`
	Dir    string   `json:"dir"`
	// Env holds the AGORA_* variables it saw, and CLAUDE_CONFIG_DIR and
	// HOME.
	Env map[string]string `json:"env"`
	// ConfigDir is the config dir it used.
	ConfigDir string `json:"config_dir"`
	// SessionID is the session it ran in; Resumed is the id --resume
	// named ("" for a new session).
	SessionID string `json:"session_id"`
	Resumed   string `json:"resumed,omitempty"`
	// Conversation is the user messages of the resumed session before
	// this run's prompt, oldest first: what the model would have seen.
	Conversation []string `json:"conversation,omitempty"`
	// SessionFiles reports that the resumed session's own directory
	// (<session id>/ beside its transcript) was there.
	SessionFiles bool `json:"session_files,omitempty"`
}

// ReadRecord reads the Record the fake wrote at path.
func ReadRecord(path string) (Record, error) {
	var r Record
	data, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("read fake claude record: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("decode fake claude record %s: %w", path, err)
	}
	return r, nil
}

// FindRecords returns the Records that RecordToStderr wrote into output,
// in order.
func FindRecords(output string) ([]Record, error) {
	var recs []Record
	for line := range strings.Lines(output) {
		_, rest, ok := strings.Cut(line, RecordPrefix)
		if !ok {
			continue
		}
		var r Record
		if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &r); err != nil {
			return recs, fmt.Errorf("decode fake claude record %q: %w", rest, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// Install puts a symlink named claude in dir pointing at the running
// executable (the test binary), and returns its path. Put dir on the
// runtime's PATH.
func Install(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("install fake claude: %w", err)
	}
	path := filepath.Join(dir, Executable)
	if err := os.Symlink(self, path); err != nil {
		return "", fmt.Errorf("install fake claude: %w", err)
	}
	return path, nil
}

// AskSentinel is the sentinel ModeAsk writes.
func AskSentinel() schemas.NeedsInput {
	return schemas.NeedsInput{
		Question:     "Should I rewrite function A or function B?",
		Options:      []string{"A", "B"},
		Context:      "Both have the same signature; A is older, B has more callers.",
		PartialState: json.RawMessage(`{"files_read":["a.go","b.go"],"callers":{"A":3,"B":11}}`),
	}
}

// ReportedUsage is the usage ModeOK, ModeAsk and ModeGarbage report when
// started with --model model ("" for none), in a resumed session or a new
// one: a resumed one reads most of its input from the prompt cache.
func ReportedUsage(model string, resumed bool) schemas.Usage {
	u := schemas.Usage{Model: modelOr(model), Turns: 2, CostUSD: 0.0123, InputTokens: 1200, OutputTokens: 345,
		CacheCreationInputTokens: 900}
	if resumed {
		u.CostUSD, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens = 0.0045, 150, 120, 2400
	}
	return u
}

// Stream names what varies in a transcript of the fake's stdout.
type Stream struct {
	Model          string // "" for DefaultModel
	SessionID      string
	Cwd            string
	PermissionMode string
	Resumed        bool
}

// Transcript is exactly what ModeOK and ModeAsk write to stdout for s.
func Transcript(s Stream) string {
	var b strings.Builder
	for _, m := range okStream(s) {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	return b.String()
}

// ProjectDirName is the directory Claude Code keeps the sessions of the
// working directory cwd in, under <config dir>/projects: cwd with every
// UTF-16 code unit that is not an ASCII letter or digit replaced by "-".
func ProjectDirName(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	out := make([]byte, len(units))
	for i, u := range units {
		switch {
		case u >= 'a' && u <= 'z', u >= 'A' && u <= 'Z', u >= '0' && u <= '9':
			out[i] = byte(u)
		default:
			out[i] = '-'
		}
	}
	return string(out)
}

// TranscriptPath is where Claude Code keeps session id's transcript for a
// run in cwd with config dir configDir.
func TranscriptPath(configDir, cwd, id string) string {
	return filepath.Join(configDir, "projects", ProjectDirName(cwd), id+".jsonl")
}

// Main runs the fake with os.Args, the environment and stdin, and returns
// its exit code.
func Main() int {
	stdout := bufio.NewWriter(os.Stdout)
	defer stdout.Flush()
	code, err := run(os.Args[1:], stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake claude:", err)
	}
	return code
}

// invocation is what the arguments asked for.
type invocation struct {
	model, permission, resume string
	persist, fork             bool
}

func run(args []string, stdout *bufio.Writer) (int, error) {
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		return 1, fmt.Errorf("read prompt: %w", err)
	}
	inv, argErr := checkArgs(args)
	cwd, err := os.Getwd()
	if err != nil {
		return 1, err
	}
	cfgDir, cfgErr := configDir()
	rec := Record{Args: args, Prompt: string(prompt), Dir: cwd, ConfigDir: cfgDir, Resumed: inv.resume}

	emit := func(line string) {
		stdout.WriteString(line + "\n")
		// Flush per line: a stream is read as it arrives.
		stdout.Flush()
	}
	// The session: a new one, or the one --resume names, as it is on disk.
	var history []transcriptLine
	switch {
	case argErr != nil || cfgErr != nil:
	case inv.resume != "":
		rec.SessionID = inv.resume
		history, rec.SessionFiles, err = readSession(cfgDir, cwd, inv.resume)
		if errors.Is(err, fs.ErrNotExist) {
			if err := writeRecord(rec); err != nil {
				return 1, err
			}
			msg := "No conversation found with session ID: " + inv.resume
			errs, _ := json.Marshal([]string{msg})
			emit(`{"type":"result","subtype":"error_during_execution","is_error":true,"duration_ms":3,"duration_api_ms":0,"num_turns":0,"session_id":"` +
				newSessionID() + `","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"errors":` + string(errs) + `}`)
			fmt.Fprintln(os.Stderr, msg)
			return NoSessionExitCode, nil
		}
		if err != nil {
			return 1, err
		}
		for _, l := range history {
			if l.Type == "user" {
				rec.Conversation = append(rec.Conversation, l.Message.Text())
			}
		}
		if inv.fork {
			// A new session starting from a copy of the history; the
			// original is left as it is.
			rec.SessionID = newSessionID()
			for i := range history {
				history[i].SessionID = rec.SessionID
			}
		}
	default:
		rec.SessionID = newSessionID()
	}
	if err := writeRecord(rec); err != nil {
		return 1, err
	}
	if argErr != nil {
		return UsageExitCode, argErr
	}
	if cfgErr != nil {
		return 1, cfgErr
	}
	if strings.TrimSpace(string(prompt)) == "" {
		return UsageExitCode, errors.New("input must be provided through stdin when using --print")
	}

	s := Stream{Model: inv.model, SessionID: rec.SessionID, Cwd: cwd, PermissionMode: inv.permission, Resumed: inv.resume != ""}
	persist := func() error {
		if !inv.persist {
			return nil
		}
		return writeSession(cfgDir, cwd, rec.SessionID, history, string(prompt))
	}
	mode := os.Getenv(ModeEnv)
	if mode == ModeAskOnce {
		mode = ModeAsk
		if os.Getenv("AGORA_ANSWER") != "" {
			mode = ModeOK
		}
	}
	switch mode {
	case "", ModeOK:
		for _, m := range okStream(s) {
			emit(m)
		}
		return 0, persist()
	case ModeAsk:
		if err := writeSentinel(); err != nil {
			return 1, err
		}
		for _, m := range okStream(s) {
			emit(m)
		}
		return 0, persist()
	case ModeFail:
		emit(initMessage(s))
		emit(`{"type":"result","subtype":"error_during_execution","is_error":true,"duration_ms":120,"duration_api_ms":80,"num_turns":1,"session_id":"` + s.SessionID + `","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":0},"errors":["failing on purpose"]}`)
		fmt.Fprintln(os.Stderr, "fake claude: failing on purpose")
		return FailExitCode, persist()
	case ModeHang:
		signal.Ignore(syscall.SIGTERM)
		emit(initMessage(s))
		time.Sleep(time.Hour)
		return 0, nil
	case ModeGarbage:
		stream := okStream(s)
		emit("not json at all")
		emit(stream[0])
		emit(`{"type":"assistant","message":`) // cut short
		emit(`["an","array"]`)
		emit(stream[1])
		emit(stream[2])
		// A last line without a newline must still be passed through.
		stdout.WriteString(`{"type":"unknown_future_message"}`)
		return 0, persist()
	default:
		return UsageExitCode, fmt.Errorf("unknown %s %q", ModeEnv, mode)
	}
}

// permissionModes are --permission-mode's documented choices.
var permissionModes = []string{"default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions"}

// checkArgs insists on what the claude-code adapter must pass and returns
// what was asked. Unknown arguments (AGORA_CLAUDE_ARGS) are accepted.
func checkArgs(args []string) (invocation, error) {
	inv := invocation{persist: true}
	var printMode, verbose bool
	var format string
	value := func(i *int) (string, error) {
		if *i+1 >= len(args) {
			return "", fmt.Errorf("%s needs a value", args[*i])
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		var err error
		switch args[i] {
		case "--print", "-p":
			printMode = true
		case "--verbose":
			verbose = true
		case "--output-format":
			format, err = value(&i)
		case "--permission-mode":
			inv.permission, err = value(&i)
		case "--model":
			inv.model, err = value(&i)
		case "--resume", "-r":
			inv.resume, err = value(&i)
		case "--no-session-persistence":
			inv.persist = false
		case "--fork-session":
			inv.fork = true
		}
		if err != nil {
			return inv, err
		}
	}
	switch {
	case !printMode:
		return inv, errors.New("--print is required (the fake only runs non-interactively)")
	case format != "stream-json":
		return inv, fmt.Errorf("--output-format is %q, want stream-json", format)
	case !verbose:
		return inv, errors.New("--output-format=stream-json requires --verbose with --print")
	case inv.permission == "":
		return inv, errors.New("--permission-mode is required")
	case !slices.Contains(permissionModes, inv.permission):
		return inv, fmt.Errorf("--permission-mode %q: want one of %s", inv.permission, strings.Join(permissionModes, ", "))
	case inv.resume != "" && (strings.ContainsAny(inv.resume, `/\`) || inv.resume == "." || inv.resume == ".."):
		return inv, fmt.Errorf("--resume %q is not a session id", inv.resume)
	}
	return inv, nil
}

// configDir is $CLAUDE_CONFIG_DIR, else ~/.claude.
func configDir() (string, error) {
	if d := os.Getenv(EnvConfigDir); d != "" {
		return d, nil
	}
	home := os.Getenv("HOME")
	if home == "" {
		return "", errors.New("neither CLAUDE_CONFIG_DIR nor HOME is set: no config dir")
	}
	return filepath.Join(home, ".claude"), nil
}

// statePath is where the app state (.claude.json) goes.
func statePath(cfgDir string) string {
	if os.Getenv(EnvConfigDir) != "" {
		return filepath.Join(cfgDir, ".claude.json")
	}
	return filepath.Join(os.Getenv("HOME"), ".claude.json")
}

// transcriptLine is one line of a session transcript.
type transcriptLine struct {
	Type       string  `json:"type"`
	UUID       string  `json:"uuid"`
	ParentUUID *string `json:"parentUuid"`
	SessionID  string  `json:"sessionId"`
	Cwd        string  `json:"cwd"`
	Timestamp  string  `json:"timestamp"`
	Message    message `json:"message"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Text is a user message's text (a string content) or the first text
// block's.
func (m message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type, Text string
	}
	_ = json.Unmarshal(m.Content, &blocks)
	for _, b := range blocks {
		if b.Type == "text" {
			return b.Text
		}
	}
	return ""
}

// readSession reads session id's transcript for cwd, and whether its own
// directory is there. A missing transcript is fs.ErrNotExist.
func readSession(cfgDir, cwd, id string) ([]transcriptLine, bool, error) {
	path := TranscriptPath(cfgDir, cwd, id)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	var lines []transcriptLine
	for line := range bytes.Lines(data) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l transcriptLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, false, fmt.Errorf("session %s: %w", path, err)
		}
		if l.SessionID != id {
			return nil, false, fmt.Errorf("session %s: a line of session %q", path, l.SessionID)
		}
		lines = append(lines, l)
	}
	fi, err := os.Stat(strings.TrimSuffix(path, ".jsonl"))
	return lines, err == nil && fi.IsDir(), nil
}

// writeSession writes the session's transcript — history, then this run's
// prompt and answer — its own directory, and the app state.
func writeSession(cfgDir, cwd, id string, history []transcriptLine, prompt string) error {
	path := TranscriptPath(cfgDir, cwd, id)
	if err := os.MkdirAll(filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents"), 0o700); err != nil {
		return fmt.Errorf("write session: %w", err)
	}
	var parent *string
	if n := len(history); n > 0 {
		parent = &history[n-1].UUID
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	user, _ := json.Marshal(prompt)
	reply, _ := json.Marshal([]map[string]string{{"type": "text", "text": "Done: the change is in place."}})
	u := transcriptLine{Type: "user", UUID: newSessionID(), ParentUUID: parent, SessionID: id, Cwd: cwd, Timestamp: now,
		Message: message{Role: "user", Content: user}}
	a := transcriptLine{Type: "assistant", UUID: newSessionID(), ParentUUID: &u.UUID, SessionID: id, Cwd: cwd, Timestamp: now,
		Message: message{Role: "assistant", Content: reply}}
	var b bytes.Buffer
	for _, l := range append(history, u, a) {
		line, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("write session: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write session: %w", err)
	}
	sub := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "agent-fake.jsonl")
	if err := os.WriteFile(sub, []byte(`{"type":"user","sessionId":"`+id+`","isSidechain":true}`+"\n"), 0o600); err != nil {
		return fmt.Errorf("write session: %w", err)
	}
	state, _ := json.Marshal(map[string]any{"userID": "fake-user", "projects": map[string]any{cwd: map[string]any{"lastSessionId": id}}})
	if err := os.WriteFile(statePath(cfgDir), state, 0o600); err != nil {
		return fmt.Errorf("write app state: %w", err)
	}
	return nil
}

func writeRecord(rec Record) error {
	path := os.Getenv(RecordEnv)
	if path == "" {
		return nil
	}
	rec.Env = map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "AGORA_") || k == EnvConfigDir || k == "HOME") {
			rec.Env[k] = v
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if path == RecordToStderr {
		fmt.Fprintf(os.Stderr, "%s%s\n", RecordPrefix, data)
		return nil
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// writeSentinel writes AskSentinel where $AGORA_NEEDS_INPUT_FILE says, as the
// agora-needs-input skill teaches: to a temporary file, then renamed.
func writeSentinel() error {
	path := os.Getenv(schemas.EnvNeedsInputFile)
	if path == "" {
		return errors.New("write sentinel: " + schemas.EnvNeedsInputFile + " is not set")
	}
	data, err := json.Marshal(AskSentinel())
	if err != nil {
		return fmt.Errorf("write sentinel: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write sentinel: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write sentinel: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write sentinel: %w", err)
	}
	return nil
}

// newSessionID is a random (version 4) UUID, as Claude Code's session ids are.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func modelOr(model string) string {
	if model == "" {
		return DefaultModel
	}
	return model
}

func initMessage(s Stream) string {
	return `{"type":"system","subtype":"init","cwd":` + quote(s.Cwd) + `,"session_id":"` + s.SessionID +
		`","tools":["Bash","Edit","Read","Write"],"mcp_servers":[],"model":` + quote(modelOr(s.Model)) +
		`,"permissionMode":` + quote(s.PermissionMode) + `,"apiKeySource":"none"}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// okStream is the three messages of a successful run, shaped like Claude
// Code's own.
func okStream(s Stream) []string {
	model := modelOr(s.Model)
	u := ReportedUsage(model, s.Resumed)
	return []string{
		initMessage(s),
		`{"type":"assistant","message":{"id":"msg_fake_01","type":"message","role":"assistant","model":` + quote(model) +
			`,"content":[{"type":"text","text":"Done: the change is in place."}],"stop_reason":"end_turn","usage":{"input_tokens":600,"output_tokens":200}},"parent_tool_use_id":null,"session_id":"` + s.SessionID + `"}`,
		fmt.Sprintf(`{"type":"result","subtype":"success","is_error":false,"duration_ms":2345,"duration_api_ms":2100,"num_turns":%d,"result":%s,"session_id":"%s","total_cost_usd":%g,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d}}`,
			u.Turns, quote(ResultText), s.SessionID, u.CostUSD, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens),
	}
}
