// Package skills ships the agora-needs-input SKILL.md, embedded in the binary.
// The worker overlays it into the workspace (at the runtime adapter's
// SkillPath) so the sub-agent learns how to pause and ask a question through
// the needs_input sentinel instead of guessing. A test checks that the
// examples in it still satisfy the sentinel schema, so the document cannot
// drift from the contract.
//
// What it may import: docs/architecture.md.
package skills

import (
	"bytes"
	_ "embed"
)

// NeedsInputName is the skill's name, as in its front matter and its
// directory.
const NeedsInputName = "agora-needs-input"

//go:embed agora-needs-input/SKILL.md
var needsInput []byte

// NeedsInputSkill returns the SKILL.md that teaches the needs_input
// sentinel. Each call returns a fresh copy, so callers may change it.
func NeedsInputSkill() []byte { return bytes.Clone(needsInput) }
