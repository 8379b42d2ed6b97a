// Package fargate holds AWS Fargate's task sizes: the one table of the
// CPU and memory pairs Fargate offers, read by the ECS engine (which sizes
// a task), the runner (which refuses a request no size holds when it
// claims it), the orchestrator (which refuses it at submit when its
// runners are on Fargate) and the ECS fake (which refuses a request ECS
// would). It imports nothing from this module.
package fargate

import (
	"fmt"
	"strconv"
)

// sizes are Fargate's task sizes, as RegisterTaskDefinitionRequest.cpu's
// documentation in ECS's API model states them: "256 (.25 vCPU) - Available
// memory values: 512 (0.5 GB), 1024 (1 GB), 2048 (2 GB); 512 (.5 vCPU) -
// 1024 (1 GB), 2048 (2 GB), 3072 (3 GB), 4096 (4 GB); 1024 (1 vCPU) - 2048
// (2 GB) to 8192 (8 GB) in 1024 increments; 2048 (2 vCPU) - 4096 (4 GB) to
// 16384 (16 GB) in increments of 1024 (1 GB); 4096 (4 vCPU) - 8192 (8 GB)
// to 30720 (30 GB) in increments of 1024 (1 GB); 8192 (8 vCPU) - 16 GB and
// 60 GB in 4 GB increments; 16384 (16vCPU) - 32GB and 120 GB in 8 GB
// increments". CPU in units (1024 a vCPU), memory in MiB from, to, step;
// 0.25 vCPU has no 1536 (skip).
var sizes = []struct{ cpu, from, to, step, skip int64 }{
	{256, 512, 2048, 512, 1536},
	{512, 1024, 4096, 1024, 0},
	{1024, 2048, 8192, 1024, 0},
	{2048, 4096, 16384, 1024, 0},
	{4096, 8192, 30720, 1024, 0},
	{8192, 16384, 61440, 4096, 0},
	{16384, 32768, 122880, 8192, 0},
}

// Size is one Fargate task size.
type Size struct {
	// CPU is in units, 1024 a vCPU.
	CPU int64
	// MemoryMiB is the task's memory.
	MemoryMiB int64
}

func (s Size) String() string { return vcpus(s.CPU) + " with " + gib(s.MemoryMiB) }

// Valid reports whether cpu units and memMiB are a task size Fargate
// offers.
func Valid(cpu, memMiB int64) bool {
	for _, s := range sizes {
		if s.cpu == cpu {
			return memMiB >= s.from && memMiB <= s.to && (memMiB-s.from)%s.step == 0 && memMiB != s.skip
		}
	}
	return false
}

// Fit is the smallest Fargate task size with at least cpu units and memMiB
// of memory (zero: no minimum). When no size holds them, the error names
// the nearest size and the resources to ask for it with.
func Fit(cpu, memMiB int64) (Size, error) {
	for _, s := range sizes {
		if s.cpu < cpu || s.to < memMiB {
			continue
		}
		m := s.from
		for m < memMiB || m == s.skip {
			m += s.step
		}
		return Size{s.cpu, m}, nil
	}
	near := nearest(cpu, memMiB)
	asked := vcpus(cpu) + " and " + gib(memMiB)
	if memMiB == 0 {
		asked = vcpus(cpu)
	}
	return Size{}, fmt.Errorf("no Fargate task size has %s; the nearest is %s (cpu %d, memory %d): ask for at most that (resources.cpus %s, resources.memory_mb %d)",
		asked, near, near.CPU, near.MemoryMiB, strconv.FormatFloat(float64(near.CPU)/1024, 'f', -1, 64), near.MemoryMiB)
}

// FitResources is Fit for a container's limits as the engines count them:
// nano-CPUs (rounded up to units) and bytes (rounded up to MiB).
func FitResources(nanoCPUs, memoryBytes int64) (Size, error) {
	return Fit(CPUUnits(nanoCPUs), MiB(memoryBytes))
}

// CPUUnits is nano-CPUs in ECS's CPU units (1024 a CPU), rounded up.
func CPUUnits(nanoCPUs int64) int64 { return (nanoCPUs*1024 + 1e9 - 1) / 1e9 }

// MiB is bytes in MiB, rounded up.
func MiB(b int64) int64 { return (b + 1<<20 - 1) >> 20 }

// nearest is the size nearest to a request no size holds: the smallest
// that holds the request cut down to Fargate's largest CPU and memory.
func nearest(cpu, memMiB int64) Size {
	top := sizes[len(sizes)-1]
	s, err := Fit(min(cpu, top.cpu), min(memMiB, top.to))
	if err != nil {
		return Size{top.cpu, top.to}
	}
	return s
}

func vcpus(units int64) string {
	return strconv.FormatFloat(float64(units)/1024, 'f', -1, 64) + " vCPU"
}

func gib(mib int64) string {
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10) + " GiB"
	}
	return strconv.FormatInt(mib, 10) + " MiB"
}
