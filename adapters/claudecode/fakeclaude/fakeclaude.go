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
// Like `claude --print --output-format stream-json --verbose`, it reads the
// prompt from stdin and writes one JSON object per line: a system/init
// message, an assistant message and a result message with num_turns,
// total_cost_usd and usage. It insists on the arguments the claude-code
// adapter must pass (--print, --output-format stream-json, --verbose,
// --permission-mode) and fails like a usage error otherwise. What it does
// is chosen by $FAKE_CLAUDE_MODE (the Mode constants); with
// $FAKE_CLAUDE_RECORD set it also writes what it received there as a Record.
//
// Under -race a child binary sleeps a second before exiting 0; put
// GORACE=atexit_sleep_ms=0 in its environment to keep tests fast.
package fakeclaude

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agoradev/agora/schemas"
)

const (
	// Executable is the name the fake must be started under.
	Executable = "claude"
	// ModeEnv selects the behaviour; empty means ModeOK.
	ModeEnv = "FAKE_CLAUDE_MODE"
	// RecordEnv, when set, names a file the fake writes its Record to
	// before doing anything else.
	RecordEnv = "FAKE_CLAUDE_RECORD"
	// DefaultModel is reported when no --model was given.
	DefaultModel = "claude-fake-1"
	// SessionID is the session every message carries.
	SessionID = "fake-session-0001"
	// FailExitCode is the exit code of ModeFail.
	FailExitCode = 3
	// UsageExitCode is the exit code for bad arguments or an empty prompt.
	UsageExitCode = 2
	// ResultText is the final result text of ModeOK, ModeAsk and
	// ModeGarbage: what their result message carries, and so a round's
	// result when the sub-agent wrote no .agora/result.json.
	ResultText = "Done: the change is in place.\nTwo files changed: a.go, \"b.go\"."
)

// Modes of the fake.
const (
	// ModeOK streams init, assistant and result messages and exits 0.
	ModeOK = "ok"
	// ModeAsk writes AskSentinel to $AGORA_NEEDS_INPUT_FILE (temp file, then
	// rename), streams as ModeOK does, and exits 0.
	ModeAsk = "ask"
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
	// Env holds the AGORA_* variables it saw.
	Env map[string]string `json:"env"`
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
// started with --model model ("" for none).
func ReportedUsage(model string) schemas.Usage {
	return schemas.Usage{Model: modelOr(model), Turns: 2, CostUSD: 0.0123, InputTokens: 1200, OutputTokens: 345}
}

// Transcript is exactly what ModeOK and ModeAsk write to stdout when started
// with --model model ("" for none).
func Transcript(model string) string {
	var b strings.Builder
	for _, m := range okStream(modelOr(model)) {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	return b.String()
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

func run(args []string, stdout *bufio.Writer) (int, error) {
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		return 1, fmt.Errorf("read prompt: %w", err)
	}
	if path := os.Getenv(RecordEnv); path != "" {
		if err := record(path, args, string(prompt)); err != nil {
			return 1, err
		}
	}
	model, err := checkArgs(args)
	if err != nil {
		return UsageExitCode, err
	}
	if strings.TrimSpace(string(prompt)) == "" {
		return UsageExitCode, errors.New("input must be provided through stdin when using --print")
	}

	emit := func(line string) {
		stdout.WriteString(line + "\n")
		// Flush per line: a stream is read as it arrives.
		stdout.Flush()
	}
	switch mode := os.Getenv(ModeEnv); mode {
	case "", ModeOK:
		for _, m := range okStream(model) {
			emit(m)
		}
		return 0, nil
	case ModeAsk:
		if err := writeSentinel(); err != nil {
			return 1, err
		}
		for _, m := range okStream(model) {
			emit(m)
		}
		return 0, nil
	case ModeFail:
		emit(initMessage(model))
		emit(`{"type":"result","subtype":"error_during_execution","is_error":true,"duration_ms":120,"duration_api_ms":80,"num_turns":1,"session_id":"` + SessionID + `","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":0}}`)
		fmt.Fprintln(os.Stderr, "fake claude: failing on purpose")
		return FailExitCode, nil
	case ModeHang:
		signal.Ignore(syscall.SIGTERM)
		emit(initMessage(model))
		time.Sleep(time.Hour)
		return 0, nil
	case ModeGarbage:
		stream := okStream(model)
		emit("not json at all")
		emit(stream[0])
		emit(`{"type":"assistant","message":`) // cut short
		emit(`["an","array"]`)
		emit(stream[1])
		emit(stream[2])
		// A last line without a newline must still be passed through.
		stdout.WriteString(`{"type":"unknown_future_message"}`)
		return 0, nil
	default:
		return UsageExitCode, fmt.Errorf("unknown %s %q", ModeEnv, mode)
	}
}

// checkArgs insists on what the claude-code adapter must pass and returns
// the model. Unknown arguments (AGORA_CLAUDE_ARGS) are accepted.
func checkArgs(args []string) (string, error) {
	var printMode, verbose bool
	var format, permission, model string
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
			permission, err = value(&i)
		case "--model":
			model, err = value(&i)
		}
		if err != nil {
			return "", err
		}
	}
	switch {
	case !printMode:
		return "", errors.New("--print is required (the fake only runs non-interactively)")
	case format != "stream-json":
		return "", fmt.Errorf("--output-format is %q, want stream-json", format)
	case !verbose:
		return "", errors.New("--output-format=stream-json requires --verbose with --print")
	case permission == "":
		return "", errors.New("--permission-mode is required")
	}
	return modelOr(model), nil
}

func record(path string, args []string, prompt string) error {
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "AGORA_") {
			env[k] = v
		}
	}
	data, err := json.Marshal(Record{Args: args, Prompt: prompt, Dir: dir, Env: env})
	if err != nil {
		return fmt.Errorf("record: %w", err)
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

func modelOr(model string) string {
	if model == "" {
		return DefaultModel
	}
	return model
}

func initMessage(model string) string {
	return `{"type":"system","subtype":"init","cwd":"/workspace","session_id":"` + SessionID +
		`","tools":["Bash","Edit","Read","Write"],"mcp_servers":[],"model":"` + model +
		`","permissionMode":"bypassPermissions","apiKeySource":"none"}`
}

// okStream is the three messages of a successful run, shaped like Claude
// Code's own.
func okStream(model string) []string {
	u := ReportedUsage(model)
	resultJSON, _ := json.Marshal(ResultText)
	return []string{
		initMessage(model),
		`{"type":"assistant","message":{"id":"msg_fake_01","type":"message","role":"assistant","model":"` + model +
			`","content":[{"type":"text","text":"Done: the change is in place."}],"stop_reason":"end_turn","usage":{"input_tokens":600,"output_tokens":200}},"parent_tool_use_id":null,"session_id":"` + SessionID + `"}`,
		fmt.Sprintf(`{"type":"result","subtype":"success","is_error":false,"duration_ms":2345,"duration_api_ms":2100,"num_turns":%d,"result":%s,"session_id":"%s","total_cost_usd":%g,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}}`,
			u.Turns, resultJSON, SessionID, u.CostUSD, u.InputTokens, u.OutputTokens),
	}
}
