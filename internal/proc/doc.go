// Package proc supervises one child process and its process group: start it,
// wait for it, stop it on cancellation (SIGTERM to the whole group, SIGKILL
// after a grace period) and, once the leader has exited, kill whatever is
// left of its group. It reports how the process ended as one exit.Result.
//
// A finished dispatch must never leave anything running behind it: a daemon
// started by a sub-agent (a dev server, a file watcher, a stuck `git` child)
// would keep holding the workspace, its output pipes and the container's
// resources after the worker has reported the outcome. So the child always
// runs in a process group of its own and the group is killed when the
// leader exits, normally or not. A process that deliberately leaves the
// group (setsid, setpgid) escapes this; WaitDelay still bounds how long such
// a process can keep Run waiting on the output pipes, and the container
// boundary does the rest.
//
// The implementation needs Linux: it waits for the leader with
// waitid(WNOWAIT), which leaves the exited leader as a zombie so its pid —
// the group id — cannot be reused before the group is killed. On other
// systems Run returns an error.
//
// What it may import: docs/architecture.md.
package proc
