//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"syscall"
	"unsafe"
)

const (
	// arenaBytes is the size and alignment of a Go heap arena on 64-bit
	// Linux (runtime.heapArenaBytes); a worker's heap fits in its first one.
	arenaBytes = 64 << 20
	hugePage   = 2 << 20

	madvHugepage = 14 // MADV_HUGEPAGE
	madvCollapse = 25 // MADV_COLLAPSE, Linux 6.1
)

// Advise marks the heap arena in use as wanting huge pages, and collapses
// the huge page the heap is filling now: its small pages already touched
// would otherwise keep the rest of that 2 MiB on small pages. Only the
// arena's part the runtime has mapped so far is advised (4 MiB at start);
// what it maps later, with a fresh mmap, is not. It is advice: a kernel
// without THP, or one that refuses, leaves the heap as it was.
func Advise() {
	page := syscall.Getpagesize()
	if page != 4096 {
		return // huge pages are 2 MiB only over 4 KiB pages
	}
	probe := make([]byte, page) // on the heap: its size is not a constant
	at := uintptr(unsafe.Pointer(&probe[0]))
	// Errors are ignored on purpose: ENOMEM for the arena's reserved but
	// unmapped part (the advice still applies to what is mapped), EINVAL
	// where the kernel does not know the advice.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, at&^(arenaBytes-1), arenaBytes, madvHugepage)
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, at&^(hugePage-1), hugePage, madvCollapse)
}
