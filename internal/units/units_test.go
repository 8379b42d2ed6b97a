package units

import (
	"math"
	"testing"
	"time"
)

func TestConversions(t *testing.T) {
	t.Parallel()
	type result struct {
		v  int64
		ok bool
	}
	r := func(v int64, ok bool) result { return result{v, ok} }
	dur := func(d time.Duration, ok bool) result { return result{int64(d), ok} }
	tests := []struct {
		call      string
		got, want result
	}{
		{"Seconds(3600)", dur(Seconds(3600)), r(int64(time.Hour), true)},
		{"Seconds(9223372036)", dur(Seconds(9223372036)), r(9223372036*int64(time.Second), true)},
		{"Seconds(9223372037)", dur(Seconds(9223372037)), r(0, false)},
		{"Seconds(MaxInt64)", dur(Seconds(math.MaxInt64)), r(0, false)},
		{"Seconds(MinInt64)", dur(Seconds(math.MinInt64)), r(0, false)},
		{"Days(30)", dur(Days(30)), r(int64(30*24*time.Hour), true)},
		{"Days(2^40)", dur(Days(1 << 40)), r(0, false)},
		{"MiB(16384)", r(MiB(16384)), r(16<<30, true)},
		{"MiB(2^44)", r(MiB(17592186044416)), r(0, false)}, // << 20 wraps to 0
		{"MiB(2^43-1)", r(MiB(8796093022207)), r(8796093022207<<20, true)},
		{"KiB(256)", r(KiB(256)), r(256<<10, true)},
		{"KiB(MaxInt64/1000)", r(KiB(math.MaxInt64 / 1000)), r(0, false)},
		{"NanoCPUs(1.5)", r(NanoCPUs(1.5)), r(1_500_000_000, true)},
		{"NanoCPUs(0.01)", r(NanoCPUs(0.01)), r(10_000_000, true)},
		{"NanoCPUs(1e10)", r(NanoCPUs(1e10)), r(0, false)},
		{"NanoCPUs(+Inf)", r(NanoCPUs(math.Inf(1))), r(0, false)},
		{"NanoCPUs(NaN)", r(NanoCPUs(math.NaN())), r(0, false)},
	}
	for _, tt := range tests {
		if tt.got.ok != tt.want.ok || (tt.want.ok && tt.got.v != tt.want.v) {
			t.Errorf("%s = %d, %v; want %d, %v", tt.call, tt.got.v, tt.got.ok, tt.want.v, tt.want.ok)
		}
	}
	if got := SecondsOr(math.MaxInt64, time.Hour); got != time.Hour {
		t.Errorf("SecondsOr(MaxInt64, 1h) = %s, want 1h", got)
	}
	if got := SecondsOr(60, time.Hour); got != time.Minute {
		t.Errorf("SecondsOr(60, 1h) = %s, want 1m", got)
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1 << 10: "1.0 KiB", 3 << 19: "1.5 MiB", 5 << 30: "5.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
