// Package units turns the numbers people give — seconds, MiB, KiB, CPUs —
// into what the machinery counts — time.Duration, bytes, nano-CPUs — and
// says when a number does not fit instead of letting it wrap around (a
// memory_mb of 2^44 shifted by 20 bits is 0 bytes: "no limit").
//
// What it may import: docs/architecture.md.
package units

import (
	"math"
	"strconv"
	"time"
)

// Seconds is n seconds as a Duration; ok is false when it does not fit.
func Seconds(n int64) (d time.Duration, ok bool) {
	v, ok := scale(n, int64(time.Second))
	return time.Duration(v), ok
}

// Days is n days as a Duration; ok is false when it does not fit.
func Days(n int64) (d time.Duration, ok bool) {
	v, ok := scale(n, int64(24*time.Hour))
	return time.Duration(v), ok
}

// SecondsOr is n seconds as a Duration, or max when n seconds do not fit
// or are more than max.
func SecondsOr(n int64, max time.Duration) time.Duration {
	d, ok := Seconds(n)
	if !ok || d > max {
		return max
	}
	return d
}

// MiB is n mebibytes in bytes; ok is false when it does not fit an int64.
func MiB(n int64) (bytes int64, ok bool) { return scale(n, 1<<20) }

// KiB is n kibibytes in bytes; ok is false when it does not fit an int64.
func KiB(n int64) (bytes int64, ok bool) { return scale(n, 1<<10) }

// NanoCPUs is cpus in units of 1e-9 CPUs (Docker's NanoCPUs); ok is false
// for NaN, an infinity, or a number that does not fit an int64.
func NanoCPUs(cpus float64) (nano int64, ok bool) {
	v := math.Round(cpus * 1e9)
	// 2^63 is exactly representable; every float64 below it fits.
	if math.IsNaN(v) || v >= math.MaxInt64 || v < math.MinInt64 {
		return 0, false
	}
	return int64(v), true
}

// scale is n*unit, ok false on overflow.
func scale(n, unit int64) (int64, bool) {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return 0, false
	}
	return n * unit, true
}

// Bytes is n in the largest binary unit that keeps it readable, for
// messages: "1.5 GiB", "200.0 KiB", "12 bytes".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
