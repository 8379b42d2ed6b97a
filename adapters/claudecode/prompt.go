package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/schemas"
)

// RenderPrompt is the prompt Claude Code gets on stdin for spec: the
// sub-agent's own prompt, then what agora adds — the input, on a resumed
// round the question, the answer, the saved partial state and the history,
// and a reminder of how to ask instead of guessing. It is pure: the same
// spec always renders the same text (golden-tested).
func RenderPrompt(spec *schemas.DispatchSpec) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(spec.Subagent.Prompt))
	b.WriteString("\n\n---\n\n")

	round := spec.EffectiveRound()
	fmt.Fprintf(&b, "# agora dispatch (round %d)\n\n", round)
	b.WriteString("You run non-interactively: nobody reads this conversation while you work. " +
		"Your working directory is the workspace; leave your results there.\n\n")

	b.WriteString("## Input\n\n")
	if isNull(spec.Input) {
		b.WriteString("This dispatch has no input.\n\n")
	} else {
		fmt.Fprintf(&b, "The dispatch input, also in $%s (%s):\n\n", adapters.EnvInputFile, schemas.InputPath)
		writeJSONBlock(&b, spec.Input)
	}

	if r := spec.Resume; r != nil {
		writeResume(&b, r, round)
	}

	b.WriteString("## If you need a decision\n\n")
	fmt.Fprintf(&b, "Do not guess when you cannot go on without a decision that only the people behind this task can make: "+
		"an ambiguous requirement, an irreversible or destructive step, two equally valid designs, missing credentials or access. "+
		"Instead write the question as JSON to %s in the workspace (the path is also in $%s), "+
		"put your analysis so far in \"partial_state\" so the next round does not redo it, "+
		"and then stop: end your turn without doing any more work. "+
		"You will be started again with the answer. The agora-needs-input skill has the details.\n\n",
		schemas.SentinelPath, adapters.EnvNeedsInputFile)
	writeFence(&b, "json", `{"question": "<one clear question>", "options": ["<choice 1>", "<choice 2>"], "context": "<what the choice depends on>", "partial_state": {"findings": "<your analysis so far>"}}`)
	b.WriteString("\nWhen you need nothing, just finish the task; do not write that file.\n")
	return b.String()
}

func writeResume(b *strings.Builder, r *schemas.Resume, round int) {
	b.WriteString("## Resumed round\n\n")
	fmt.Fprintf(b, "This is round %d. In the round before, you stopped to ask a question and it has been answered. "+
		"Continue the work from where you left it, using the answer and the partial state you saved; "+
		"do not redo work that the partial state already records. "+
		"The same information is in $%s (%s).\n\n", round, adapters.EnvResumeFile, schemas.ResumePath)

	writeField(b, "Question", r.Question)
	if len(r.Options) > 0 {
		b.WriteString("**Options:**\n\n")
		for _, o := range r.Options {
			fmt.Fprintf(b, "- %s\n", o)
		}
		b.WriteString("\n")
	}
	if r.Context != "" {
		writeField(b, "Context", r.Context)
	}
	writeField(b, "Answer", r.Answer)

	switch {
	case !isNull(r.PartialState):
		b.WriteString("### Your partial state\n\n")
		writeJSONBlock(b, r.PartialState)
	case r.PartialStateRef != nil:
		b.WriteString("### Your partial state\n\n")
		fmt.Fprintf(b, "It is too large to repeat here (%d bytes). Read it from \"partial_state\" in $%s (%s).\n\n",
			r.PartialStateRef.Size, adapters.EnvResumeFile, schemas.ResumePath)
	default:
		b.WriteString("You saved no partial state.\n\n")
	}

	var earlier []schemas.HistoryEntry
	for _, h := range r.History {
		// The history may already hold the question just answered.
		if h.Question == r.Question && h.Answer == r.Answer {
			continue
		}
		earlier = append(earlier, h)
	}
	if len(earlier) > 0 {
		b.WriteString("### Earlier questions and answers\n\n")
		for _, h := range earlier {
			fmt.Fprintf(b, "- Round %d: %s\n  Answer: %s\n", h.Round, oneLine(h.Question), oneLine(h.Answer))
		}
		b.WriteString("\n")
	}
}

// writeField writes a labelled value; a multi-line value starts on its own line.
func writeField(b *strings.Builder, label, value string) {
	value = strings.TrimSpace(value)
	if strings.Contains(value, "\n") {
		fmt.Fprintf(b, "**%s:**\n\n%s\n\n", label, value)
		return
	}
	fmt.Fprintf(b, "**%s:** %s\n\n", label, value)
}

// oneLine folds a multi-line value onto one line for a list item.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeJSONBlock writes raw indented in a fenced block. raw comes from a
// validated spec, so it is JSON; should indenting fail anyway, it is shown
// as given rather than dropped.
func writeJSONBlock(b *strings.Builder, raw json.RawMessage) {
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		out.Reset()
		out.Write(raw)
	}
	writeFence(b, "json", out.String())
	b.WriteString("\n")
}

// writeFence fences body with more backticks than any run inside it, so
// input that itself holds Markdown cannot close the block early.
func writeFence(b *strings.Builder, info, body string) {
	fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	fmt.Fprintf(b, "%s%s\n%s\n%s\n", fence, info, strings.TrimRight(body, "\n"), fence)
}

func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := range len(s) {
		if s[i] != c {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// RenderResumeMessage is the message Claude Code gets on stdin when a
// round resumes the previous round's session (claude --resume): the
// conversation already holds the sub-agent's prompt, the input and
// everything it did, so this is only the next turn — the answer to its
// question — and a reminder that the sentinel it wrote is gone. It is pure,
// like RenderPrompt. spec.Resume must be set.
func RenderResumeMessage(spec *schemas.DispatchSpec) string {
	r := spec.Resume
	var b strings.Builder
	fmt.Fprintf(&b, "# agora: your question was answered (round %d)\n\n", spec.EffectiveRound())
	b.WriteString("You stopped to ask a question and it has been answered. " +
		"This is the same conversation: the workspace is as you left it, " +
		"and nobody reads this conversation while you work.\n\n")
	writeField(&b, "Your question", r.Question)
	writeField(&b, "Answer", r.Answer)
	fmt.Fprintf(&b, "Continue the task from where you stopped, with this answer. "+
		"The question, the answer, your partial state and the earlier answers are also in $%s (%s).\n\n",
		adapters.EnvResumeFile, schemas.ResumePath)
	fmt.Fprintf(&b, "The %s you wrote has been removed. If you need another decision, write a new one "+
		"(the path is in $%s) and stop, as before; when you need nothing, finish the task.\n",
		schemas.SentinelPath, adapters.EnvNeedsInputFile)
	return b.String()
}
