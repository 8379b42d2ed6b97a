package fargate

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cpu, mem int64
		want     bool
	}{
		{256, 512, true}, {256, 1024, true}, {256, 2048, true},
		{256, 1536, false}, {256, 4096, false}, {256, 256, false},
		{300, 1024, false}, {0, 512, false},
		{512, 1024, true}, {512, 4096, true}, {512, 5120, false}, {512, 1536, false},
		{1024, 2048, true}, {1024, 8192, true}, {1024, 9216, false},
		{2048, 16384, true}, {4096, 30720, true}, {4096, 31744, false},
		{8192, 16384, true}, {8192, 20480, true}, {8192, 17408, false}, {8192, 61440, true},
		{16384, 32768, true}, {16384, 40960, true}, {16384, 36864, false}, {16384, 122880, true}, {16384, 131072, false},
		{32768, 65536, false},
	} {
		if got := Valid(tc.cpu, tc.mem); got != tc.want {
			t.Errorf("Valid(%d, %d) = %v, want %v", tc.cpu, tc.mem, got, tc.want)
		}
	}
}

func TestFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cpu, mem, wantCPU, wantMem int64 }{
		{0, 0, 256, 512},
		{0, 32, 256, 512},
		{256, 600, 256, 1024},
		{256, 1100, 256, 2048},
		{300, 0, 512, 1024},
		{1024, 0, 1024, 2048},
		{1024, 9000, 2048, 9216},
		{1536, 3000, 2048, 4096},
		{4096, 30720, 4096, 30720},
		{8192, 17000, 8192, 20480},
		{16384, 122880, 16384, 122880},
	} {
		s, err := Fit(tc.cpu, tc.mem)
		if err != nil || s != (Size{tc.wantCPU, tc.wantMem}) {
			t.Errorf("Fit(%d, %d) = %v, %v; want %d, %d", tc.cpu, tc.mem, s, err, tc.wantCPU, tc.wantMem)
		}
	}
	for _, tc := range []struct {
		cpu, mem int64
		want     string
	}{
		{32768, 0, "no Fargate task size has 32 vCPU; the nearest is 16 vCPU with 32 GiB (cpu 16384, memory 32768): ask for at most that (resources.cpus 16, resources.memory_mb 32768)"},
		{16384, 200 << 10, "the nearest is 16 vCPU with 120 GiB (cpu 16384, memory 122880)"},
		{4096, 130 << 10, "no Fargate task size has 4 vCPU and 130 GiB; the nearest is 16 vCPU with 120 GiB (cpu 16384, memory 122880)"},
		{20480, 8 << 10, "no Fargate task size has 20 vCPU and 8 GiB; the nearest is 16 vCPU with 32 GiB (cpu 16384, memory 32768)"},
	} {
		if _, err := Fit(tc.cpu, tc.mem); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fit(%d, %d) = %v, want an error saying %q", tc.cpu, tc.mem, err, tc.want)
		}
	}
}

// TestFitIsValidAndSmallest: over a grid of requests, what Fit returns is
// a size Fargate offers, holds the request, and no offered size holds it
// with less CPU, or as much CPU and less memory; the nearest size named
// for a request none holds is offered too.
func TestFitIsValidAndSmallest(t *testing.T) {
	t.Parallel()
	var offered []Size
	for cpu := int64(0); cpu <= 20000; cpu += 128 {
		for mem := int64(0); mem <= 140000; mem += 512 {
			if Valid(cpu, mem) {
				offered = append(offered, Size{cpu, mem})
			}
		}
	}
	if len(offered) != 3+4+7+13+23+12+12 {
		t.Fatalf("%d sizes offered, want Fargate's 74", len(offered))
	}
	for cpu := int64(0); cpu <= 20000; cpu += 200 {
		for mem := int64(0); mem <= 140000; mem += 700 {
			s, err := Fit(cpu, mem)
			var best *Size
			for i, o := range offered {
				if o.CPU >= cpu && o.MemoryMiB >= mem && (best == nil || o.CPU < best.CPU || o.CPU == best.CPU && o.MemoryMiB < best.MemoryMiB) {
					best = &offered[i]
				}
			}
			switch {
			case best == nil && err == nil:
				t.Fatalf("Fit(%d, %d) = %v; no size holds it", cpu, mem, s)
			case best == nil:
				n := nearest(cpu, mem)
				if !Valid(n.CPU, n.MemoryMiB) {
					t.Fatalf("Fit(%d, %d): nearest %v is not offered", cpu, mem, n)
				}
			case err != nil || s != *best:
				t.Fatalf("Fit(%d, %d) = %v, %v; want %v", cpu, mem, s, err, *best)
			}
		}
	}
}

func TestFitResources(t *testing.T) {
	t.Parallel()
	// 0.3 CPUs is 307.2 units: 512; 600 MB + 1 byte rounds up to 601 MiB.
	s, err := FitResources(300_000_000, 600<<20+1)
	if err != nil || s != (Size{512, 1024}) {
		t.Errorf("FitResources(0.3 CPUs, 600 MiB + 1) = %v, %v; want 512, 1024", s, err)
	}
}
