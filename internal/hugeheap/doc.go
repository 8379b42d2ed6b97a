// Package hugeheap asks Linux to back the Go heap with transparent huge
// pages. agora-worker calls Advise first thing, by importing package
// hugeheap/atstart for its side effect: a worker is a
// short-lived process whose start touches a few MB of fresh heap, and on a
// VM whose page faults are trapped by the hypervisor (Firecracker, which
// Fargate also runs on) those faults, not the work, set most of its start-up
// time (docs/benchmarks.md, issue 21). The Go runtime advises huge pages only
// for its own metadata, so where the host's THP setting is "madvise" (the
// usual default) the heap gets 4 KiB pages, one fault each.
package hugeheap
