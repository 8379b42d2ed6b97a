// Package apiload measures agora serve's HTTP API under a real load
// generator (vegeta, as a library) at fixed rates, with event streams open
// throughout: `make bench-api` (docs/capacity.md, "The API under load").
// TestAPILoadHarness runs it tiny in `make test`, so it keeps working.
package apiload

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testenv"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RemovingBinaries(m).Run())
}

var (
	flagRates   = flag.String("apiload-rates", "100,200,500,1000", "the fixed `RATES` (requests/s) each endpoint is attacked at")
	flagEach    = flag.Duration("apiload-each", 5*time.Second, "attack each endpoint at each rate for `DURATION`")
	flagStreams = flag.Int("apiload-streams", 200, "open `N` event streams (GET /v1/events) for the whole run")
	flagMax     = flag.Int("apiload-max-rate", 6000, "step the mix's rate up until errors begin or it passes `RATE`")
	flagTimeout = flag.Duration("apiload-timeout", 5*time.Second, "a request slower than `DURATION` is an error")
	flagProfile = flag.String("apiload-cpuprofile", "", "keep a CPU profile of serve per attack in `DIR` (serve built with -tags agorapprof)")
	flagOnly    = flag.String("apiload-endpoints", "submit,get,list,answer,mix", "the `ENDPOINTS` to attack, in order")
)

// BenchmarkAPILoad is `make bench-api`: serve in its own process, 200 event
// streams open, submit, get, list, answer and a mix of them at 100, 200,
// 500 and 1,000 requests/s for 5 s each, then the mix stepped up until
// errors begin; one table.
func BenchmarkAPILoad(b *testing.B) {
	var rates []int
	for f := range strings.SplitSeq(*flagRates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("-apiload-rates %q: want positive integers", *flagRates)
		}
		rates = append(rates, n)
	}
	p := plan{endpoints: strings.Split(*flagOnly, ","), rates: rates, each: *flagEach, stepUp: true, maxRate: *flagMax,
		streams: *flagStreams, timeout: *flagTimeout, profileDir: *flagProfile,
		// On stdout: the testing package cuts a benchmark's log to ten
		// lines without -v.
		progress: func(line string) { fmt.Println(line) }}
	var rep report
	for b.Loop() {
		rep = run(b, p)
	}
	b.ReportMetric(0, "ns/op")
	fmt.Print("\n" + rep.table())
}

// TestAPILoadHarness runs the harness tiny — a second per endpoint at a
// low rate, a few streams, one step up — so it keeps working. It asserts
// what the harness must get right, nothing about latency.
func TestAPILoadHarness(t *testing.T) {
	p := plan{endpoints: []string{epSubmit, epGet, epList, epAnswer, epMix}, rates: []int{5}, each: time.Second,
		stepUp: true, maxRate: 8, streams: 3, timeout: 30 * time.Second, progress: func(line string) { t.Log(line) }}
	rep := run(t, p)
	t.Log("\n" + rep.table())
	if got, want := len(rep.rows), len(p.endpoints)+1; got != want {
		t.Fatalf("rows = %d, want %d (each endpoint and one step up)", got, want)
	}
	for _, r := range rep.rows {
		if r.requests == 0 || r.errors != 0 {
			t.Errorf("%s at %d/s: %d requests, %d errors (%s), want some and none failed", r.endpoint, r.rate, r.requests, r.errors, r.firstError)
		}
	}
	if rep.streamsOpen != p.streams || rep.streamEvents == 0 {
		t.Errorf("streams open at the end = %d of %d, events read %d: want all open and events read", rep.streamsOpen, p.streams, rep.streamEvents)
	}
}
