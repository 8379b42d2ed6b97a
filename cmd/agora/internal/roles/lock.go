package roles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDataDir takes an exclusive lock on dir/lock, so two stacks never
// share a JetStream store or a runner's workspaces (nats-server itself does
// not lock its store). The lock is the kernel's (flock): it goes away with
// the process, however that ends. The file holds the holder's pid, for the
// error message of the next one.
func lockDataDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another agora%s; stop it or pass another --data-dir", dir, holder)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // only for the message above
	}
	return f, nil
}

// unlockDataDir releases the lock taken by lockDataDir.
func unlockDataDir(f *os.File) error {
	if err := f.Close(); err != nil { // closing the descriptor releases the flock
		return fmt.Errorf("unlock data dir: %w", err)
	}
	return nil
}
