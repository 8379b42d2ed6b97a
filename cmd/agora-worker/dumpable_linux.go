package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// makeUndumpable clears the process's dumpable flag: /proc/<pid> becomes
// root's, so processes of the same user (the sub-agent) cannot read its
// environ or memory, open its file descriptors, or ptrace it. Children
// exec'd later are dumpable again; only the worker is shielded.
func makeUndumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
