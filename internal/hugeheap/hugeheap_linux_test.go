//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// freshProcessEnv marks the test binary run by
// TestAdviseBacksTheHeapWithHugePages: Advise changes the process for good,
// so each check runs in a process of its own, whatever -count says.
const freshProcessEnv = "AGORA_HUGEHEAP_TEST_CHILD"

// TestAdviseBacksTheHeapWithHugePages reads the kernel's own account of the
// heap's mapping (/proc/self/smaps): after Advise the mapping that holds a
// fresh heap object may take huge pages, and the huge page the heap was
// filling is one.
func TestAdviseBacksTheHeapWithHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Skipf("no transparent huge pages here: %v", err)
	}
	if !strings.Contains(string(mode), "[madvise]") {
		// "always" would pass without Advise; "never" refuses it.
		t.Skipf("THP mode is %q; the test needs [madvise]", strings.TrimSpace(string(mode)))
	}
	if os.Getenv(freshProcessEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdviseBacksTheHeapWithHugePages$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshProcessEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the check in a fresh process failed: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("the check in a fresh process did not pass:\n%s", out)
		}
		return
	}
	probe := make([]byte, syscall.Getpagesize())
	at := uintptr(unsafe.Pointer(&probe[0]))
	before := smapsOf(t, at)
	if before["THPeligible"] != 0 {
		t.Fatalf("the heap's mapping is eligible for huge pages before Advise (%v): the test cannot tell", before)
	}

	Advise()

	after := smapsOf(t, at)
	if after["THPeligible"] != 1 {
		t.Errorf("THPeligible = %d after Advise, want 1 (smaps: %v)", after["THPeligible"], after)
	}
	if after["AnonHugePages"] < hugePage>>10 {
		t.Errorf("AnonHugePages = %d kB after Advise, want at least %d: the heap's current huge page was not collapsed (smaps: %v)",
			after["AnonHugePages"], hugePage>>10, after)
	}
}

// smapsOf returns the numeric fields of the /proc/self/smaps entry whose
// range holds addr (kB for sizes).
func smapsOf(t *testing.T, addr uintptr) map[string]int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("reading smaps: %v", err)
	}
	defer f.Close()
	var fields map[string]int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			// A mapping's header: "start-end perms offset dev inode [path]".
			lo, hi, _ := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if fields != nil {
				return fields
			}
			if err1 == nil && err2 == nil && uint64(addr) >= start && uint64(addr) < end {
				fields = map[string]int{}
			}
			continue
		}
		if fields == nil {
			continue
		}
		if len(f) >= 2 {
			if v, err := strconv.Atoi(f[1]); err == nil {
				fields[strings.TrimSuffix(f[0], ":")] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading smaps: %v", err)
	}
	if fields == nil {
		t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	}
	return fields
}
