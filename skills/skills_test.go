package skills_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/skills"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Claude Code reads a skill's YAML front matter: name must match the
// directory, and description is what makes it pick the skill up.
func TestNeedsInputFrontMatter(t *testing.T) {
	t.Parallel()
	fm := frontMatter(t, string(skills.NeedsInputSkill()))
	if fm["name"] != skills.NeedsInputName {
		t.Errorf("front matter name = %q, want %q", fm["name"], skills.NeedsInputName)
	}
	desc := fm["description"]
	// Claude Code caps descriptions at 1024 characters.
	if desc == "" || len(desc) > 1024 {
		t.Errorf("front matter description has %d characters, want 1 to 1024: %q", len(desc), desc)
	}
	if !strings.Contains(desc, ".agora/needs_input.json") {
		t.Errorf("front matter description = %q, want it to name the sentinel file", desc)
	}
}

// The examples are what agents copy: the sentinel example must be a valid
// sentinel using every field, and the resume.json example must have exactly
// the fields of schemas.Resume plus the round.
func TestNeedsInputExamplesMatchTheContract(t *testing.T) {
	t.Parallel()
	blocks := jsonBlocks(string(skills.NeedsInputSkill()))
	if len(blocks) != 2 {
		t.Fatalf("SKILL.md has %d json blocks, want 2 (the sentinel example, then the resume.json example); update this test with the document", len(blocks))
	}

	sentinel, err := schemas.ParseNeedsInput([]byte(blocks[0]))
	if err != nil {
		t.Fatalf("ParseNeedsInput(sentinel example) error = %v\n%s", err, blocks[0])
	}
	if len(sentinel.Options) == 0 || sentinel.Context == "" || sentinel.Default == nil || len(sentinel.PartialState) == 0 {
		t.Errorf("sentinel example = %+v, want it to show every field", sentinel)
	}
	if sentinel.Default != nil && !slices.Contains(sentinel.Options, *sentinel.Default) {
		t.Errorf("sentinel example default %q is not one of its options %q", *sentinel.Default, sentinel.Options)
	}

	dec := json.NewDecoder(strings.NewReader(blocks[1]))
	dec.DisallowUnknownFields()
	// The worker writes the spec's resume plus the round number.
	var resume struct {
		Round int `json:"round"`
		schemas.Resume
	}
	if err := dec.Decode(&resume); err != nil {
		t.Fatalf("decode resume.json example as schemas.Resume plus round: %v\n%s", err, blocks[1])
	}
	if resume.Round < 2 {
		t.Errorf("resume.json example round = %d, want a resumed round (2 or later)", resume.Round)
	}
	if resume.Question != sentinel.Question || len(resume.History) == 0 || resume.Answer == "" {
		t.Errorf("resume.json example = %+v, want the example's question, an answer and a history", resume)
	}
	if !bytes.Equal(compact(t, resume.PartialState), compact(t, sentinel.PartialState)) {
		t.Errorf("resume.json example partial_state = %s, want the sentinel example's %s", resume.PartialState, sentinel.PartialState)
	}
}

// The paths, variables and limits the SKILL teaches are the contract's.
func TestNeedsInputNamesTheContract(t *testing.T) {
	t.Parallel()
	doc := string(skills.NeedsInputSkill())
	for _, want := range []string{
		schemas.SentinelPath,
		schemas.ResumePath,
		schemas.InputPath,
		"$AGORA_NEEDS_INPUT_FILE",
		"$AGORA_ANSWER",
		"$AGORA_RESUME_FILE",
		"$AGORA_ROUND",
		"1,048,576 bytes",
		"agora-worker ask",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("SKILL.md does not mention %q", want)
		}
	}
	if schemas.SentinelMaxBytes != 1_048_576 {
		t.Errorf("schemas.SentinelMaxBytes = %d; SKILL.md says 1 MiB (1,048,576 bytes)", schemas.SentinelMaxBytes)
	}
}

func TestNeedsInputSkillReturnsACopy(t *testing.T) {
	t.Parallel()
	first := skills.NeedsInputSkill()
	first[0] = 'X'
	if got := skills.NeedsInputSkill(); got[0] == 'X' {
		t.Error("NeedsInputSkill() shares its bytes: changing one result changed the next")
	}
}

// frontMatter parses the "key: value" lines between the leading --- lines.
func frontMatter(t *testing.T, doc string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(doc, "---\n")
	if !ok {
		t.Fatalf("SKILL.md does not start with a front matter line: %q", doc[:min(40, len(doc))])
	}
	block, _, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		t.Fatal("SKILL.md front matter is not closed by ---")
	}
	fm := map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("front matter line %q is not key: value", line)
		}
		value = strings.TrimSpace(value)
		// An unquoted YAML value cannot hold ": " or start with a quote or
		// an indicator; keep it plain rather than teach this parser quoting.
		if strings.Contains(value, ": ") || strings.ContainsAny(value[:min(1, len(value))], "\"'&*!|>%@`[{") {
			t.Errorf("front matter %s = %q is not a plain YAML scalar", key, value)
		}
		fm[strings.TrimSpace(key)] = value
	}
	return fm
}

var jsonBlock = regexp.MustCompile("(?ms)^```json\n(.*?)^```$")

func jsonBlocks(doc string) []string {
	var out []string
	for _, m := range jsonBlock.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
