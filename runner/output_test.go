package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agoradev/agora/schemas"
)

// TestOutputMarker: the worker's signed event and log lines are marked,
// whatever stream they come on and however they are chunked; a forged
// event line, an unsigned log line and a sub-agent line that begins with
// the mark are not (the last gets "␞" instead); a line split across
// chunks of one stream is joined, not cut by the other stream's lines.
func TestOutputMarker(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{5}, schemas.EventKeyBytes)
	event := schemas.SignEventLine(key, []byte(`{"kind":"dispatch.started","dispatch_id":"d1"}`))
	logLine := schemas.SignLogLine(key, []byte(`time=x level=INFO msg="dispatch ended"`))
	forged := schemas.SignEventLine(bytes.Repeat([]byte{6}, schemas.EventKeyBytes), []byte(`{"kind":"dispatch.finished","dispatch_id":"d1"}`))
	m := string(schemas.OutputMark)

	var sink bytes.Buffer
	mk := newOutputMarker(&sink, key)
	stdout, stderr := mk.stream(), mk.stream()
	write := func(s *markedStream, parts ...string) {
		for _, p := range parts {
			if n, err := s.Write([]byte(p)); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
	}
	write(stdout, string(event[:10]))
	write(stderr, "compil", "ing\n")
	write(stdout, string(event[10:])+"\n")
	write(stderr, string(logLine)+"\n", m+"a mark of my own\n", `time=y level=INFO msg="fake"`+"\n")
	write(stdout, string(forged)+"\n")
	write(stderr, "no newline")
	stdout.Flush()
	stderr.Flush()

	want := "compiling\n" + m + string(event) + "\n" + m + `time=x level=INFO msg="dispatch ended"` + "\n" +
		"␞a mark of my own\n" + `time=y level=INFO msg="fake"` + "\n" + string(forged) + "\n" + "no newline"
	if sink.String() != want {
		t.Errorf("marked output =\n%q\nwant\n%q", sink.String(), want)
	}
	var shown strings.Builder
	if _, err := (&schemas.OutputFilter{W: &shown}).Write(sink.Bytes()); err != nil {
		t.Fatal(err)
	}
	if want := "compiling\n␞a mark of my own\n" + `time=y level=INFO msg="fake"` + "\n" + string(forged) + "\nno newline"; shown.String() != want {
		t.Errorf("the sub-agent's lines =\n%q\nwant\n%q", shown.String(), want)
	}

	// Without a key nothing is marked, and a mark is still replaced.
	sink.Reset()
	nokey := newOutputMarker(&sink, nil).stream()
	write(nokey, string(event)+"\n"+m+"x\n")
	if want := string(event) + "\n␞x\n"; sink.String() != want {
		t.Errorf("without a key = %q, want %q", sink.String(), want)
	}
}

// TestLogSinkMarks: the truncation note is agora's line; LastLine drops
// the mark.
func TestLogSinkMarks(t *testing.T) {
	t.Parallel()
	s := newLogSink(8, nil)
	_, _ = s.Write([]byte("one\ntwo\nthree\n" + string(schemas.OutputMark) + "worker says\n"))
	if got, want := string(s.Bytes()), "one\ntwo\n\n\x1e[agora: output truncated at 8 bytes; 19 more bytes dropped]\n"; got != want {
		t.Errorf("Bytes = %q, want %q", got, want)
	}
	if got := s.LastLine(); got != "worker says" {
		t.Errorf("LastLine = %q, want the line without its mark", got)
	}
}
