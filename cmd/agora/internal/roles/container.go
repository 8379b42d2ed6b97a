package roles

import (
	"fmt"
	"os"
)

// inContainer says whether this process runs in a Docker container (the
// engine puts /.dockerenv in every container's root).
func inContainer() bool {
	_, err := os.Stat("/.dockerenv")
	return err == nil
}

// hostFix adds to a data dir problem found at start, when agora runs in a
// container, that the fix is made on the host — where Docker created a
// bind-mounted dir that did not exist as root, and where it is mounted
// from — with the serve image's user.
func hostFix(err error, dir string, container bool) error {
	if err == nil || !container {
		return err
	}
	return fmt.Errorf("%w; agora runs in a container: make the dir on the host before docker run, owned by the container's user (uid %d), and mount it at the same path: sudo install -d -m 0700 -o %d -g %d %s; docker run -v %s:%s …",
		err, os.Geteuid(), os.Geteuid(), os.Getegid(), dir, dir, dir)
}
