package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// stateAsker asks on round 1 with a partial_state of about STATE_BYTES
// bytes — a list of notes on files, as an agent might keep — and on round 2
// only counts its resume file's bytes, so its own work does not grow with
// the state.
const stateAsker = `
set -e
if [ -z "$AGORA_ANSWER" ]; then
  awk -v want="$STATE_BYTES" 'BEGIN {
    printf "{\"notes\":["; n = 0; size = 11
    while (n == 0 || size < want - 140) {
      line = sprintf("{\"file\":\"src/pkg%d/file%d.go\",\"line\":%d,\"note\":\"reads the config, then calls the store; check the error path\"}", n % 50, n, n * 7)
      if (n > 0) { printf ","; size++ }
      printf "%s", line; size += length(line); n++
    }
    printf "],\"last\":%d}", n - 1
  }' > /tmp/state.json
  agora-worker ask "Keep going?" --option yes --option no --state /tmp/state.json
  exit 0
fi
echo "resumed: $(wc -c < "$AGORA_RESUME_FILE") bytes of resume file"
`

// BenchmarkResumePartialState measures, side by side in one run, round 2
// of a task whose round 1 left a large partial_state (about 1 MB) against
// the same task with a tiny one (a few bytes): the same sub-agent, image
// and stack, alternating which goes first. Round 1 and its question are
// untimed; the clock runs from Answer until round 2's dispatch.finished is
// seen on the bus, split by the runner's engine calls and the round's own
// times (queued → started → ended, as the task records them). The table
// gives medians and the large-minus-tiny difference of each row. The
// engine's Create + Start moves by ±150 ms between runs on a busy machine
// and does not depend on the state (the spec and the staged store are
// bind-mounted, nothing is copied), so one row takes it out of each run
// before the median: that is agora's own part.
//
//	go test -run '^$' -bench ResumePartialState -benchtime 10x ./orchestrator
func BenchmarkResumePartialState(b *testing.B) {
	testenv.NeedDocker(b, workerImage, dockerErr)
	ctx := context.Background()
	s := newBenchStack(b)

	sizes := []struct {
		name  string
		bytes int
	}{{"tiny", 0}, {"1 MB", 1_000_000}}
	var iter int
	var stateSize [2]int64
	run := func(which int) resumeSpans {
		iter++
		sub := script("state-asker", fmt.Sprintf("STATE_BYTES=%d\n%s", sizes[which].bytes, stateAsker))
		task := s.submit(wire.SubmitRequest{TaskID: fmt.Sprintf("resume-%d-%d", testutil.RunNumber(), iter), Subagent: sub})
		task = s.waitState(task.ID, wire.StateNeedsInput, wire.StateFailed)
		if task.State != wire.StateNeedsInput {
			b.Fatalf("task %s round 1 ended %s: %+v", task.ID, task.State, task.Outcome)
		}
		q := currentRound(task).Question
		stateSize[which] = int64(len(q.PartialState))
		if q.PartialStateRef != nil {
			stateSize[which] = q.PartialStateRef.Size
		}
		s.waitIdle()
		next := dispatchIDOf(task, 2, 1)
		seen := make(chan schemas.Event, 4)
		stop, err := s.bus.SubscribeEvents(next, func(ev schemas.Event) {
			if ev.Kind == schemas.KindStarted || ev.Kind.Terminal() {
				select {
				case seen <- ev:
				default:
				}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		defer stop()

		began := time.Now()
		if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "yes", By: "bench"}); err != nil {
			b.Fatalf("Answer: %v", err)
		}
		var started, ended time.Time
		for ended.IsZero() {
			select {
			case ev := <-seen:
				if ev.Kind == schemas.KindStarted {
					started = time.Now()
				} else if ev.Kind != schemas.KindFinished {
					b.Fatalf("round 2 of %s: %s %+v", task.ID, ev.Kind, ev.Failure)
				} else {
					ended = time.Now()
				}
			case <-time.After(2 * time.Minute):
				b.Fatalf("round 2 of %s did not end", task.ID)
			}
		}
		m := s.eng.marksOf(next)
		t := s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
		if t.State != wire.StateFinished {
			b.Fatalf("task %s ended %s: %+v", t.ID, t.State, t.Outcome)
		}
		r := t.Rounds[len(t.Rounds)-1]
		s.waitIdle()
		return resumeSpans{
			toCreate:      m.create.Sub(began),
			createStart:   m.started.Sub(m.create),
			toStarted:     started.Sub(m.started),
			startedToEnd:  ended.Sub(started),
			total:         ended.Sub(began),
			queuedStarted: r.StartedAt.Sub(r.QueuedAt),
			startedEnded:  r.EndedAt.Sub(r.StartedAt),
		}
	}

	run(0) // warm-up
	run(1)
	var runs [2][]resumeSpans
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			which := (i + k) % 2
			runs[which] = append(runs[which], run(which))
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")

	rows := []struct {
		name string
		f    func(resumeSpans) time.Duration
	}{
		{"Answer → round 2 dispatch.finished on the bus", func(r resumeSpans) time.Duration { return r.total }},
		{"  Answer → runner calls Create (stage, restore)", func(r resumeSpans) time.Duration { return r.toCreate }},
		{"  Create + Start (the engine's)", func(r resumeSpans) time.Duration { return r.createStart }},
		{"  Start → dispatch.started received", func(r resumeSpans) time.Duration { return r.toStarted }},
		{"  dispatch.started → dispatch.finished received", func(r resumeSpans) time.Duration { return r.startedToEnd }},
		{"the first row without the engine's Create + Start", func(r resumeSpans) time.Duration { return r.total - r.createStart }},
		{"round's queued_at → started_at", func(r resumeSpans) time.Duration { return r.queuedStarted }},
		{"round's started_at → ended_at", func(r resumeSpans) time.Duration { return r.startedEnded }},
	}
	var sb strings.Builder
	// Nine lines: the testing package cuts a benchmark's log at ten.
	fmt.Fprintf(&sb, "%-50s %8s %8s %8s\n", fmt.Sprintf("round 2, state %d B vs %d B, n=%d; p50 ms", stateSize[1], stateSize[0], b.N), sizes[0].name, sizes[1].name, "diff")
	for i, row := range rows {
		var p50 [2]time.Duration
		for k := range 2 {
			var ds []time.Duration
			for _, r := range runs[k] {
				ds = append(ds, row.f(r))
			}
			p50[k] = percentile(ds, 50)
		}
		fmt.Fprintf(&sb, "%-50s %8.1f %8.1f %+8.1f\n", row.name, ms(p50[0]), ms(p50[1]), ms(p50[1]-p50[0]))
		switch i {
		case 0:
			b.ReportMetric(ms(p50[0]), "tiny-ms")
			b.ReportMetric(ms(p50[1]), "large-ms")
			b.ReportMetric(ms(p50[1]-p50[0]), "large-minus-tiny-ms")
		case 5:
			b.ReportMetric(ms(p50[1]-p50[0]), "large-minus-tiny-without-engine-ms")
		}
	}
	if b.N > 1 {
		b.Log(strings.TrimSuffix(sb.String(), "\n"))
	}
}

type resumeSpans struct {
	toCreate, createStart, toStarted, startedToEnd, total time.Duration
	queuedStarted, startedEnded                           time.Duration
}
