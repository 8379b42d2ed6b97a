package schemas

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Event lines on a worker's stdout can be authenticated, so that a runner
// can tell the worker's events from lines a sub-agent writes into the
// container's output (every process of a container runs as one user, and
// the container's stdout is reachable through /proc/1/fd/1). The runner
// gives the worker a per-dispatch key (AGORA_EVENT_KEY_FILE, read and
// deleted before anything else runs); the worker ends each event line with
// "mac": the hex HMAC-SHA256, under that key, of the line as it would be
// without the field. The field is the line's last; the event schema allows
// it, and consumers that do not check it ignore it.

// EventKeyBytes is the size of an event key.
const EventKeyBytes = 32

const macField = `,"mac":"`

// SignEventLine returns the JSON object data (no trailing newline) with the
// "mac" field added last.
func SignEventLine(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	sum := hex.EncodeToString(m.Sum(nil))
	out := make([]byte, 0, len(data)+len(macField)+len(sum)+2)
	out = append(out, data[:len(data)-1]...) // drop the closing brace
	out = append(out, macField...)
	out = append(out, sum...)
	return append(out, '"', '}')
}

// VerifyEventLine checks a line SignEventLine made and returns it without
// the "mac" field; ok is false for a line without a valid one.
func VerifyEventLine(key, line []byte) (data []byte, ok bool) {
	line = bytes.TrimRight(line, "\r\n")
	const sumLen = 2 * sha256.Size
	tail := len(macField) + sumLen + 2
	if len(line) < tail+2 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, false
	}
	cut := len(line) - tail
	if !bytes.Equal(line[cut:cut+len(macField)], []byte(macField)) {
		return nil, false
	}
	got, err := hex.DecodeString(string(line[cut+len(macField) : len(line)-2]))
	if err != nil {
		return nil, false
	}
	data = append(append([]byte(nil), line[:cut]...), '}')
	m := hmac.New(sha256.New, key)
	m.Write(data)
	if !hmac.Equal(m.Sum(nil), got) {
		return nil, false
	}
	return data, true
}

// The worker's own log lines are signed too, with the same key, so that
// the runner can tell them from the sub-agent's output on the same
// stderr: SignLogLine appends " mac=<hex>", the HMAC-SHA256 of the line
// (without the field) under a separate label, so that no event line's MAC
// is a log line's or the reverse.

const (
	logMACField = " mac="
	logMACLabel = "agora log line\n"
)

// SignLogLine returns line (no trailing newline) with " mac=<hex>" added.
func SignLogLine(key, line []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(logMACLabel))
	m.Write(line)
	sum := hex.EncodeToString(m.Sum(nil))
	out := make([]byte, 0, len(line)+len(logMACField)+len(sum))
	out = append(out, line...)
	out = append(out, logMACField...)
	return append(out, sum...)
}

// VerifyLogLine checks a line SignLogLine made and returns it without the
// field; ok is false for a line without a valid one.
func VerifyLogLine(key, line []byte) (data []byte, ok bool) {
	line = bytes.TrimRight(line, "\r\n")
	const sumLen = 2 * sha256.Size
	tail := len(logMACField) + sumLen
	if len(line) < tail {
		return nil, false
	}
	cut := len(line) - tail
	if !bytes.Equal(line[cut:cut+len(logMACField)], []byte(logMACField)) {
		return nil, false
	}
	got, err := hex.DecodeString(string(line[cut+len(logMACField):]))
	if err != nil {
		return nil, false
	}
	data = line[:cut]
	m := hmac.New(sha256.New, key)
	m.Write([]byte(logMACLabel))
	m.Write(data)
	if !hmac.Equal(m.Sum(nil), got) {
		return nil, false
	}
	return data, true
}
