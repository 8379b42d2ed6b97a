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
