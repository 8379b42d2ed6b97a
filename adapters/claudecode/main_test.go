package claudecode_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/adapters/claudecode/fakeclaude"
)

func TestMain(m *testing.M) {
	// Started through the "claude" symlink on a test's runtime PATH: be the
	// stand-in Claude Code.
	if filepath.Base(os.Args[0]) == fakeclaude.Executable {
		os.Exit(fakeclaude.Main())
	}
	goleak.VerifyTestMain(m)
}
