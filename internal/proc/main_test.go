//go:build linux

package proc_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// childEnv marks a re-executed test binary as a fake child process; its
// first argument says what to do.
const childEnv = "PROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// child is the fake supervised process. Sleeping is its job; the tests
// themselves never sleep.
func child(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fake child: no mode")
		return 2
	}
	switch mode, rest := args[0], args[1:]; mode {
	case "exit":
		code, err := strconv.Atoi(rest[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake child:", err)
			return 2
		}
		return code
	case "print":
		fmt.Fprintln(os.Stdout, "hello stdout")
		fmt.Fprintln(os.Stderr, "hello stderr")
		return 0
	case "stdin":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "fake child:", err)
			return 2
		}
		return 0
	case "cwd":
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake child:", err)
			return 2
		}
		fmt.Println(wd)
		return 0
	case "env":
		fmt.Println(os.Getenv(rest[0]))
		return 0
	case "sleep":
		// Default SIGTERM disposition: dies of it.
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "grandchild":
		// Start a grandchild in our process group that would sleep forever,
		// then either exit (leaving it behind) or wait to be stopped.
		pid, err := startGrandchild(false)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake child:", err)
			return 2
		}
		fmt.Printf("grandchild %d\n", pid)
		if rest[0] == "exit" {
			return 0
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "escape":
		// Start a grandchild that leaves the group (setsid) and keeps our
		// stdout open, then exit.
		pid, err := startGrandchild(true)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake child:", err)
			return 2
		}
		fmt.Printf("grandchild %d\n", pid)
		return 0
	default:
		fmt.Fprintln(os.Stderr, "fake child: unknown mode", mode)
		return 2
	}
}

func startGrandchild(escape bool) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, "sleep")
	if escape {
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}
