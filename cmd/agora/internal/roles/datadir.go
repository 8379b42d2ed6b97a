package roles

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"syscall"

	"github.com/agoradev/agora/internal/fsutil"
)

// privateDataDir makes dir (creating it) private to this user: 0700, so no
// other local user reaches anything under it — tasks' specs and inputs,
// stored outputs, workspace snapshots, credentials — whatever the modes
// below (some files there must stay readable by a container's user, which
// reaches them through its mounts, not through dir). A dir that another
// user owns is an error naming what to do; a looser mode of our own dir is
// repaired, and said.
func privateDataDir(dir string, log *slog.Logger) error {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("data dir %s: %w (pass a --data-dir this user can create)", dir, err)
		}
		info, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("data dir %s is a %s, not a directory: pass another --data-dir", dir, fsutil.FileKind(info.Mode()))
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("data dir %s is owned by uid %d, not by this user (uid %d): chown -R %d %s, or pass another --data-dir",
			dir, st.Uid, os.Geteuid(), os.Geteuid(), dir)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("data dir %s is %#o, readable by other users, and cannot be made 0700: %w", dir, perm, err)
		}
		log.Warn("data dir was readable by other users; made it private (0700)", "dir", dir, "was", fmt.Sprintf("%#o", perm))
	}
	// The directory must be writable by us, not just ours: a read-only
	// mount fails here with a clear line rather than at the first dispatch.
	probe, err := os.CreateTemp(dir, ".agora-write-check-*")
	if err != nil {
		return fmt.Errorf("data dir %s is not writable: %w (mount it read-write, or pass another --data-dir)", dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}
