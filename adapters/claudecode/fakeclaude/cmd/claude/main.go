// Command claude is the stand-in Claude Code (package fakeclaude) as a
// program of its own, for tests that put it in a container image. It is
// never shipped.
package main

import (
	"os"

	"github.com/agoradev/agora/adapters/claudecode/fakeclaude"
)

func main() { os.Exit(fakeclaude.Main()) }
