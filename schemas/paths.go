package schemas

import (
	"fmt"
	"path"
	"regexp"
)

// Paths inside the workspace that belong to the contract, relative to it.
const (
	// AgoraDir holds the files agora and the sub-agent exchange.
	AgoraDir = ".agora"
	// SentinelPath is the needs_input sentinel a sub-agent writes to pause.
	SentinelPath = ".agora/needs_input.json"
	// InputPath holds the dispatch's input object.
	InputPath = ".agora/input.json"
	// ResumePath holds question, answer, partial_state and history on a resumed round.
	ResumePath = ".agora/resume.json"
	// ResultPath is the result a finished round hands back (any JSON value).
	ResultPath = ".agora/result.json"
	// ArtifactsDir holds files a round hands back without naming them in
	// its sub-agent's outputs.
	ArtifactsDir = ".agora/artifacts"
	// SetupScript, when present in the workspace, runs before the runtime.
	SetupScript = "agora-setup.sh"
)

// SentinelMaxBytes caps the whole sentinel file.
const SentinelMaxBytes = 1 << 20

// ResultMaxBytes caps the whole result file (and Claude Code's final
// result text, as a JSON string), as SentinelMaxBytes caps the sentinel
// that carries a partial_state.
const ResultMaxBytes = 1 << 20

// InlineResultMax is the largest result (encoded) a dispatch.finished
// event carries inline; a larger one is stored and referenced by
// result_ref.
const InlineResultMax = 16 << 10

// Default per-round artifact caps: what a runner allows unless its
// operator sets --max-artifacts and --max-artifacts-mb.
const (
	DefaultMaxArtifacts     = 100
	DefaultMaxArtifactBytes = 100 << 20
)

// ArtifactNamePattern is what an artifact's name (and an outputs glob)
// must match: a relative path with '/' separators, no leading '/', no
// empty, '.' or '..' segment, no backslash or control character. It is the
// event schema's $defs/artifact_name pattern (TestArtifactNamePattern).
const ArtifactNamePattern = `^([^/\\\x00-\x1f.][^/\\\x00-\x1f]*|\.[^/\\\x00-\x1f.][^/\\\x00-\x1f]*|\.\.[^/\\\x00-\x1f]+)(/([^/\\\x00-\x1f.][^/\\\x00-\x1f]*|\.[^/\\\x00-\x1f.][^/\\\x00-\x1f]*|\.\.[^/\\\x00-\x1f]+))*$`

var artifactName = regexp.MustCompile(ArtifactNamePattern)

// ValidArtifactName reports whether name is a relative slash path that
// stays where it is put: what an artifact's name (or an outputs glob) must
// be.
func ValidArtifactName(name string) bool {
	return len(name) <= 1024 && artifactName.MatchString(name)
}

// CheckOutputs says what is wrong with a sub-agent's outputs globs: each
// must be a name ValidArtifactName accepts and a pattern path.Match can
// use ("[a-" is not).
func CheckOutputs(globs []string) error {
	for _, g := range globs {
		if !ValidArtifactName(g) {
			return fmt.Errorf("outputs: glob %q is not a relative path inside the workspace (no leading '/', no '.' or '..' segment, no backslash)", g)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("outputs: glob %q: %v", g, err)
		}
	}
	return nil
}
