package roleflags

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// --memory-limit: a soft limit on the Go runtime's memory (the heap, most
// of serve's RSS at scale), which roles.Start sets. Go collects garbage
// when the heap has doubled since the last collection: a serve holding
// 360 MB of live index and NATS state (a million tasks) grows towards 720 MB and more
// before collecting. Near the limit it collects earlier instead
// (docs/capacity.md, "A million stored tasks").
const (
	memoryLimitAuto = "auto"
	memoryLimitOff  = "off"
	// memoryLimitShare is auto's share of the cgroup's limit; the rest is
	// for what the cgroup charges besides the Go runtime's memory: the
	// binary's pages, the page cache of the embedded NATS store.
	memoryLimitShare = 0.9
)

// memoryLimit resolves --memory-limit to bytes; 0 leaves the Go runtime's
// own (GOMEMLIMIT, else none). cgroupLimit is this process's cgroup memory
// limit, if any.
func (f *Flags) memoryLimit(environ []string, cgroupLimit func() (int64, bool)) (int64, error) {
	switch v := strings.TrimSpace(f.memLimit); strings.ToLower(v) {
	case memoryLimitOff, "0":
		return 0, nil
	case memoryLimitAuto, "":
		if getenv(environ, "GOMEMLIMIT") != "" {
			return 0, nil // the runtime read it
		}
		if n, ok := cgroupLimit(); ok {
			return int64(float64(n) * memoryLimitShare), nil
		}
		return 0, nil
	default:
		n, err := parseBytes(v)
		if err != nil {
			return 0, fmt.Errorf("--memory-limit %q: %v", v, err)
		}
		return n, nil
	}
}

// parseBytes reads a size: a number of bytes, or with a K, M, G or T
// suffix (powers of 1024; KiB, MB and the like read the same).
func parseBytes(s string) (int64, error) {
	num := strings.ToUpper(s)
	num = strings.TrimSuffix(strings.TrimSuffix(num, "B"), "I")
	mult := int64(1)
	if n := len(num); n > 0 {
		if i := strings.IndexByte("KMGT", num[n-1]); i >= 0 {
			mult, num = int64(1)<<(10*(i+1)), num[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("want auto, off, or a size: bytes, or with K, M, G or T (e.g. 900MiB, 2GiB)")
	}
	return v * mult, nil
}

// cgroupMemoryLimit returns the memory limit of this process's cgroup
// under root ("/" but in tests), the lowest of its own and its parents'
// (cgroup v2, else v1); false when there is none.
func cgroupMemoryLimit(root string) func() (int64, bool) {
	return func() (int64, bool) {
		data, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
		if err != nil {
			return 0, false
		}
		var v2, v1 string
		found2, found1 := false, false
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				v2, found2 = parts[2], true
			case strings.Contains(","+parts[1]+",", ",memory,"):
				v1, found1 = parts[2], true
			}
		}
		// A hybrid host lists both; the v2 hierarchy may then have no
		// memory controller: try v2, then v1.
		if found2 {
			if n, ok := lowestLimit(filepath.Join(root, "sys/fs/cgroup"), v2, "memory.max"); ok {
				return n, true
			}
		}
		if found1 {
			return lowestLimit(filepath.Join(root, "sys/fs/cgroup/memory"), v1, "memory.limit_in_bytes")
		}
		return 0, false
	}
}

// lowestLimit is the lowest limit in file of the cgroup dir/group and of
// its parents that can be read (in a container, dir is often the
// container's own cgroup, whatever group says).
func lowestLimit(dir, group, file string) (int64, bool) {
	var lowest int64
	found := false
	seen := map[string]bool{}
	for _, g := range []string{path.Clean("/" + group), "/"} {
		for {
			p := filepath.Join(dir, g, file)
			if !seen[p] {
				seen[p] = true
				if data, err := os.ReadFile(p); err == nil {
					// "max" (v2), or a huge number (v1), is no limit.
					if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 && n < 1<<62 && (!found || n < lowest) {
						lowest, found = n, true
					}
				}
			}
			if g == "/" {
				break
			}
			g = path.Dir(g)
		}
	}
	return lowest, found
}
