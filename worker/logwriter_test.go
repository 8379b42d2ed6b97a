package worker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/agoradev/agora/schemas"
)

// TestLogWriterSigns: before the key, lines go out as they are; after,
// each line a logger writes verifies as the worker's (and not as an
// event), and a partial line is passed on unsigned.
func TestLogWriterSigns(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	lw := NewLogWriter(&out)
	log := slog.New(slog.NewTextHandler(lw, nil))
	log.Info("before the key")
	key := bytes.Repeat([]byte{3}, schemas.EventKeyBytes)
	lw.SetKey(key)
	log.Info("dispatch ended", "kind", "dispatch.finished")
	if _, err := lw.Write([]byte("one\ntwo\npart")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 5 {
		t.Fatalf("wrote %d lines, want 5: %q", len(lines), out.String())
	}
	if _, ok := schemas.VerifyLogLine(key, []byte(lines[0])); ok || !strings.Contains(lines[0], "before the key") {
		t.Errorf("line before the key = %q, want it unsigned", lines[0])
	}
	for _, l := range lines[1:4] {
		data, ok := schemas.VerifyLogLine(key, []byte(l))
		if !ok {
			t.Errorf("line %q does not verify", l)
		}
		if _, ok := schemas.VerifyEventLine(key, []byte(l)); ok || strings.Contains(string(data), " mac=") {
			t.Errorf("line %q: verified as an event, or its mac is kept", l)
		}
	}
	if lines[4] != "part" {
		t.Errorf("partial line = %q, want it as written", lines[4])
	}
}
