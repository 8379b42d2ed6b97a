package schemas

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestEventLineMAC(t *testing.T) {
	key := bytes.Repeat([]byte{7}, EventKeyBytes)
	data := []byte(`{"kind":"dispatch.finished","dispatch_id":"d-1","time":"2026-11-23T10:00:00Z","exit_code":0,"duration_ms":3}`)
	line := SignEventLine(key, data)
	if !json.Valid(line) {
		t.Fatalf("signed line is not JSON: %s", line)
	}
	if err := Validate(SchemaEvent, line); err != nil {
		t.Errorf("the event schema refuses the mac field: %v", err)
	}
	got, ok := VerifyEventLine(key, append(line, '\n'))
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("VerifyEventLine = %s, %v; want the unsigned line", got, ok)
	}
	forged := bytes.Replace(line, []byte("finished"), []byte("needs_input"), 1)
	other := SignEventLine(bytes.Repeat([]byte{8}, EventKeyBytes), data)
	for name, l := range map[string][]byte{
		"unsigned":      data,
		"altered":       forged,
		"another key":   other,
		"truncated mac": line[:len(line)-4],
		"empty":         nil,
		"not hex":       bytes.Replace(line, line[len(line)-10:len(line)-2], []byte("zzzzzzzz"), 1),
	} {
		if _, ok := VerifyEventLine(key, l); ok {
			t.Errorf("%s line verified", name)
		}
	}
}

func TestLogLineMAC(t *testing.T) {
	key := bytes.Repeat([]byte{7}, EventKeyBytes)
	data := []byte(`time=2026-11-23T10:00:00Z level=INFO msg="dispatch ended" kind=dispatch.finished`)
	line := SignLogLine(key, data)
	got, ok := VerifyLogLine(key, append(line, '\n'))
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("VerifyLogLine = %s, %v; want the unsigned line", got, ok)
	}
	event := []byte(`{"kind":"dispatch.finished","dispatch_id":"d-1"}`)
	for name, l := range map[string][]byte{
		"unsigned":      data,
		"altered":       bytes.Replace(line, []byte("INFO"), []byte("WARN"), 1),
		"another key":   SignLogLine(bytes.Repeat([]byte{8}, EventKeyBytes), data),
		"truncated mac": line[:len(line)-4],
		"empty":         nil,
		// An event line's MAC is not a log line's: the labels differ.
		"a signed event": SignEventLine(key, event),
	} {
		if _, ok := VerifyLogLine(key, l); ok {
			t.Errorf("%s line verified as a log line", name)
		}
	}
	if _, ok := VerifyEventLine(key, line); ok {
		t.Errorf("a signed log line verified as an event line")
	}
}
