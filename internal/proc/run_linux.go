package proc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/agoradev/agora/internal/exit"
)

// Run starts the process described by cfg in a process group of its own and
// waits for it. When ctx is done the whole group gets SIGTERM, then SIGKILL
// after cfg.Grace. When the leader has exited, normally or not, whatever is
// left of its group is killed (see the package comment for why).
//
// The error is non-nil only when the process could not be started; how a
// started process ended — including being stopped through ctx — is in the
// exit.Result.
func Run(ctx context.Context, cfg Config) (exit.Result, error) {
	cfg = cfg.WithDefaults()
	if cfg.Path == "" {
		err := errors.New("start process: empty path")
		return exit.Result{Err: err}, err
	}
	log := cfg.Logger.With("path", cfg.Path)

	cmd := exec.CommandContext(ctx, cfg.Path, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env
	cmd.Stdin = cfg.Stdin
	cmd.Stdout = cfg.Stdout
	cmd.Stderr = cfg.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g := &group{log: log, grace: cfg.Grace, leaderDone: make(chan struct{})}
	// cmd.Process is set before exec starts the goroutine that calls Cancel,
	// so reading it here is safe.
	cmd.Cancel = func() error { return g.terminate(cmd.Process.Pid) }
	// exec starts the WaitDelay timer only after Cancel returns, and Cancel
	// returns once the leader is gone (or SIGKILLed), so WaitDelay really is
	// the time allowed for the pipes after the end, not a cap on the grace.
	cmd.WaitDelay = cfg.WaitDelay

	if err := cmd.Start(); err != nil {
		err = fmt.Errorf("start %s: %w", cfg.Path, err)
		return exit.Result{Err: err}, err
	}
	pid := cmd.Process.Pid
	// g keeps the logger without the pid: terminate may already be running
	// and adds the pid itself.
	log = log.With("pid", pid)
	log.Debug("process started")

	// Wait for the leader without reaping it: as a zombie it keeps its pid,
	// which is also the group id, so killing -pid below cannot hit a group
	// that reused the number.
	if err := waitExitedNoReap(pid); err != nil {
		// Should not happen (only if someone else reaped our child). Without
		// the guarantee above, do not signal the group now. Releasing
		// leaderDone lets a Cancel send SIGTERM without waiting out the
		// grace; exec itself SIGKILLs the leader WaitDelay later.
		log.Warn("wait for process leader without reaping", "err", err)
		close(g.leaderDone)
	} else {
		g.leaderExited(pid)
	}

	waitErr := cmd.Wait()
	res := exitResult(cmd.ProcessState)
	switch {
	case g.wasCancelled():
		res.Err = stoppedErr(ctx)
	case waitErr == nil:
	case errors.Is(waitErr, exec.ErrWaitDelay):
		// Only a process that left the group can still hold the pipes: the
		// group itself was killed above. The leader's own result stands;
		// the output may be cut short.
		log.Warn("output pipes still open after the process exited; closed them", "wait_delay", cfg.WaitDelay)
	default:
		var exitErr *exec.ExitError
		if !errors.As(waitErr, &exitErr) {
			res.Err = fmt.Errorf("process i/o: %w", waitErr)
		}
	}
	log.Debug("process ended", "exit_code", res.ExitCode, "signal", res.Signal)
	return res, nil
}

// stoppedErr says the process was stopped through ctx, wrapping both ctx.Err
// and its cause so callers can tell a timeout from a cancel and see why.
func stoppedErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(err, cause) {
		return fmt.Errorf("process stopped: %w", err)
	}
	return fmt.Errorf("process stopped: %w: %w", err, cause)
}

// group tracks one process group and serialises the signals sent to it, so
// that no signal is sent to the group id once the leader has been reaped.
type group struct {
	log        *slog.Logger
	grace      time.Duration
	leaderDone chan struct{} // closed once the leader has exited

	mu        sync.Mutex
	exited    bool // the leader has exited; the group has been killed
	cancelled bool // terminate sent SIGTERM
}

// terminate is the exec.Cmd Cancel function: SIGTERM to the group, then
// SIGKILL after the grace period unless the leader exits first. It blocks
// until one of those happens (see cmd.WaitDelay in Run).
func (g *group) terminate(pid int) error {
	g.mu.Lock()
	if g.exited {
		g.mu.Unlock()
		return os.ErrProcessDone
	}
	g.cancelled = true
	g.log.Info("stopping process group", "pid", pid, "signal", "SIGTERM", "grace", g.grace)
	err := syscall.Kill(-pid, syscall.SIGTERM)
	g.mu.Unlock()
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	if err != nil {
		return fmt.Errorf("signal process group %d: %w", pid, err)
	}

	timer := time.NewTimer(g.grace)
	defer timer.Stop()
	select {
	case <-g.leaderDone:
		return nil
	case <-timer.C:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.exited {
		return nil
	}
	g.log.Warn("process group outlived its grace period", "pid", pid, "signal", "SIGKILL", "grace", g.grace)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pid, err)
	}
	return nil
}

// leaderExited kills what is left of the group once its leader has exited
// (and is not yet reaped), and releases a terminate waiting for the grace
// period.
func (g *group) leaderExited(pid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.exited = true
	close(g.leaderDone)
	// The zombie leader is still a member, so ESRCH means the kernel found
	// nothing at all: not worth a log line either way.
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		g.log.Warn("kill what is left of the process group", "pid", pid, "err", err)
		return
	}
	g.log.Debug("killed what is left of the process group", "pid", pid)
}

func (g *group) wasCancelled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cancelled
}

// waitExitedNoReap blocks until the process pid has exited, leaving it
// waitable: waitid(P_PID, pid, WEXITED|WNOWAIT). The os package does the same
// internally before it reaps a child.
func waitExitedNoReap(pid int) error {
	const pPID = 1 // P_PID from <sys/wait.h>
	// siginfo_t is 128 bytes on every Linux architecture; only the kernel
	// writes it and nothing here reads it.
	var info [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return fmt.Errorf("waitid %d: %w", pid, errno)
		}
	}
}

// exitResult turns a wait status into the exit conventions of exit.Result.
func exitResult(state *os.ProcessState) exit.Result {
	if state == nil {
		return exit.Result{}
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		sig := ws.Signal()
		return exit.Result{ExitCode: 128 + int(sig), Signal: signalName(sig)}
	}
	return exit.Result{ExitCode: state.ExitCode()}
}

// signalNames are the conventional names of the signals a supervised process
// is likely to die of; signal.String() gives descriptions ("killed"), not
// names.
var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT",
	syscall.SIGALRM: "SIGALRM",
	syscall.SIGBUS:  "SIGBUS",
	syscall.SIGFPE:  "SIGFPE",
	syscall.SIGHUP:  "SIGHUP",
	syscall.SIGILL:  "SIGILL",
	syscall.SIGINT:  "SIGINT",
	syscall.SIGKILL: "SIGKILL",
	syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGSYS:  "SIGSYS",
	syscall.SIGTERM: "SIGTERM",
	syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGUSR1: "SIGUSR1",
	syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}

func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return "SIG" + strconv.Itoa(int(sig))
}
